// Package relaysvctest runs the relay server — built by relaysvc.New, as the
// binary builds it — in-process on fresh databases and a fresh topic of the
// local stack, and watches its health, for end-to-end and outage tests.
package relaysvctest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/service/relaysvc"
	"github.com/resultsync/resultsync/pkg/service/stores"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

// Env is a set of fresh, migrated shard databases, a control database and a
// unique topic, removed when the test ends.
type Env struct {
	Shards  []*infratest.MySQLDatabase
	Control *infratest.MySQLDatabase
	Topic   string
}

// NewEnv creates n shard databases (IDs shard-0 ... shard-<n-1>).
func NewEnv(t testing.TB, n int) *Env {
	t.Helper()
	e := &Env{Control: infratest.NewMySQLDatabase(t, schema.Control), Topic: infratest.Topic(t, "relaysvc")}
	for range n {
		e.Shards = append(e.Shards, infratest.NewMySQLDatabase(t, schema.Shard))
	}
	return e
}

// ShardID names shard i.
func ShardID(i int) string { return fmt.Sprintf("shard-%d", i) }

// Config returns a relay configuration over the environment, with quick
// timeouts for tests: probe every probe, publish timeout 2s, lease 6s,
// retries from 100ms up to 1s, nothing parked for a long while, shutdown
// grace 3s, gRPC on a loopback port and no HTTP listener. addr, when
// non-nil, gives the address (host:port) shard i is reached through, e.g. a
// proxy of the test.
func (e *Env) Config(t testing.TB, probe time.Duration, addr func(i int) string) relaysvc.Config {
	t.Helper()
	var entries []string
	for i, d := range e.Shards {
		dsn := d.DSN
		if addr != nil {
			mc, err := mysql.ParseDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			mc.Addr = addr(i)
			dsn = mc.FormatDSN()
		}
		entries = append(entries, ShardID(i)+"="+dsn)
	}
	rc := relay.DefaultConfig()
	rc.BatchSize, rc.Lease, rc.PublishTimeout, rc.CompletionTimeout = 200, 6*time.Second, 2*time.Second, 2*time.Second
	rc.MaxAttempts = 1000
	rc.Backoff = outbox.Backoff{Base: 100 * time.Millisecond, Max: time.Second}
	return relaysvc.Config{
		Server: server.Config{GRPCAddr: "127.0.0.1:0", ShutdownGrace: 3 * time.Second, LogLevel: "info",
			RPCTimeout: 30 * time.Second, Auth: auth.Local(auth.DevTokens)},
		Stores:    stores.Settings{Shards: strings.Join(entries, ","), ControlDSN: e.Control.DSN},
		PulsarURL: infratest.PulsarURL(), Topic: e.Topic, PulsarOperationTimeout: 5 * time.Second,
		Relay: rc, Retention: time.Hour, PurgeInterval: time.Minute, PurgeBatch: 1000, StatsInterval: time.Second,
		ProbeInterval: probe, MaxConnsPerShard: 8,
	}
}

// Relay is a relay server running for the length of a test: Stop, Done,
// Err, Health and WaitHealth come from servertest.Running.
type Relay struct {
	*servertest.Running
	Svc *relaysvc.Service
}

// Start builds the server with relaysvc.New and runs it until Stop or the
// end of the test.
func Start(t testing.TB, cfg relaysvc.Config) *Relay {
	t.Helper()
	svc, err := relaysvc.New(context.Background(), servertest.Logger(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &Relay{Running: servertest.Start(t, svc), Svc: svc}
}
