package repairapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/audit"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/changefeed"
	"github.com/resultsync/resultsync/pkg/platform/idempotency"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/recovery/repair"
	"github.com/resultsync/resultsync/pkg/recovery/repairapi"
	"github.com/resultsync/resultsync/pkg/testkit/repairtest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

// The callers: vera (viewer), otto (operator), alice and bob (admins).
const tokens = "tok-viewer=vera:viewer,tok-operator=otto:operator,tok-admin-alice=alice:admin,tok-admin-bob=bob:admin"

type fixture struct {
	*repairtest.Env
	client fitnessv1.RepairServiceClient
	rep    *repairtest.Replayer
	rb     *repairtest.Rebuilder
	audit  *audit.Log
}

type options struct {
	allowSelf bool
	executor  bool // run an executor
	rate      int  // rows per second per shard (default 1000)
	// watch, when its Poll is set, replaces the watch streams' defaults.
	watch changefeed.WatchOptions
}

func newFixture(t *testing.T, o options) *fixture {
	t.Helper()
	env := repairtest.New(t)
	f := &fixture{Env: env, rep: repairtest.NewReplayer(t, env), rb: &repairtest.Rebuilder{Env: env}, audit: audit.New(env.Control)}
	deps := env.Deps(f.rep, &repairtest.Editor{Env: env}, f.rb)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	if o.executor {
		cfg := repair.ExecutorConfig{RowsPerSecond: 1000, WorkersPerShard: 2, BatchSize: 10, MaxConcurrent: 4, Poll: 50 * time.Millisecond, Lease: time.Second,
			VerifyTimeout: 30 * time.Second, VerifyPoll: 100 * time.Millisecond, ItemAttempts: 3, RetryBackoff: 20 * time.Millisecond}
		if o.rate > 0 {
			cfg.RowsPerSecond = o.rate
		}
		ex, err := repair.NewExecutor(env.Log, cfg, deps, nil)
		if err != nil {
			t.Fatal(err)
		}
		deps.Wake = ex.Wake
		go func() { done <- ex.Run(ctx) }()
	} else {
		done <- nil
	}
	t.Cleanup(func() { cancel(); <-done })
	mgr, err := repair.NewManager(repair.ManagerConfig{AllowSelfApproval: o.allowSelf}, deps)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(env.Log, server.Config{GRPCAddr: "127.0.0.1:0", ShutdownGrace: time.Second, Auth: auth.Local(tokens)}, server.WithAuth(auth.RepairPolicy))
	if err != nil {
		t.Fatal(err)
	}
	opts := []repairapi.Option{repairapi.WithIdempotency(idempotency.New(env.Control, idempotency.Options{Log: env.Log}))}
	if o.watch.Poll > 0 {
		opts = append(opts, repairapi.WithWatch(o.watch))
	}
	fitnessv1.RegisterRepairServiceServer(srv.GRPC(), repairapi.New(mgr, env.Store, f.audit, opts...))
	f.client = fitnessv1.NewRepairServiceClient(servertest.Serve(t, srv))
	return f
}

// as returns a context carrying the bearer token of a caller ("" for none).
func as(who string) context.Context {
	tok := map[string]string{"vera": "tok-viewer", "otto": "tok-operator", "alice": "tok-admin-alice", "bob": "tok-admin-bob"}[who]
	if tok == "" {
		return context.Background()
	}
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+tok)
}

// scenario writes consistent records and one discrepancy of every class and
// reconciles them.
func (f *fixture) scenario(t *testing.T) reconcile.Run {
	t.Helper()
	return f.Scenario(t, 10)
}

