// Package e2e runs the whole path in one process against the real servers:
// the results server on two shards -> outbox -> the relay server -> Pulsar
// -> the consumer server -> ClickHouse, every server built by its
// pkg/service constructor as its main builds it, and reads the campaign
// report.
package e2e

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/model/shard"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/service/consumersvc"
	"github.com/resultsync/resultsync/pkg/service/relaysvc"
	"github.com/resultsync/resultsync/pkg/service/resultssvc"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

func TestCorrectionReachesTheReport(t *testing.T) {
	if infratest.ClickHouseIsInProcess() {
		t.Skip("the consumer server reaches ClickHouse over the network; runs on the ClickHouse server pass")
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Write path over two shards: the results server as main builds it.
	var m shard.Map
	for _, id := range []string{"shard-0", "shard-1"} {
		db := infratest.NewMySQLDatabase(t, schema.Shard)
		m.Shards = append(m.Shards, shard.Shard{ID: id, DSN: db.DSN})
	}
	results := startResults(ctx, t, log, m)

	// Relay and consumer servers, built through relaysvc and consumersvc as
	// their mains build them, on a fresh topic, control database and
	// projection database.
	topic := infratest.Topic(t, "e2e")
	control := infratest.NewMySQLDatabase(t, schema.Control)
	ch := infratest.NewClickHouseDatabase(t, true)
	proj := chstore.NewProjection(ch.Conn)
	common := []string{"--grpc-addr=127.0.0.1:0", "--http-addr=", "--shutdown-grace=2s", "--auth-tokens=" + auth.DevTokens,
		"--pulsar-url=" + infratest.PulsarURL(), "--topic=" + topic}
	rcfg, err := relaysvc.Load(append(common, "--shards="+shardArg(m), "--control-dsn="+control.DSN))
	if err != nil {
		t.Fatal(err)
	}
	rsvc, err := relaysvc.New(ctx, log, rcfg)
	if err != nil {
		t.Fatal(err)
	}
	ccfg, err := consumersvc.Load(append(common, "--dead-letter-topic="+topic+"-DLQ", "--subscription=projection",
		"--clickhouse-addr="+infratest.ClickHouseAddr(), "--clickhouse-database="+ch.Name, "--batch-wait=50ms"))
	if err != nil {
		t.Fatal(err)
	}
	csvc, err := consumersvc.New(ctx, log, ccfg)
	if err != nil {
		t.Fatal(err)
	}
	servertest.Start(t, rsvc).WaitHealth(t, "", healthpb.HealthCheckResponse_SERVING, 30*time.Second)
	servertest.Start(t, csvc).WaitHealth(t, "", healthpb.HealthCheckResponse_SERVING, 30*time.Second)

	// The canonical story.
	op := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer dev-operator")
	if _, err := results.RecordResult(op, &fitnessv1.RecordResultRequest{RequestId: "e2e-r", DataId: 900001, DetectId: 10001,
		UserId: 4, ProjectId: 3, SchoolId: 7, Grade: 5, Result: "2.21", Unit: "m"}); err != nil {
		t.Fatal(err)
	}
	if _, err := results.CorrectResult(op, &fitnessv1.CorrectResultRequest{RequestId: "e2e-c", SchoolId: 7, DataId: 900001,
		ExpectedVersion: 1, Result: "2.31", Unit: "m", Reason: "teacher correction"}); err != nil {
		t.Fatal(err)
	}
	want := []chstore.ProjectReport{{ProjectID: 3, Unit: "m", Results: 1, Mean: "2.31", Min: "2.31", Max: "2.31"}}
	var got []chstore.ProjectReport
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if got, err = proj.CampaignReport(ctx, 10001); err != nil {
			t.Fatal(err)
		}
		if cmp.Equal(want, got) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("campaign report (-want +got):\n%s", diff)
	}
	state, err := proj.CurrentState(ctx, 10001)
	if err != nil || len(state) != 1 || state[0].Version != 2 || state[0].Result != "2.31" {
		t.Errorf("current state = %v, %v; want version 2 at 2.31", state, err)
	}
	// The consumer records a batch's lag once the batch is stored and its
	// applied positions are written, a moment after its rows are visible.
	var lag []consumer.ShardLag
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if lag = csvc.Lag().Snapshot(time.Now()); len(lag) > 0 {
			break
		}
	}
	if len(lag) != 1 || lag[0].ShardID != m.Shards[m.Owner(900001)].ID {
		t.Errorf("lag snapshot = %+v; want the owning shard", lag)
	}
}

// startResults builds the results server through resultssvc exactly as
// services/results does (Load, New, Run), over the shards of m, on a
// loopback port, until the test ends; it returns a client of it.
func startResults(ctx context.Context, t *testing.T, log *slog.Logger, m shard.Map) fitnessv1.ResultServiceClient {
	t.Helper()
	cfg, err := resultssvc.Load([]string{"--grpc-addr=127.0.0.1:0", "--http-addr=", "--shutdown-grace=1s",
		"--auth-tokens=" + auth.DevTokens, "--shards=" + shardArg(m), "--max-conns-per-shard=8"})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := resultssvc.New(ctx, log, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(rctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("results server: %v", err)
		}
	})
	conn, err := grpc.NewClient(svc.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return fitnessv1.NewResultServiceClient(conn)
}

// shardArg is the shard map m as the servers' --shards setting.
func shardArg(m shard.Map) string {
	var shards []string
	for _, s := range m.Shards {
		shards = append(shards, s.ID+"="+s.DSN)
	}
	return strings.Join(shards, ",")
}
