// Package relaysvctest runs the relay server — built by relaysvc.New, as the
// binary builds it — in-process on fresh databases and a fresh topic of the
// local stack, and watches its health, for end-to-end and outage tests.
package relaysvctest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/resultsync/resultsync/pkg/auth"
	"github.com/resultsync/resultsync/pkg/infratest"
	"github.com/resultsync/resultsync/pkg/outbox"
	"github.com/resultsync/resultsync/pkg/relay"
	"github.com/resultsync/resultsync/pkg/schema"
	"github.com/resultsync/resultsync/pkg/server"
	"github.com/resultsync/resultsync/pkg/service/relaysvc"
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
			RPCTimeout: 30 * time.Second, AuthTokens: auth.DevTokens},
		Shards: strings.Join(entries, ","), ControlDSN: e.Control.DSN,
		PulsarURL: infratest.PulsarURL(), Topic: e.Topic, PulsarOperationTimeout: 5 * time.Second,
		Relay: rc, Retention: time.Hour, PurgeInterval: time.Minute, PurgeBatch: 1000, StatsInterval: time.Second,
		ProbeInterval: probe, MaxConnsPerShard: 8,
	}
}

// Relay is a relay server running for the length of a test.
type Relay struct {
	Svc    *relaysvc.Service
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error         // Run's result, once done
	health healthpb.HealthClient
}

// Logger writes the relay's log to the test's stderr at warn and above
// (RS_TEST_LOG=info or debug for more).
func Logger() *slog.Logger {
	lv := slog.LevelWarn
	switch os.Getenv("RS_TEST_LOG") {
	case "info":
		lv = slog.LevelInfo
	case "debug":
		lv = slog.LevelDebug
	case "off":
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
}

// Start builds the server with relaysvc.New and runs it until Stop or the
// end of the test.
func Start(t testing.TB, cfg relaysvc.Config) *Relay {
	t.Helper()
	svc, err := relaysvc.New(context.Background(), Logger(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Relay{Svc: svc, cancel: cancel, done: make(chan struct{})}
	go func() {
		r.err = svc.Run(ctx)
		close(r.done)
	}()
	conn, err := grpc.NewClient(svc.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	r.health = healthpb.NewHealthClient(conn)
	t.Cleanup(func() {
		conn.Close()
		cancel()
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			t.Error("the relay did not stop within 30s")
		}
	})
	return r
}

// Stop ends Run and returns how long Run took to return, and its result.
func (r *Relay) Stop(t testing.TB) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	r.cancel()
	select {
	case <-r.done:
		return time.Since(start), r.err
	case <-time.After(30 * time.Second):
		t.Fatal("the relay did not stop within 30s")
		return 0, nil
	}
}

// Done is closed when Run returned, by itself or after Stop.
func (r *Relay) Done() <-chan struct{} { return r.done }

// Err is Run's result, once Done is closed.
func (r *Relay) Err() error {
	<-r.done
	return r.err
}

// Health returns the status of a health service name ("" is the server,
// server.DependencyHealthName(x) a dependency); UNKNOWN when the call fails.
func (r *Relay) Health(service string) healthpb.HealthCheckResponse_ServingStatus {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := r.health.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return healthpb.HealthCheckResponse_UNKNOWN
	}
	return resp.GetStatus()
}

// WaitHealth polls every 20ms until service's status is want and returns
// how long that took, or fails the test after timeout.
func (r *Relay) WaitHealth(t testing.TB, service string, want healthpb.HealthCheckResponse_ServingStatus, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		got := r.Health(service)
		if got == want {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("health of %q is %v after %s, want %v", service, got, timeout, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