// create makes the repairs of every open discrepancy of run, as who.
func (f *fixture) create(t *testing.T, who, runID, requestID string) map[fitnessv1.RepairAction]*fitnessv1.Repair {
	t.Helper()
	resp, err := f.client.CreateRepair(as(who), &fitnessv1.CreateRepairRequest{RequestId: requestID, RunId: runID, Reason: "INC-9", RebuildEpoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	out := map[fitnessv1.RepairAction]*fitnessv1.Repair{}
	for _, r := range resp.GetRepairs() {
		out[r.GetAction()] = r
	}
	return out
}

// auditTrail returns "caller action outcome-prefix" of every audit entry, oldest first.
func (f *fixture) auditTrail(t *testing.T) []string {
	t.Helper()
	recs, err := f.audit.List(context.Background(), "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		word, _, _ := strings.Cut(r.Outcome, ":")
		out = append(out, r.Caller+" "+r.Action+" "+word)
	}
	return out
}

func TestAccessAndApprovalRules(t *testing.T) {
	f := newFixture(t, options{})
	run := f.scenario(t)
	rs := f.create(t, "alice", run.ID, "r-1")
	removal, replay := rs[fitnessv1.RepairAction_REPAIR_ACTION_REMOVE], rs[fitnessv1.RepairAction_REPAIR_ACTION_REPLAY]
	approve := func(who, id string) error {
		_, err := f.client.ApproveRepair(as(who), &fitnessv1.ApproveRepairRequest{RepairId: id, Reason: "origins checked"})
		return err
	}
	for _, tc := range []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"no token", func() error { return approve("", removal.GetRepairId()) }, codes.Unauthenticated},
		{"viewer approves", func() error { return approve("vera", removal.GetRepairId()) }, codes.PermissionDenied},
		{"operator approves", func() error { return approve("otto", removal.GetRepairId()) }, codes.PermissionDenied},
		{"viewer creates", func() error {
			_, err := f.client.CreateRepair(as("vera"), &fitnessv1.CreateRepairRequest{RequestId: "v", RunId: run.ID, Reason: "x"})
			return err
		}, codes.PermissionDenied},
		{"viewer plans", func() error {
			_, err := f.client.PlanRepair(as("vera"), &fitnessv1.PlanRepairRequest{RunId: run.ID})
			return err
		}, codes.PermissionDenied},
		{"viewer cancels", func() error {
			_, err := f.client.CancelRepair(as("vera"), &fitnessv1.CancelRepairRequest{RepairId: removal.GetRepairId(), Reason: "x"})
			return err
		}, codes.PermissionDenied},
		{"operator starts a rebuild", func() error {
			_, err := f.client.StartRebuild(as("otto"), &fitnessv1.StartRebuildRequest{RequestId: "b", Scope: &fitnessv1.ReconcileScope{DetectId: repairtest.DetectID},
				Epoch: 5, Reason: "x"})
			return err
		}, codes.PermissionDenied},
		{"operator approves a rebuild", func() error {
			_, err := f.client.ApproveRebuild(as("otto"), &fitnessv1.ApproveRebuildRequest{RebuildId: rs[fitnessv1.RepairAction_REPAIR_ACTION_REBUILD].GetRebuildId(), Reason: "x"})
			return err
		}, codes.PermissionDenied},
		{"operator cancels a rebuild", func() error {
			_, err := f.client.CancelRebuild(as("otto"), &fitnessv1.CancelRebuildRequest{RebuildId: rs[fitnessv1.RepairAction_REPAIR_ACTION_REBUILD].GetRebuildId(), Reason: "x"})
			return err
		}, codes.PermissionDenied},
		{"the requester approves", func() error { return approve("alice", removal.GetRepairId()) }, codes.FailedPrecondition},
		{"a replay needs no approval", func() error { return approve("bob", replay.GetRepairId()) }, codes.FailedPrecondition},
		{"the rebuild of a repair is approved through it", func() error {
			_, err := f.client.ApproveRebuild(as("bob"), &fitnessv1.ApproveRebuildRequest{RebuildId: rs[fitnessv1.RepairAction_REPAIR_ACTION_REBUILD].GetRebuildId(), Reason: "x"})
			return err
		}, codes.FailedPrecondition},
		{"unknown repair", func() error { return approve("bob", "nope") }, codes.NotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.RowCounts(t)
			err := tc.call()
			if status.Code(err) != tc.want {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
			after := f.RowCounts(t)
			delete(before, "audit_log")
			delete(after, "audit_log")
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("a refused call changed rows (-before +after):\n%s", diff)
			}
		})
	}
	got, err := f.client.GetRepair(as("vera"), &fitnessv1.GetRepairRequest{RepairId: removal.GetRepairId()})
	if err != nil || got.GetRepair().GetState() != fitnessv1.RepairState_REPAIR_STATE_AWAITING_APPROVAL || len(got.GetTransitions()) != 1 {
		t.Fatalf("after the refusals: %v, %v", got, err)
	}
	if err := approve("bob", removal.GetRepairId()); err != nil {
		t.Fatal(err)
	}
	if status.Code(approve("bob", removal.GetRepairId())) != codes.FailedPrecondition {
		t.Error("a second approval was not refused")
	}
	got, err = f.client.GetRepair(as("vera"), &fitnessv1.GetRepairRequest{RepairId: removal.GetRepairId()})
	r := got.GetRepair()
	if err != nil || r.GetState() != fitnessv1.RepairState_REPAIR_STATE_EXECUTING || r.GetApprovedBy() != "bob" || r.GetApproveReason() != "origins checked" ||
		r.GetApproveTime() == nil || len(got.GetTransitions()) != 2 || got.GetTransitions()[1].GetActor() != "bob" {
		t.Errorf("approved repair = %v, %v", got, err)
	}
	// Every mutating call that reached the service is audited with its
	// caller, refusals included (the interceptor refuses wrong roles before).
	want := []string{
		"alice repair.create repairs",
		"alice repair.approve refused",
		"bob repair.approve refused",
		"bob rebuild.approve refused",
		"bob repair.approve refused",
		"bob repair.approve approved REMOVE repair; EXECUTING",
		"bob repair.approve refused",
	}
	if diff := cmp.Diff(want, f.auditTrail(t)); diff != "" {
		t.Errorf("audit trail (-want +got):\n%s", diff)
	}
}

