package reconcileapi_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/lagwatch"
	"github.com/resultsync/resultsync/pkg/platform/idempotency"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcileapi"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/reconcileapitest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

type fixture struct {
	client  fitnessv1.ReconcileServiceClient
	shards  []*infratest.MySQLDatabase
	proj    *chstore.Projection
	store   *reconcile.RunStore
	control *infratest.MySQLDatabase
	chConn  driver.Conn
}

func newFixture(t *testing.T, cfg reconcile.RunnerConfig) *fixture {
	return newFixtureWith(t, cfg, nil)
}

// newFixtureWith lets a test wrap the authoritative side of the comparison.
func newFixtureWith(t *testing.T, cfg reconcile.RunnerConfig, wrap func(f *fixture, s reconcile.Side) reconcile.Side) *fixture {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f := &fixture{}
	var src reconcile.MySQLSource
	for range 2 {
		db := infratest.NewMySQLDatabase(t, schema.Shard)
		f.shards = append(f.shards, db)
		src.Shards = append(src.Shards, db.DB)
	}
	ch := infratest.NewClickHouseDatabase(t, true)
	f.proj = chstore.NewProjection(ch.Conn)
	f.chConn = ch.Conn
	f.control = infratest.NewMySQLDatabase(t, schema.Control)
	f.store = reconcile.NewRunStore(f.control.DB)
	var side reconcile.Side = src
	if wrap != nil {
		side = wrap(f, src)
	}
	var outboxes []lagwatch.Shard
	for i, db := range f.shards {
		outboxes = append(outboxes, lagwatch.Shard{ID: fmt.Sprintf("shard-%d", i), DB: db.DB})
	}
	runner := reconcile.NewRunner(log, cfg, side, src, reconcile.ClickHouseTarget{Conn: ch.Conn}, f.store, nil,
		reconcile.WithFlight(reconcile.NewOutboxFlight(ch.Conn, outboxes)))
	// The runner's worker, as the server's supervisor runs it.
	ctx, cancel := context.WithCancel(context.Background())
	worker := make(chan struct{})
	go func() { defer close(worker); _ = runner.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-worker })
	svc := reconcileapi.New(f.store, runner, src, reconcileapi.WithIdempotency(idempotency.New(f.control.DB, idempotency.Options{Log: log})))
	srv, err := server.New(log, server.Config{GRPCAddr: "127.0.0.1:0", ShutdownGrace: time.Second}, servertest.AsPlatform()...)
	if err != nil {
		t.Fatal(err)
	}
	fitnessv1.RegisterReconcileServiceServer(srv.GRPC(), svc)
	f.client = fitnessv1.NewReconcileServiceClient(servertest.Serve(t, srv))
	return f
}

// put writes a record on its shard and, when delivered, in the projection.
func (f *fixture) put(t *testing.T, id, version, school int64, result string, delivered bool) {
	t.Helper()
	if _, err := f.shards[school%2].DB.Exec(`INSERT INTO fitness_result
		(data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
		VALUES (?, 10001, 4, 3, ?, 5, ?, 'm', ?, 0, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))
		ON DUPLICATE KEY UPDATE result = VALUES(result), version = VALUES(version)`, id, school, result, version); err != nil {
		t.Fatal(err)
	}
	if delivered {
		f.deliver(t, id, version, school, result)
	}
}

func (f *fixture) deliver(t *testing.T, id, version, school int64, result string) {
	t.Helper()
	if err := f.proj.Insert(context.Background(), []chstore.Row{{DetectID: 10001, DataID: id, UserID: 4, ProjectID: 3, SchoolID: school,
		Grade: 5, Version: version, Result: result, Unit: "m", EventID: fmt.Sprintf("fitness-result-%d-v%d", id, version), ShardID: "s"}}); err != nil {
		t.Fatal(err)
	}
}

// watch follows a run to its end through the streaming RPC.
func (f *fixture) watch(t *testing.T, runID string) []*fitnessv1.ReconciliationRun {
	t.Helper()
	return f.watchFor(t, runID, 60*time.Second)
}

// watchFor is watch with a time limit.
func (f *fixture) watchFor(t *testing.T, runID string, limit time.Duration) []*fitnessv1.ReconciliationRun {
	t.Helper()
	return reconcileapitest.Watch(t, context.Background(), f.client, runID, limit)
}

func fastConfig() reconcile.RunnerConfig {
	return reconcile.RunnerConfig{Buckets: 64, Grace: 300 * time.Millisecond, CatchUpWait: 300 * time.Millisecond, MaxBoundaryRetries: 3}
}

