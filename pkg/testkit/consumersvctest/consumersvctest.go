// Package consumersvctest runs the consumer server — built by
// consumersvc.New, as the binary builds it — in-process against the local
// stack, and watches its health, for end-to-end and outage tests.
package consumersvctest

import (
	"context"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/service/consumersvc"
	"github.com/resultsync/resultsync/pkg/service/stores"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

// Config returns a consumer configuration for topic and the ClickHouse
// database chDatabase on the local stack, with quick timeouts for tests:
// probe every probe, batches of up to 50ms, insert retries from 50ms up to
// 500ms, subscription attempts bounded by 3s, shutdown grace 3s, gRPC on a
// loopback port and no HTTP listener. Point PulsarURL or CHAddr at a proxy
// of the test to cut either.
func Config(topic, chDatabase string, probe time.Duration) consumersvc.Config {
	cc := consumer.DefaultConfig()
	cc.BatchWait, cc.RetryBase, cc.RetryMax = 50*time.Millisecond, 50*time.Millisecond, 500*time.Millisecond
	cc.EpochCheck = consumer.DefaultEpochCheck
	return consumersvc.Config{
		Server: server.Config{GRPCAddr: "127.0.0.1:0", ShutdownGrace: 3 * time.Second, LogLevel: "info",
			RPCTimeout: 30 * time.Second, Auth: auth.Local(auth.DevTokens)},
		PulsarURL: infratest.PulsarURL(), Topic: topic, Subscription: "clickhouse-projection", DLQTopic: topic + "-DLQ",
		Stores: stores.Settings{CHAddr: infratest.ClickHouseAddr(), CHDatabase: chDatabase}, Consumer: cc,
		PulsarOperationTimeout: 3 * time.Second, ProbeInterval: probe,
	}
}

// Consumer is a consumer server running for the length of a test: Stop,
// Done, Err, Health and WaitHealth come from servertest.Running.
type Consumer struct {
	*servertest.Running
	Svc *consumersvc.Service
}

// Start builds the server with consumersvc.New and runs it until Stop or
// the end of the test.
func Start(t testing.TB, cfg consumersvc.Config) *Consumer {
	t.Helper()
	svc, err := consumersvc.New(context.Background(), servertest.Logger(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &Consumer{Running: servertest.Start(t, svc), Svc: svc}
}