func TestSelfApprovalSetting(t *testing.T) {
	f := newFixture(t, options{allowSelf: true})
	run := f.scenario(t)
	rs := f.create(t, "alice", run.ID, "r-1")
	for _, a := range []fitnessv1.RepairAction{fitnessv1.RepairAction_REPAIR_ACTION_REMOVE, fitnessv1.RepairAction_REPAIR_ACTION_REBUILD} {
		resp, err := f.client.ApproveRepair(as("alice"), &fitnessv1.ApproveRepairRequest{RepairId: rs[a].GetRepairId(), Reason: "single operator"})
		if err != nil || resp.GetRepair().GetApprovedBy() != "alice" {
			t.Errorf("self-approval of %s with --allow-self-approval = %v, %v", a, resp, err)
		}
	}
	b, err := f.client.StartRebuild(as("bob"), &fitnessv1.StartRebuildRequest{RequestId: "b", Scope: &fitnessv1.ReconcileScope{DetectId: 77}, Epoch: 1, Reason: "fix"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.ApproveRebuild(as("bob"), &fitnessv1.ApproveRebuildRequest{RebuildId: b.GetRebuild().GetRebuildId(), Reason: "mine"}); err != nil {
		t.Errorf("self-approval of a rebuild with --allow-self-approval = %v", err)
	}
}

func TestBadRequests(t *testing.T) {
	f := newFixture(t, options{})
	long := strings.Repeat("x", 600)
	for _, tc := range []struct {
		name   string
		call   func(ctx context.Context) error
		fields []string
	}{
		{"create without anything", func(ctx context.Context) error {
			_, err := f.client.CreateRepair(ctx, &fitnessv1.CreateRepairRequest{})
			return err
		}, []string{"request_id", "run_id", "reason"}},
		{"create with bad ids and epoch", func(ctx context.Context) error {
			_, err := f.client.CreateRepair(ctx, &fitnessv1.CreateRepairRequest{RequestId: strings.Repeat("r", 65), RunId: "x", Reason: long,
				DiscrepancyIds: []string{"a", "a", ""}, RebuildEpoch: 70000})
			return err
		}, []string{"request_id", "reason", "discrepancy_ids[1]", "discrepancy_ids[2]", "rebuild_epoch"}},
		{"plan with negative max items", func(ctx context.Context) error {
			_, err := f.client.PlanRepair(ctx, &fitnessv1.PlanRepairRequest{RunId: "x", MaxItems: -1})
			return err
		}, []string{"max_items"}},
		{"approve without reason", func(ctx context.Context) error {
			_, err := f.client.ApproveRepair(ctx, &fitnessv1.ApproveRepairRequest{RepairId: "x", Reason: "  "})
			return err
		}, []string{"reason"}},
		{"cancel without id", func(ctx context.Context) error {
			_, err := f.client.CancelRepair(ctx, &fitnessv1.CancelRepairRequest{Reason: "x"})
			return err
		}, []string{"repair_id"}},
		{"rebuild without scope and epoch", func(ctx context.Context) error {
			_, err := f.client.StartRebuild(ctx, &fitnessv1.StartRebuildRequest{RequestId: "b", Reason: "x", Scope: &fitnessv1.ReconcileScope{SchoolId: -1}})
			return err
		}, []string{"scope.detect_id", "scope.school_id", "epoch"}},
		{"list with a foreign token", func(ctx context.Context) error {
			tok := "cmVidWlsZHN8MHwwfDU" // a ListRebuilds token
			_, err := f.client.ListRepairs(ctx, &fitnessv1.ListRepairsRequest{PageToken: tok, State: 99})
			return err
		}, []string{"state", "page_token"}},
		{"items without repair", func(ctx context.Context) error {
			_, err := f.client.ListRepairItems(ctx, &fitnessv1.ListRepairItemsRequest{PageSize: -1})
			return err
		}, []string{"repair_id", "page_size"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(as("alice"))
			st := status.Convert(err)
			if st.Code() != codes.InvalidArgument {
				t.Fatalf("got %v, want INVALID_ARGUMENT", err)
			}
			var fields []string
			for _, d := range st.Details() {
				if br, ok := d.(*errdetails.BadRequest); ok {
					for _, v := range br.GetFieldViolations() {
						fields = append(fields, v.GetField())
					}
				}
			}
			if diff := cmp.Diff(tc.fields, fields); diff != "" {
				t.Errorf("field violations (-want +got):\n%s", diff)
			}
		})
	}
	for _, tc := range []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"unknown run", func() error {
			_, err := f.client.PlanRepair(as("otto"), &fitnessv1.PlanRepairRequest{RunId: "nope"})
			return err
		}, codes.NotFound},
		{"unknown repair", func() error {
			_, err := f.client.GetRepair(as("vera"), &fitnessv1.GetRepairRequest{RepairId: "nope"})
			return err
		}, codes.NotFound},
		{"items of an unknown repair", func() error {
			_, err := f.client.ListRepairItems(as("vera"), &fitnessv1.ListRepairItemsRequest{RepairId: "nope"})
			return err
		}, codes.NotFound},
		{"unknown rebuild", func() error {
			_, err := f.client.GetRebuild(as("vera"), &fitnessv1.GetRebuildRequest{RebuildId: "nope"})
			return err
		}, codes.NotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); status.Code(err) != tc.want {
				t.Errorf("got %v, want %s", err, tc.want)
			}
		})
	}
}