func TestRunFindsAndListsDiscrepancies(t *testing.T) {
	f := newFixture(t, fastConfig())
	ctx := context.Background()
	for i := range int64(40) {
		f.put(t, 100+i, 1, 10+i%5, "2.21", true)
	}
	f.put(t, 900001, 2, 7, "2.31", false) // missing in the projection
	f.put(t, 900002, 1, 8, "2.31", false)
	f.deliver(t, 900002, 1, 9, "2.31") // mapping defect: wrong school
	runID := reconcileapitest.Start(t, f.client, context.Background, &fitnessv1.ReconcileScope{DetectId: 10001}, fitnessv1.ReconcileDepth_RECONCILE_DEPTH_CONTENT)
	seen := f.watch(t, runID)
	final := seen[len(seen)-1]
	if final.GetState() != fitnessv1.RunState_RUN_STATE_SUCCEEDED || final.GetDiscrepancyCount() != 2 || final.GetEndTime() == nil {
		t.Fatalf("final run = %v", final)
	}
	if final.GetRowsCompared() < 80 {
		t.Errorf("rows compared = %d, want both sides counted", final.GetRowsCompared())
	}
	list, err := f.client.ListDiscrepancies(ctx, &fitnessv1.ListDiscrepanciesRequest{RunId: final.GetRunId(), PageSize: 1})
	if err != nil || len(list.GetDiscrepancies()) != 1 || list.GetNextPageToken() == "" {
		t.Fatalf("first page = %v, %v", list, err)
	}
	d := list.GetDiscrepancies()[0]
	if d.GetClass() != fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_MISSING_IN_TARGET || d.GetDataId() != 900001 ||
		!d.GetSource().GetPresent() || d.GetTarget().GetPresent() || d.GetSource().GetCanonical() != "900001|2|0|10001|4|3|7|5|2310|m" {
		t.Errorf("first discrepancy = %v", d)
	}
	// A page token belongs to its run and class: used for another, refused.
	for _, other := range []*fitnessv1.ListDiscrepanciesRequest{
		{RunId: "another-run", PageToken: list.GetNextPageToken()},
		{RunId: final.GetRunId(), Class: fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_CONTENT_MISMATCH, PageToken: list.GetNextPageToken()},
	} {
		if _, err := f.client.ListDiscrepancies(ctx, other); status.Code(err) != codes.InvalidArgument {
			t.Errorf("ListDiscrepancies(%v) with another query's token = %v; want INVALID_ARGUMENT", other, err)
		}
	}
	list, err = f.client.ListDiscrepancies(ctx, &fitnessv1.ListDiscrepanciesRequest{RunId: final.GetRunId(), PageToken: list.GetNextPageToken()})
	if err != nil || len(list.GetDiscrepancies()) != 1 || list.GetDiscrepancies()[0].GetClass() != fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_CONTENT_MISMATCH ||
		list.GetDiscrepancies()[0].GetTarget().GetCanonical() != "900002|1|0|10001|4|3|9|5|2310|m" {
		t.Errorf("second page = %v, %v", list, err)
	}
	filtered, err := f.client.ListDiscrepancies(ctx, &fitnessv1.ListDiscrepanciesRequest{RunId: final.GetRunId(),
		Class: fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_CONTENT_MISMATCH})
	if err != nil || len(filtered.GetDiscrepancies()) != 1 {
		t.Errorf("class filter = %v, %v", filtered, err)
	}
	runs, err := f.client.ListReconciliationRuns(ctx, &fitnessv1.ListReconciliationRunsRequest{DetectId: 10001})
	if err != nil || len(runs.GetRuns()) != 1 {
		t.Errorf("runs = %v, %v", runs, err)
	}
}

// Changes committed during a run on a live campaign are not reported once
// the projection catches up within the grace period.
func TestLiveChangesAreNotReported(t *testing.T) {
	cfg := fastConfig()
	cfg.Grace = 2 * time.Second
	f := newFixture(t, cfg)
	ctx := context.Background()
	for i := range int64(20) {
		f.put(t, 100+i, 1, 10+i%5, "2.21", true)
	}
	// A correction committed at the source whose event is still in flight.
	f.put(t, 105, 2, 10, "2.31", false)
	runID := reconcileapitest.Start(t, f.client, context.Background, &fitnessv1.ReconcileScope{DetectId: 10001}, fitnessv1.ReconcileDepth_RECONCILE_DEPTH_CONTENT)
	// Once the scan compared the bucket summaries (the correction's bucket
	// differs), the projection catches up within the grace period.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got, err := f.client.GetReconciliationRun(ctx, &fitnessv1.GetReconciliationRunRequest{RunId: runID})
		if err != nil {
			t.Fatal(err)
		}
		if got.GetRun().GetBucketsTotal() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not scan within 30s: %v", got.GetRun())
		}
	}
	f.deliver(t, 105, 2, 10, "2.31")
	seen := f.watch(t, runID)
	final := seen[len(seen)-1]
	if final.GetState() != fitnessv1.RunState_RUN_STATE_SUCCEEDED || final.GetDiscrepancyCount() != 0 {
		t.Fatalf("final run = %v; want no discrepancy (ordinary lag)", final)
	}
	if final.GetMessage() == "" {
		t.Error("the run does not say that a candidate resolved itself during the grace period")
	}
}