// PlanRepair over RPC: counts per action and shard, items with origins, and
// nothing written (not even an audit entry); CreateRepair is idempotent by
// request_id.
func TestPlanAndIdempotentCreate(t *testing.T) {
	f := newFixture(t, options{})
	run := f.scenario(t)
	before := f.RowCounts(t)
	plan, err := f.client.PlanRepair(as("otto"), &fitnessv1.PlanRepairRequest{RunId: run.ID, MaxItems: 4})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, f.RowCounts(t)); diff != "" {
		t.Errorf("PlanRepair changed rows (-before +after):\n%s", diff)
	}
	actions := map[string]string{}
	for _, a := range plan.GetActions() {
		actions[a.GetAction().String()] = fmt.Sprintf("%d approval=%t", a.GetItems(), a.GetRequiresApproval())
	}
	if diff := cmp.Diff(map[string]string{"REPAIR_ACTION_REPLAY": "2 approval=false", "REPAIR_ACTION_TOMBSTONE": "1 approval=false",
		"REPAIR_ACTION_REBUILD": "1 approval=true", "REPAIR_ACTION_REMOVE": "2 approval=true"}, actions); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	var perShard int64
	for _, s := range plan.GetShards() {
		perShard += s.GetItems()
		if s.GetShardId() != "shard-0" && s.GetShardId() != "shard-1" {
			t.Errorf("unknown shard %q", s.GetShardId())
		}
	}
	if perShard != 6 || plan.GetItemsTotal() != 6 || len(plan.GetItems()) != 4 || !plan.GetItemsTruncated() {
		t.Errorf("plan: %d per shard, total %d, %d items shown, truncated %t", perShard, plan.GetItemsTotal(), len(plan.GetItems()), plan.GetItemsTruncated())
	}
	full, err := f.client.PlanRepair(as("otto"), &fitnessv1.PlanRepairRequest{RunId: run.ID, DiscrepancyIds: f.ids(t, run.ID, repairtest.IDUnexpected)})
	if err != nil || len(full.GetItems()) != 1 {
		t.Fatalf("plan of the unexpected record = %v, %v", full, err)
	}
	it := full.GetItems()[0]
	if o := it.GetOrigins(); it.GetAction() != fitnessv1.RepairAction_REPAIR_ACTION_REMOVE || len(o) != 1 ||
		o[0].GetEventId() != fmt.Sprintf("fitness-result-%d-v1", repairtest.IDUnexpected) || o[0].GetShardId() != f.ShardOf(repairtest.IDUnexpected) ||
		o[0].GetIngestTime() == nil || o[0].GetEpoch() != 0 || o[0].GetVersion() != 1 {
		t.Errorf("planned removal = %v", it)
	}

	first := f.create(t, "otto", run.ID, "r-1")
	again := f.create(t, "otto", run.ID, "r-1")
	for a, r := range first {
		if again[a].GetRepairId() != r.GetRepairId() || r.GetRequestId() != "r-1" {
			t.Errorf("%s: retry returned %s, first %s", a, again[a].GetRepairId(), r.GetRepairId())
		}
	}
	if n := len(first[fitnessv1.RepairAction_REPAIR_ACTION_REPLAY].GetDiscrepancyIds()); n != 2 {
		t.Errorf("the replay repair lists %d discrepancies, want 2", n)
	}
	_, err = f.client.CreateRepair(as("otto"), &fitnessv1.CreateRepairRequest{RequestId: "r-1", RunId: run.ID, Reason: "another reason", RebuildEpoch: 1})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("request_id reused for another request: %v", err)
	}
	_, err = f.client.CreateRepair(as("otto"), &fitnessv1.CreateRepairRequest{RequestId: "r-2", RunId: run.ID, Reason: "x", RebuildEpoch: 1,
		DiscrepancyIds: f.ids(t, run.ID, repairtest.IDMissing)})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("a discrepancy already in an active repair: %v", err)
	}
}

// ids returns the discrepancy ids of records in a run.
func (f *fixture) ids(t *testing.T, runID string, dataIDs ...int64) []string {
	t.Helper()
	ds := f.Discrepancies(t, runID)
	var out []string
	for _, id := range dataIDs {
		out = append(out, ds[id].ID)
	}
	return out
}

// WatchRepair streams progress (items done rising, every state) and ends
// at the terminal state; ListRepairItems pages through the outcome.
func TestWatchRepairSeesProgressAndEnds(t *testing.T) {
	f := newFixture(t, options{executor: true, rate: 15})
	f.rep.Delay = 800 * time.Millisecond // replays travel relay -> Pulsar -> consumer: verification waits for them
	for i := range int64(30) {
		f.Put(t, repairtest.Rec{ID: 3000 + i, Version: 1})
	}
	run := f.Reconcile(t)
	r := f.create(t, "otto", run.ID, "w-1")[fitnessv1.RepairAction_REPAIR_ACTION_REPLAY]
	ctx, cancel := context.WithTimeout(as("vera"), 60*time.Second)
	defer cancel()
	stream, err := f.client.WatchRepair(ctx, &fitnessv1.WatchRepairRequest{RepairId: r.GetRepairId()})
	if err != nil {
		t.Fatal(err)
	}
	var states []fitnessv1.RepairState
	var done []int64
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("watching: %v", err)
		}
		p := resp.GetRepair()
		if len(states) == 0 || states[len(states)-1] != p.GetState() {
			states = append(states, p.GetState())
		}
		done = append(done, p.GetItemsDone())
	}
	if diff := cmp.Diff([]fitnessv1.RepairState{fitnessv1.RepairState_REPAIR_STATE_EXECUTING, fitnessv1.RepairState_REPAIR_STATE_AWAITING_VERIFICATION,
		fitnessv1.RepairState_REPAIR_STATE_VERIFIED}, states); diff != "" {
		t.Errorf("states watched (-want +got):\n%s", diff)
	}
	distinct := map[int64]bool{}
	for i, d := range done {
		distinct[d] = true
		if i > 0 && d < done[i-1] {
			t.Errorf("items done went back: %v", done)
		}
	}
	if len(distinct) < 4 || done[len(done)-1] != 30 {
		t.Errorf("progress watched: %v; want it rising to 30", done)
	}
	var items []*fitnessv1.RepairItem
	tok := ""
	for pages := 0; ; pages++ {
		resp, err := f.client.ListRepairItems(as("vera"), &fitnessv1.ListRepairItemsRequest{RepairId: r.GetRepairId(), PageSize: 7, PageToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, resp.GetItems()...)
		if tok = resp.GetNextPageToken(); tok == "" {
			if pages != 4 {
				t.Errorf("%d pages of 7, want 5", pages+1)
			}
			break
		}
	}
	if len(items) != 30 {
		t.Fatalf("%d items, want 30", len(items))
	}
	for i, it := range items {
		if it.GetSeq() != int64(i+1) || it.GetOutcome() != fitnessv1.RepairItemOutcome_REPAIR_ITEM_OUTCOME_APPLIED ||
			it.GetVerification() != fitnessv1.VerificationResult_VERIFICATION_RESULT_PASSED || it.GetAppliedVersion() != 1 ||
			it.GetEventId() != fmt.Sprintf("fitness-result-%d-v1", it.GetDataId()) || it.GetShardId() != f.ShardOf(it.GetDataId()) ||
			it.GetClass() != fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_MISSING_IN_TARGET || it.GetApplyTime() == nil {
			t.Errorf("item %d = %v", i, it)
		}
	}
}