// changeDuringScan commits a change (source and projection) while the first
// scans read the source, so the campaign revision moves under them.
type changeDuringScan struct {
	reconcile.Side
	t     *testing.T
	f     *fixture
	scans int
}

func (c *changeDuringScan) Buckets(ctx context.Context, s reconcile.Scope, n int) (map[int]reconcile.BucketSum, error) {
	out, err := c.Side.Buckets(ctx, s, n)
	if c.scans < 2 {
		c.scans++
		c.f.put(c.t, 100, int64(1+c.scans), 10, "2.21", true)
	}
	return out, err
}

// A revision that moves during the scan makes the run wait until the
// projection reached the shards' positions (here at once: nothing is in
// flight, so nothing is slept through) and retry, and say so.
func TestBoundaryRetry(t *testing.T) {
	f := newFixtureWith(t, fastConfig(), func(f *fixture, s reconcile.Side) reconcile.Side {
		return &changeDuringScan{Side: s, t: t, f: f}
	})
	for i := range int64(10) {
		f.put(t, 100+i, 1, 10, "2.21", true)
	}
	runID := reconcileapitest.Start(t, f.client, context.Background, &fitnessv1.ReconcileScope{DetectId: 10001}, fitnessv1.ReconcileDepth_RECONCILE_DEPTH_VERSIONS)
	seen := f.watch(t, runID)
	final := seen[len(seen)-1]
	if final.GetBoundaryRetries() != 2 || !strings.Contains(final.GetMessage(), "revision moved") {
		t.Errorf("run = %v; want 2 boundary retries reported", final)
	}
	if final.GetState() != fitnessv1.RunState_RUN_STATE_SUCCEEDED || final.GetDiscrepancyCount() != 0 {
		t.Errorf("run = %v; want success without discrepancies once caught up", final)
	}
}

func TestBadInput(t *testing.T) {
	f := newFixture(t, fastConfig())
	f.put(t, 100, 1, 10, "2.21", true)
	ctx := context.Background()
	content := fitnessv1.ReconcileDepth_RECONCILE_DEPTH_CONTENT
	for _, tc := range []struct {
		name string
		req  *fitnessv1.StartReconciliationRunRequest
		code codes.Code
	}{
		{"empty scope", &fitnessv1.StartReconciliationRunRequest{Depth: content}, codes.InvalidArgument},
		{"no depth", &fitnessv1.StartReconciliationRunRequest{Scope: &fitnessv1.ReconcileScope{DetectId: 10001}}, codes.InvalidArgument},
		{"bad depth", &fitnessv1.StartReconciliationRunRequest{Scope: &fitnessv1.ReconcileScope{DetectId: 10001}, Depth: 9}, codes.InvalidArgument},
		{"bad sample", &fitnessv1.StartReconciliationRunRequest{Scope: &fitnessv1.ReconcileScope{DetectId: 10001}, Depth: content, SampleRate: 2}, codes.InvalidArgument},
		{"unknown campaign", &fitnessv1.StartReconciliationRunRequest{Scope: &fitnessv1.ReconcileScope{DetectId: 424242}, Depth: content}, codes.NotFound},
		{"long request_id", &fitnessv1.StartReconciliationRunRequest{Scope: &fitnessv1.ReconcileScope{DetectId: 10001}, Depth: content,
			RequestId: strings.Repeat("r", 65)}, codes.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := f.client.StartReconciliationRun(ctx, tc.req); status.Code(err) != tc.code {
				t.Errorf("got %v, want %s", err, tc.code)
			}
		})
	}
	if _, err := f.client.GetReconciliationRun(ctx, &fitnessv1.GetReconciliationRunRequest{RunId: "nope"}); status.Code(err) != codes.NotFound {
		t.Errorf("unknown run: %v", err)
	}
	if _, err := f.client.ListDiscrepancies(ctx, &fitnessv1.ListDiscrepanciesRequest{RunId: "nope"}); status.Code(err) != codes.NotFound {
		t.Errorf("discrepancies of an unknown run: %v", err)
	}
}