func TestListRepairsFiltersAndPages(t *testing.T) {
	f := newFixture(t, options{})
	run1 := f.scenario(t)
	f.create(t, "otto", run1.ID, "l-1")
	for i := range int64(3) {
		f.Put(t, repairtest.Rec{ID: 4000 + i, Version: 1})
	}
	run2 := f.Reconcile(t) // the six of run1 are in active repairs: only the three new ones
	r2 := f.create(t, "otto", run2.ID, "l-2")
	if len(r2) != 1 || r2[fitnessv1.RepairAction_REPAIR_ACTION_REPLAY].GetItemsTotal() != 3 {
		t.Fatalf("repairs of the second run = %v", r2)
	}
	list := func(req *fitnessv1.ListRepairsRequest) []string {
		t.Helper()
		var out []string
		for {
			resp, err := f.client.ListRepairs(as("vera"), req)
			if err != nil {
				t.Fatal(err)
			}
			if req.GetPageSize() > 0 && len(resp.GetRepairs()) > int(req.GetPageSize()) {
				t.Fatalf("page of %d > page_size %d", len(resp.GetRepairs()), req.GetPageSize())
			}
			for _, r := range resp.GetRepairs() {
				out = append(out, fmt.Sprintf("%s %s %s", r.GetRunId()[:4], strings.TrimPrefix(r.GetAction().String(), "REPAIR_ACTION_"),
					strings.TrimPrefix(r.GetState().String(), "REPAIR_STATE_")))
			}
			if resp.GetNextPageToken() == "" {
				return out
			}
			req.PageToken = resp.GetNextPageToken()
		}
	}
	a, b := run1.ID[:4], run2.ID[:4]
	for _, tc := range []struct {
		name string
		req  *fitnessv1.ListRepairsRequest
		want []string
	}{
		{"all, newest first, pages of 2", &fitnessv1.ListRepairsRequest{PageSize: 2},
			[]string{b + " REPLAY EXECUTING", a + " REMOVE AWAITING_APPROVAL", a + " REBUILD AWAITING_APPROVAL", a + " TOMBSTONE EXECUTING", a + " REPLAY EXECUTING"}},
		{"one run, pages of 3", &fitnessv1.ListRepairsRequest{RunId: run1.ID, PageSize: 3},
			[]string{a + " REMOVE AWAITING_APPROVAL", a + " REBUILD AWAITING_APPROVAL", a + " TOMBSTONE EXECUTING", a + " REPLAY EXECUTING"}},
		{"one state", &fitnessv1.ListRepairsRequest{State: fitnessv1.RepairState_REPAIR_STATE_AWAITING_APPROVAL},
			[]string{a + " REMOVE AWAITING_APPROVAL", a + " REBUILD AWAITING_APPROVAL"}},
		{"run and state", &fitnessv1.ListRepairsRequest{RunId: run2.ID, State: fitnessv1.RepairState_REPAIR_STATE_EXECUTING},
			[]string{b + " REPLAY EXECUTING"}},
		{"nothing", &fitnessv1.ListRepairsRequest{State: fitnessv1.RepairState_REPAIR_STATE_VERIFIED}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, list(tc.req)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	first, err := f.client.ListRepairs(as("vera"), &fitnessv1.ListRepairsRequest{RunId: run1.ID, PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.ListRepairs(as("vera"), &fitnessv1.ListRepairsRequest{RunId: run2.ID, PageToken: first.GetNextPageToken()}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a page token of another query: %v", err)
	}
}

// Cancellation and rebuilds over RPC: WatchRebuild follows a rebuild's
// phases to its end.
func TestCancelAndRebuildOverRPC(t *testing.T) {
	f := newFixture(t, options{executor: true})
	run := f.scenario(t)
	rs := f.create(t, "otto", run.ID, "c-1")
	removal := rs[fitnessv1.RepairAction_REPAIR_ACTION_REMOVE]
	c, err := f.client.CancelRepair(as("otto"), &fitnessv1.CancelRepairRequest{RepairId: removal.GetRepairId(), Reason: "records explained"})
	if err != nil || c.GetRepair().GetState() != fitnessv1.RepairState_REPAIR_STATE_CANCELLED || c.GetRepair().GetEndTime() == nil {
		t.Fatalf("CancelRepair = %v, %v", c, err)
	}
	if _, err := f.client.CancelRepair(as("otto"), &fitnessv1.CancelRepairRequest{RepairId: removal.GetRepairId(), Reason: "again"}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("cancelling twice: %v", err)
	}
	rb := rs[fitnessv1.RepairAction_REPAIR_ACTION_REBUILD]
	if _, err := f.client.CancelRebuild(as("alice"), &fitnessv1.CancelRebuildRequest{RebuildId: rb.GetRebuildId(), Reason: "x"}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("cancelling a repair's rebuild directly: %v", err)
	}
	if _, err := f.client.VerifyRepair(as("otto"), &fitnessv1.VerifyRepairRequest{RepairId: rb.GetRepairId()}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("verifying a repair awaiting approval: %v", err)
	}
	if _, err := f.client.CancelRepair(as("otto"), &fitnessv1.CancelRepairRequest{RepairId: rb.GetRepairId(), Reason: "use a direct rebuild"}); err != nil {
		t.Fatal(err)
	}
	got, err := f.client.GetRebuild(as("vera"), &fitnessv1.GetRebuildRequest{RebuildId: rb.GetRebuildId()})
	if err != nil || got.GetRebuild().GetState() != fitnessv1.RepairState_REPAIR_STATE_CANCELLED {
		t.Fatalf("the cancelled repair's rebuild = %v, %v", got, err)
	}

	start, err := f.client.StartRebuild(as("alice"), &fitnessv1.StartRebuildRequest{RequestId: "b-1", Scope: &fitnessv1.ReconcileScope{DetectId: repairtest.DetectID},
		Epoch: 1, Reason: "school mapping fixed (INC-9)"})
	if err != nil {
		t.Fatal(err)
	}
	b := start.GetRebuild()
	if b.GetState() != fitnessv1.RepairState_REPAIR_STATE_AWAITING_APPROVAL || b.GetCreatedBy() != "alice" || b.GetEpoch() != 1 || b.GetRequestId() != "b-1" {
		t.Errorf("started rebuild = %v", b)
	}
	if _, err := f.client.StartRebuild(as("alice"), &fitnessv1.StartRebuildRequest{RequestId: "b-2", Scope: &fitnessv1.ReconcileScope{DetectId: repairtest.DetectID},
		Epoch: 2, Reason: "again"}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("a second active rebuild of the campaign: %v", err)
	}
	ctx, cancel := context.WithTimeout(as("vera"), 60*time.Second)
	defer cancel()
	stream, err := f.client.WatchRebuild(ctx, &fitnessv1.WatchRebuildRequest{RebuildId: b.GetRebuildId()})
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil || first.GetRebuild().GetState() != fitnessv1.RepairState_REPAIR_STATE_AWAITING_APPROVAL {
		t.Fatalf("first watch message = %v, %v", first, err)
	}
	if _, err := f.client.ApproveRebuild(as("bob"), &fitnessv1.ApproveRebuildRequest{RebuildId: b.GetRebuildId(), Reason: "reviewed the fix"}); err != nil {
		t.Fatal(err)
	}
	var last *fitnessv1.Rebuild
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("watching: %v", err)
		}
		last = resp.GetRebuild()
	}
	if last.GetState() != fitnessv1.RepairState_REPAIR_STATE_VERIFIED || last.GetPhase() != fitnessv1.RebuildPhase_REBUILD_PHASE_SWITCHED ||
		last.GetVerification() != fitnessv1.VerificationResult_VERIFICATION_RESULT_PASSED || last.GetApprovedBy() != "bob" || last.GetRowsWritten() != 15 ||
		last.GetEndTime() == nil {
		t.Errorf("last watched rebuild = %v", last)
	}
	gr, err := f.client.GetRebuild(as("vera"), &fitnessv1.GetRebuildRequest{RebuildId: b.GetRebuildId()})
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, tr := range gr.GetTransitions() {
		notes = append(notes, strings.TrimPrefix(tr.GetToState().String(), "REPAIR_STATE_")+" "+strings.SplitN(tr.GetNote(), ":", 2)[0])
	}
	if diff := cmp.Diff([]string{"AWAITING_APPROVAL requested; awaiting an admin's approval", "EXECUTING approved", "EXECUTING phase BUILDING",
		"EXECUTING phase CATCHING_UP", "EXECUTING phase VERIFYING", "EXECUTING phase SWITCHING", "EXECUTING phase SWITCHED",
		"VERIFIED rebuilt 15 rows at epoch 1; verified, readers switched"}, notes); diff != "" {
		t.Errorf("rebuild transitions (-want +got):\n%s", diff)
	}
	list, err := f.client.ListRebuilds(as("vera"), &fitnessv1.ListRebuildsRequest{DetectId: repairtest.DetectID})
	if err != nil || len(list.GetRebuilds()) != 2 {
		t.Errorf("ListRebuilds = %v, %v", list, err)
	}
	var actions []string
	recs, _ := f.audit.List(context.Background(), "", 100)
	for _, r := range recs {
		actions = append(actions, r.Caller+" "+r.Action)
	}
	sort.Strings(actions)
	if diff := cmp.Diff([]string{"alice rebuild.cancel", "alice rebuild.start", "alice rebuild.start", "bob rebuild.approve",
		"otto repair.cancel", "otto repair.cancel", "otto repair.cancel", "otto repair.create", "otto repair.verify"}, actions); diff != "" {
		t.Errorf("audited actions (-want +got):\n%s", diff)
	}
}