// A run interrupted by a restart is marked FAILED, never left running.
func TestInterruptedRunsFailAtStartUp(t *testing.T) {
	f := newFixture(t, fastConfig())
	ctx := context.Background()
	r, err := f.store.Create(ctx, reconcile.Scope{DetectID: 10001}, reconcile.DepthContent, 0, "test")
	if err != nil {
		t.Fatal(err)
	}
	r.State = reconcile.StateRunning
	if err := f.store.Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	if n, err := f.store.FailInterrupted(ctx); err != nil || n != 1 {
		t.Fatalf("FailInterrupted = %d, %v", n, err)
	}
	got, err := f.client.GetReconciliationRun(ctx, &fitnessv1.GetReconciliationRunRequest{RunId: r.ID})
	if err != nil || got.GetRun().GetState() != fitnessv1.RunState_RUN_STATE_FAILED || got.GetRun().GetErrorMessage() == "" {
		t.Errorf("interrupted run = %v, %v", got, err)
	}
}

// With one run slot, runs started together wait QUEUED, visibly, and each
// ends in turn; beyond the queue's bound a start is refused, and accepted
// again once runs ended.
func TestRunsBeyondTheLimitWaitQueued(t *testing.T) {
	cfg := fastConfig()
	cfg.MaxConcurrentRuns = 1
	cfg.MaxQueuedRuns = 2
	cfg.Grace = time.Second // each run holds its slot at least this long
	f := newFixture(t, cfg)
	ctx := context.Background()
	for i := range int64(20) {
		f.put(t, 100+i, 1, 10+i%5, "2.21", true)
	}
	f.put(t, 900001, 1, 7, "2.21", false) // one real discrepancy: every run drills and waits
	var ids []string
	for range 3 {
		ids = append(ids, reconcileapitest.Start(t, f.client, context.Background, &fitnessv1.ReconcileScope{DetectId: 10001},
			fitnessv1.ReconcileDepth_RECONCILE_DEPTH_CONTENT))
	}
	full := &fitnessv1.StartReconciliationRunRequest{Scope: &fitnessv1.ReconcileScope{DetectId: 10001}, Depth: fitnessv1.ReconcileDepth_RECONCILE_DEPTH_COUNTS}
	if _, err := f.client.StartReconciliationRun(ctx, full); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a fourth run with one executing and two queued: %v; want RESOURCE_EXHAUSTED", err)
	}
	queued := map[string]bool{}
	deadline := time.Now().Add(60 * time.Second)
	for done := 0; done < len(ids) && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		done = 0
		for _, id := range ids {
			got, err := f.client.GetReconciliationRun(ctx, &fitnessv1.GetReconciliationRunRequest{RunId: id})
			if err != nil {
				t.Fatal(err)
			}
			r := got.GetRun()
			switch r.GetState() {
			case fitnessv1.RunState_RUN_STATE_QUEUED:
				queued[id] = true
				if !strings.Contains(r.GetMessage(), "queued") {
					t.Errorf("queued run's message = %q", r.GetMessage())
				}
			case fitnessv1.RunState_RUN_STATE_SUCCEEDED:
				done++
				if r.GetDiscrepancyCount() != 1 {
					t.Errorf("run %s = %v", id, r)
				}
			case fitnessv1.RunState_RUN_STATE_FAILED, fitnessv1.RunState_RUN_STATE_BOUNDARY_NOT_REACHED:
				t.Fatalf("run %s = %v", id, r)
			}
		}
	}
	for _, id := range ids {
		if got, err := f.client.GetReconciliationRun(ctx, &fitnessv1.GetReconciliationRunRequest{RunId: id}); err != nil ||
			got.GetRun().GetState() != fitnessv1.RunState_RUN_STATE_SUCCEEDED {
			t.Errorf("run %s did not succeed: %v, %v", id, got, err)
		}
	}
	// A run's place is given back just after its end is recorded.
	var err error
	for try := 0; try < 20; try++ {
		if _, err = f.client.StartReconciliationRun(ctx, full); status.Code(err) != codes.ResourceExhausted {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Errorf("a run once the others ended: %v", err)
	}
	if len(queued) < 2 {
		t.Errorf("%d of 3 runs were seen QUEUED with one slot; want at least 2", len(queued))
	}
}
