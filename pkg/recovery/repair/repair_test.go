package repair_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/recovery/repair"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/testkit/repairtest"
)

func TestActionFor(t *testing.T) {
	for _, tc := range []struct {
		class    reconcile.Class
		want     repair.Action
		approval bool
	}{
		{reconcile.MissingInTarget, repair.ActionReplay, false},
		{reconcile.StaleTargetVersion, repair.ActionReplay, false},
		{reconcile.DeletionNotApplied, repair.ActionTombstone, false},
		{reconcile.ContentMismatch, repair.ActionRebuild, true},
		{reconcile.UnexpectedTargetRecord, repair.ActionRemove, true},
		{reconcile.TargetAheadOfSource, repair.ActionRemove, true},
	} {
		t.Run(tc.class.String(), func(t *testing.T) {
			got, ok := repair.ActionFor(tc.class)
			if !ok || got != tc.want || got.NeedsApproval() != tc.approval {
				t.Errorf("ActionFor(%s) = %s (approval %t), %t; want %s (approval %t)", tc.class, got, got.NeedsApproval(), ok, tc.want, tc.approval)
			}
		})
	}
	if _, ok := repair.ActionFor(0); ok {
		t.Error("ActionFor(0) has an action")
	}
}

func TestExecutorConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*repair.ExecutorConfig)
		ok     bool
	}{
		{"defaults", func(*repair.ExecutorConfig) {}, true},
		{"no rate", func(c *repair.ExecutorConfig) { c.RowsPerSecond = 0 }, false},
		{"lease shorter than three polls", func(c *repair.ExecutorConfig) { c.Lease = 2 * c.Poll }, false},
		{"verify timeout below its poll", func(c *repair.ExecutorConfig) { c.VerifyTimeout = c.VerifyPoll / 2 }, false},
		{"idle poll below the poll", func(c *repair.ExecutorConfig) { c.IdlePoll = c.Poll / 2 }, false},
		{"idle poll 0: ten polls", func(c *repair.ExecutorConfig) { c.IdlePoll = 0 }, true},
		{"no attempts", func(c *repair.ExecutorConfig) { c.ItemAttempts = 0 }, false},
		{"too many workers", func(c *repair.ExecutorConfig) { c.WorkersPerShard = 65 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := repair.DefaultExecutorConfig()
			tc.change(&c)
			if err := c.Validate(); (err == nil) != tc.ok {
				t.Errorf("Validate() = %v, want ok=%t", err, tc.ok)
			}
		})
	}
}

// A plan is a dry run: counts per action and shard, origins of removals,
// and not one row written anywhere.
func TestPlanChangesNothing(t *testing.T) {
	f := newFixture(t, repair.ManagerConfig{})
	run := f.scenario(t)
	ctx := context.Background()
	before := f.RowCounts(t)
	p, err := f.mgr.Plan(ctx, repair.Selection{RunID: run.ID})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, f.RowCounts(t)); diff != "" {
		t.Errorf("the plan changed the control database (-before +after):\n%s", diff)
	}
	want := map[repair.Action]int64{repair.ActionReplay: 2, repair.ActionTombstone: 1, repair.ActionRebuild: 1, repair.ActionRemove: 2}
	if diff := cmp.Diff(want, p.Counts()); diff != "" {
		t.Errorf("counts per action (-want +got):\n%s", diff)
	}
	wantShards := map[string]map[repair.Action]int64{}
	for id, a := range map[int64]repair.Action{repairtest.IDMissing: repair.ActionReplay, repairtest.IDStale: repair.ActionReplay, repairtest.IDDeleted: repair.ActionTombstone,
		repairtest.IDContent: repair.ActionRebuild, repairtest.IDUnexpected: repair.ActionRemove, repairtest.IDAhead: repair.ActionRemove} {
		s := f.ShardOf(id)
		if wantShards[s] == nil {
			wantShards[s] = map[repair.Action]int64{}
		}
		wantShards[s][a]++
	}
	if diff := cmp.Diff(wantShards, p.ShardCounts()); diff != "" {
		t.Errorf("counts per shard (-want +got):\n%s", diff)
	}
	origins := map[int64][]string{}
	for _, it := range p.Items {
		for _, o := range it.Origins {
			origins[it.DataID] = append(origins[it.DataID], fmt.Sprintf("v%d e%d %s %s", o.Version, o.Epoch, o.EventID, o.ShardID))
		}
	}
	wantOrigins := map[int64][]string{
		repairtest.IDUnexpected: {fmt.Sprintf("v1 e0 fitness-result-%d-v1 %s", repairtest.IDUnexpected, f.ShardOf(repairtest.IDUnexpected))},
		repairtest.IDAhead:      {fmt.Sprintf("v3 e0 fitness-result-%d-v3 %s", repairtest.IDAhead, f.ShardOf(repairtest.IDAhead))}, // only the rows a removal deletes
	}
	if diff := cmp.Diff(wantOrigins, origins); diff != "" {
		t.Errorf("origins of removals (-want +got):\n%s", diff)
	}
	if p.Skipped != 0 || p.EpochFloor != 0 || p.Truncated {
		t.Errorf("plan = skipped %d, floor %d, truncated %t", p.Skipped, p.EpochFloor, p.Truncated)
	}

	for _, tc := range []struct {
		name  string
		sel   repair.Selection
		check func(error) bool
	}{
		{"unknown run", repair.Selection{RunID: "nope"}, func(err error) bool { return errors.Is(err, reconcile.ErrRunNotFound) }},
		{"discrepancy of another run", repair.Selection{RunID: run.ID, DiscrepancyIDs: []string{"0123456789abcdef0123456789abcdef"}},
			func(err error) bool {
				var fe *apierr.FieldError
				return errors.As(err, &fe) && fe.Field == "discrepancy_ids[0]"
			}},
		{"epoch not above the floor", repair.Selection{RunID: run.ID, RebuildEpoch: -1},
			func(err error) bool {
				var fe *apierr.FieldError
				return errors.As(err, &fe) && fe.Field == "rebuild_epoch"
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := f.mgr.Plan(ctx, tc.sel); !tc.check(err) {
				t.Errorf("Plan = %v", err)
			}
		})
	}
	one, err := f.mgr.Plan(ctx, repair.Selection{RunID: run.ID, DiscrepancyIDs: f.ids(t, run.ID, repairtest.IDStale)})
	if err != nil || len(one.Items) != 1 || one.Items[0].DataID != repairtest.IDStale || one.Items[0].SourceVersion != 2 || one.Items[0].TargetVersion != 1 {
		t.Errorf("plan of one discrepancy = %+v, %v", one.Items, err)
	}
	if diff := cmp.Diff(before, f.RowCounts(t)); diff != "" {
		t.Errorf("plans changed the control database (-before +after):\n%s", diff)
	}
}

// The same request_id returns the same repairs; reused for another request
// it is refused; a discrepancy is in at most one active repair.
func TestCreateIsIdempotentByRequestID(t *testing.T) {
	f := newFixture(t, repair.ManagerConfig{})
	run := f.scenario(t)
	ctx := context.Background()
	req := repair.CreateRequest{Selection: repair.Selection{RunID: run.ID, RebuildEpoch: 1}, RequestID: "req-1", Reason: "INC-7", By: "otto"}

	noEpoch := req
	noEpoch.RequestID, noEpoch.RebuildEpoch = "req-0", 0
	var fe *apierr.FieldError
	if _, err := f.mgr.Create(ctx, noEpoch); !errors.As(err, &fe) || fe.Field != "rebuild_epoch" {
		t.Fatalf("create with a rebuild and no epoch = %v; want a rebuild_epoch field error", err)
	}
	first, err := f.mgr.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	got := map[repair.Action]string{}
	for _, r := range first {
		got[r.Action] = fmt.Sprintf("%s approval=%t items=%d", r.State, r.RequiresApproval, r.ItemsTotal)
	}
	want := map[repair.Action]string{
		repair.ActionReplay:    "EXECUTING approval=false items=2",
		repair.ActionTombstone: "EXECUTING approval=false items=1",
		repair.ActionRebuild:   "AWAITING_APPROVAL approval=true items=1",
		repair.ActionRemove:    "AWAITING_APPROVAL approval=true items=2",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("created repairs (-want +got):\n%s", diff)
	}
	counts := f.RowCounts(t)

	for _, tc := range []struct {
		name  string
		req   repair.CreateRequest
		check func([]repair.Repair, error) error
	}{
		{"same request again", req, func(rs []repair.Repair, err error) error {
			if err != nil {
				return err
			}
			if diff := cmp.Diff(ids(first), ids(rs)); diff != "" {
				return fmt.Errorf("other repairs (-first +again):\n%s", diff)
			}
			return nil
		}},
		{"same id, other reason", func() repair.CreateRequest { r := req; r.Reason = "other"; return r }(), func(_ []repair.Repair, err error) error {
			if !errors.Is(err, apierr.ErrRequestReused) {
				return fmt.Errorf("got %w, want ErrRequestReused", err)
			}
			return nil
		}},
		{"new id, everything covered", func() repair.CreateRequest { r := req; r.RequestID = "req-2"; return r }(), func(_ []repair.Repair, err error) error {
			if !errors.Is(err, apierr.FailedPrecondition) || !strings.Contains(err.Error(), "nothing to repair") {
				return fmt.Errorf("got %w, want nothing to repair", err)
			}
			return nil
		}},
		{"new id, a covered discrepancy named", func() repair.CreateRequest {
			r := req
			r.RequestID, r.DiscrepancyIDs = "req-3", f.ids(t, run.ID, repairtest.IDMissing)
			return r
		}(), func(_ []repair.Repair, err error) error {
			if !errors.Is(err, apierr.FailedPrecondition) || !strings.Contains(err.Error(), "active repair") {
				return fmt.Errorf("got %w, want already in an active repair", err)
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.check(f.mgr.Create(ctx, tc.req)); err != nil {
				t.Error(err)
			}
			if diff := cmp.Diff(counts, f.RowCounts(t)); diff != "" {
				t.Errorf("rows changed (-before +after):\n%s", diff)
			}
		})
	}
	// Concurrent retries of one new request create it once.
	for _, r := range first {
		if _, err := f.mgr.Cancel(ctx, r.ID, "otto", "redo"); err != nil {
			t.Fatal(err)
		}
	}
	race := repair.CreateRequest{Selection: repair.Selection{RunID: run.ID, RebuildEpoch: 1}, RequestID: "req-race", Reason: "redo", By: "otto"}
	results := make([][]string, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			rs, err := f.mgr.Create(ctx, race)
			results[i], errs[i] = ids(rs), err
		})
	}
	wg.Wait()
	for i := range 4 {
		if errs[i] != nil {
			t.Errorf("concurrent retry %d: %v", i, errs[i])
		} else if diff := cmp.Diff(results[0], results[i]); diff != "" || len(results[i]) != 4 {
			t.Errorf("concurrent retries returned different repairs (-first +this):\n%s", diff)
		}
	}
}

func ids(rs []repair.Repair) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

// Approval: only repairs that need it, only while awaiting it, and never by
// the requester unless the single-operator setting allows it.
func TestApprovalRules(t *testing.T) {
	for _, tc := range []struct {
		name      string
		allowSelf bool
		action    repair.Action
		approver  string
		twice     bool
		wantErr   string // substring of the ErrFailedPrecondition; empty: approved
	}{
		{"another admin approves a removal", false, repair.ActionRemove, "bob", false, ""},
		{"another admin approves a rebuild", false, repair.ActionRebuild, "bob", false, ""},
		{"the requester cannot approve", false, repair.ActionRemove, "otto", false, "cannot approve"},
		{"the requester may with the single-operator setting", true, repair.ActionRemove, "otto", false, ""},
		{"a replay needs no approval", false, repair.ActionReplay, "bob", false, "needs no approval"},
		{"a tombstone needs no approval", true, repair.ActionTombstone, "otto", false, "needs no approval"},
		{"approved twice", false, repair.ActionRemove, "bob", true, "not awaiting approval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, repair.ManagerConfig{AllowSelfApproval: tc.allowSelf})
			run := f.scenario(t)
			ctx := context.Background()
			rs, err := f.mgr.Create(ctx, repair.CreateRequest{Selection: repair.Selection{RunID: run.ID, RebuildEpoch: 1}, RequestID: "r", Reason: "INC-1", By: "otto"})
			if err != nil {
				t.Fatal(err)
			}
			target := byAction(rs)[tc.action]
			if tc.twice {
				if _, err := f.mgr.Approve(ctx, target.ID, tc.approver, "ok"); err != nil {
					t.Fatal(err)
				}
			}
			before := f.RowCounts(t)
			got, err := f.mgr.Approve(ctx, target.ID, tc.approver, "looked at the origins")
			if tc.wantErr != "" {
				if !errors.Is(err, apierr.FailedPrecondition) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Approve = %v; want a precondition failure containing %q", err, tc.wantErr)
				}
				if diff := cmp.Diff(before, f.RowCounts(t)); diff != "" {
					t.Errorf("a refused approval changed rows (-before +after):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.State != repair.StateExecuting || got.ApprovedBy != tc.approver || got.ApproveReason != "looked at the origins" || got.Approved.IsZero() {
				t.Errorf("approved repair = %+v", got)
			}
			if tc.action == repair.ActionRebuild {
				rb, err := f.Store.GetRebuild(ctx, got.RebuildID)
				if err != nil || rb.State != repair.StateExecuting || rb.ApprovedBy != tc.approver || rb.RepairID != got.ID {
					t.Errorf("the repair's rebuild = %+v, %v", rb, err)
				}
			}
		})
	}
}

// Replays, tombstones, removals and a rebuild run, are verified by a
// comparison of exactly their keys, and resolve their discrepancies only
// then; every transition is recorded.
func TestExecutionAndVerification(t *testing.T) {
	f := newFixture(t, repair.ManagerConfig{})
	f.rep.Delay = 700 * time.Millisecond // replays travel relay -> Pulsar -> consumer
	run := f.scenario(t)
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	f.startExecutor(t, fastConfig(), reg)
	rs, err := f.mgr.Create(ctx, repair.CreateRequest{Selection: repair.Selection{RunID: run.ID, RebuildEpoch: 1}, RequestID: "r", Reason: "INC-2", By: "otto"})
	if err != nil {
		t.Fatal(err)
	}
	by := byAction(rs)
	for _, a := range []repair.Action{repair.ActionRebuild, repair.ActionRemove} {
		if _, err := f.mgr.Approve(ctx, by[a].ID, "bob", "origins checked"); err != nil {
			t.Fatal(err)
		}
	}
	awaiting := f.WaitState(t, by[repair.ActionReplay].ID, repair.StateAwaitingVerification, 20*time.Second)
	if awaiting.ItemsDone != 2 || awaiting.VerifyDeadline.IsZero() {
		t.Errorf("awaiting verification = %+v", awaiting)
	}
	if res := f.Resolved(t, run.ID); res[repairtest.IDMissing] || res[repairtest.IDStale] {
		t.Error("discrepancies marked resolved before their repair was verified")
	}
	for _, r := range rs {
		got := f.WaitRepair(t, r.ID, 30*time.Second, repair.Repair.Terminal)
		if got.State != repair.StateVerified || got.Verification != repair.VerifyPassed || got.ItemsDone != got.ItemsTotal || got.Ended.IsZero() {
			t.Errorf("%s repair ended %+v", r.Action, got)
		}
	}
	for id, ok := range f.Resolved(t, run.ID) {
		if !ok {
			t.Errorf("discrepancy of %d not resolved after a verified repair", id)
		}
	}
	if again := f.Reconcile(t); again.Discrepancies != 0 {
		t.Errorf("a new reconciliation finds %d discrepancies after the repairs", again.Discrepancies)
	}

	wantStates := map[repair.Action][]string{
		repair.ActionReplay:    {">EXECUTING", "EXECUTING>AWAITING_VERIFICATION", "AWAITING_VERIFICATION>VERIFIED"},
		repair.ActionTombstone: {">EXECUTING", "EXECUTING>AWAITING_VERIFICATION", "AWAITING_VERIFICATION>VERIFIED"},
		repair.ActionRebuild:   {">AWAITING_APPROVAL", "AWAITING_APPROVAL>EXECUTING", "EXECUTING>AWAITING_VERIFICATION", "AWAITING_VERIFICATION>VERIFIED"},
		repair.ActionRemove:    {">AWAITING_APPROVAL", "AWAITING_APPROVAL>EXECUTING", "EXECUTING>AWAITING_VERIFICATION", "AWAITING_VERIFICATION>VERIFIED"},
	}
	for a, want := range wantStates {
		if diff := cmp.Diff(want, f.states(t, by[a].ID)); diff != "" {
			t.Errorf("%s transitions (-want +got):\n%s", a, diff)
		}
	}
	type itemView struct {
		Outcome, Verification string
		Applied               int64
		EventID               string
		Removed               int64
	}
	got := map[int64]itemView{}
	for _, a := range repair.Actions {
		for id, it := range f.items(t, by[a].ID) {
			got[id] = itemView{it.Outcome, it.Verification, it.AppliedVersion, it.EventID, it.RowsRemoved}
		}
	}
	ev := func(id, v int64) string { return fmt.Sprintf("fitness-result-%d-v%d", id, v) }
	want := map[int64]itemView{
		repairtest.IDMissing:    {"APPLIED", "PASSED", 1, ev(repairtest.IDMissing, 1), 0},
		repairtest.IDStale:      {"APPLIED", "PASSED", 2, ev(repairtest.IDStale, 2), 0},
		repairtest.IDDeleted:    {"APPLIED", "PASSED", 2, ev(repairtest.IDDeleted, 2), 0},
		repairtest.IDContent:    {"APPLIED", "PASSED", 0, "", 0},
		repairtest.IDUnexpected: {"APPLIED", "PASSED", 0, "", 1},
		repairtest.IDAhead:      {"APPLIED", "PASSED", 1, ev(repairtest.IDAhead, 1), 1}, // rows above v1 removed, then v1 replayed
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{fmt.Sprintf("%d>0", repairtest.IDUnexpected), fmt.Sprintf("%d>1", repairtest.IDAhead)}, sortedStrings(f.ed.Removed())); diff != "" {
		t.Errorf("removals (-want +got):\n%s", diff)
	}
	rb, err := f.Store.GetRebuild(ctx, by[repair.ActionRebuild].RebuildID)
	if err != nil || rb.State != repair.StateVerified || rb.Phase != repair.PhaseSwitched || rb.Verification != repair.VerifyPassed || rb.RowsWritten != 25 {
		t.Errorf("rebuild = %+v, %v", rb, err)
	}
	if diff := cmp.Diff([]string{">AWAITING_APPROVAL", "AWAITING_APPROVAL>EXECUTING", "EXECUTING: phase BUILDING", "EXECUTING: phase CATCHING_UP",
		"EXECUTING: phase VERIFYING", "EXECUTING: phase SWITCHING", "EXECUTING: phase SWITCHED", "EXECUTING>VERIFIED"}, f.states(t, rb.ID)); diff != "" {
		t.Errorf("rebuild transitions (-want +got):\n%s", diff)
	}
	// The signals are refreshed at the executor's pace: every idle poll
	// (500 ms here) once nothing runs.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		v, _ := metricValue(t, reg, "repair_repairs", "state", "VERIFIED")
		if v == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("repair_repairs{state=VERIFIED} = %v 10s after the repairs ended, want 4", v)
			break
		}
	}
	// 2 replays + 1 tombstone + 2 removed rows + 1 replay after a removal + 25 rebuilt rows.
	if v, n := metricValue(t, reg, "repair_rows_repaired_total", "", ""); v != 31 || n != 4 {
		t.Errorf("repair_rows_repaired_total = %v over %d series, want 31 over 4", v, n)
	}
}

// The unresolved-records signal counts every run and campaign (a record two
// runs found counts once), and a verified repair also resolves what earlier
// runs found for its records: the clean comparison made them obsolete.
func TestUnresolvedRecordsAcrossRuns(t *testing.T) {
	f := newFixture(t, repair.ManagerConfig{})
	first := f.scenario(t)
	second := f.Reconcile(t) // finds the same six
	reg := prometheus.NewRegistry()
	f.startExecutor(t, fastConfig(), reg)
	unresolved := func() map[string]float64 {
		t.Helper()
		out := map[string]float64{}
		for _, c := range []reconcile.Class{reconcile.MissingInTarget, reconcile.StaleTargetVersion, reconcile.DeletionNotApplied,
			reconcile.ContentMismatch, reconcile.UnexpectedTargetRecord, reconcile.TargetAheadOfSource} {
			if v, _ := metricValue(t, reg, "discrepancy_unresolved_records", "class", c.String()); v != 0 {
				out[c.String()] = v
			}
		}
		return out
	}
	all := map[string]float64{"MISSING_IN_TARGET": 1, "STALE_TARGET_VERSION": 1, "DELETION_NOT_APPLIED": 1, "CONTENT_MISMATCH": 1,
		"UNEXPECTED_TARGET_RECORD": 1, "TARGET_AHEAD_OF_SOURCE": 1}
	waitFor(t, "the signal counting each record once", func() bool { return cmp.Equal(all, unresolved()) })

	// The replay of the first run's two records.
	ds := f.Discrepancies(t, first.ID)
	rs, err := f.mgr.Create(context.Background(), repair.CreateRequest{Selection: repair.Selection{RunID: first.ID,
		DiscrepancyIDs: []string{ds[repairtest.IDMissing].ID, ds[repairtest.IDStale].ID}}, RequestID: "replay", Reason: "INC-9", By: "otto"})
	if err != nil {
		t.Fatal(err)
	}
	f.WaitState(t, rs[0].ID, repair.StateVerified, 30*time.Second)
	for _, run := range []string{first.ID, second.ID} {
		res := f.Resolved(t, run)
		if !res[repairtest.IDMissing] || !res[repairtest.IDStale] || res[repairtest.IDDeleted] {
			t.Errorf("run %s resolved = %v; want the replayed records (%d, %d) only", run, res, repairtest.IDMissing, repairtest.IDStale)
		}
	}
	delete(all, "MISSING_IN_TARGET")
	delete(all, "STALE_TARGET_VERSION")
	waitFor(t, "the signal without the repaired records", func() bool { return cmp.Equal(all, unresolved()) })
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func sortedStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// metricValue returns the value of the series of name whose label has value
// (any series when label is empty), summed.
func metricValue(t *testing.T, reg *prometheus.Registry, name, label, value string) (float64, int) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	n := 0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := label == ""
			for _, l := range m.GetLabel() {
				match = match || (l.GetName() == label && l.GetValue() == value)
			}
			if match {
				n++
				sum += m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
	}
	return sum, n
}

// A replay that never arrives fails verification at the deadline with the
// keys still wrong; the discrepancies stay unresolved; once the projection
// is right, VerifyRepair verifies the repair.
func TestVerificationFailsAtDeadline(t *testing.T) {
	f := newFixture(t, repair.ManagerConfig{})
	f.rep.Drop = func(int64) bool { return true }
	run := f.scenario(t)
	ctx := context.Background()
	cfg := fastConfig()
	cfg.VerifyTimeout = 800 * time.Millisecond
	f.startExecutor(t, cfg, nil)
	rs, err := f.mgr.Create(ctx, repair.CreateRequest{Selection: repair.Selection{RunID: run.ID, DiscrepancyIDs: f.ids(t, run.ID, repairtest.IDMissing, repairtest.IDStale)},
		RequestID: "r", Reason: "INC-3", By: "otto"})
	if err != nil {
		t.Fatal(err)
	}
	r := f.WaitRepair(t, rs[0].ID, 20*time.Second, repair.Repair.Terminal)
	if r.State != repair.StateFailed || r.Verification != repair.VerifyFailed || !strings.Contains(r.Message, "2 of 2 keys still differ") ||
		!strings.Contains(r.Message, fmt.Sprint(repairtest.IDMissing)+" (MISSING_IN_TARGET)") {
		t.Fatalf("repair = %+v", r)
	}
	for id, it := range f.items(t, r.ID) {
		if it.Outcome != repair.OutcomeApplied || it.Verification != repair.VerifyFailed {
			t.Errorf("item %d = %s / %s", id, it.Outcome, it.Verification)
		}
	}
	if res := f.Resolved(t, run.ID); res[repairtest.IDMissing] || res[repairtest.IDStale] {
		t.Error("discrepancies resolved by a failed verification")
	}
	f.Deliver(t, repairtest.Rec{ID: repairtest.IDMissing, Version: 1})
	f.Deliver(t, repairtest.Rec{ID: repairtest.IDStale, Version: 2, Result: "2.31"})
	got, res, err := f.mgr.Verify(ctx, r.ID, "otto")
	if err != nil || got.State != repair.StateVerified || res.Passed != 2 || res.Mismatched != 0 {
		t.Fatalf("Verify = %+v, %+v, %v", got, res, err)
	}
	if res := f.Resolved(t, run.ID); !res[repairtest.IDMissing] || !res[repairtest.IDStale] {
		t.Error("discrepancies not resolved after the verification passed")
	}
	if _, _, err := f.mgr.Verify(ctx, r.ID, "otto"); !errors.Is(err, apierr.FailedPrecondition) {
		t.Errorf("verifying a verified repair = %v", err)
	}
}

// A record whose source moved on during the repair: the newer version is
// replayed and wins; the item says so; the comparison is clean.
func TestSupersededByNewerVersion(t *testing.T) {
	f := newFixture(t, repair.ManagerConfig{})
	run := f.scenario(t)
	f.Put(t, repairtest.Rec{ID: repairtest.IDStale, Version: 3, Result: "2.41"}) // a correction after reconciliation
	ctx := context.Background()
	f.startExecutor(t, fastConfig(), nil)
	rs, err := f.mgr.Create(ctx, repair.CreateRequest{Selection: repair.Selection{RunID: run.ID, DiscrepancyIDs: f.ids(t, run.ID, repairtest.IDStale)},
		RequestID: "r", Reason: "INC-4", By: "otto"})
	if err != nil {
		t.Fatal(err)
	}
	r := f.WaitRepair(t, rs[0].ID, 20*time.Second, repair.Repair.Terminal)
	it := f.items(t, r.ID)[repairtest.IDStale]
	if r.State != repair.StateVerified || it.Outcome != repair.OutcomeSuperseded || it.AppliedVersion != 3 || it.SourceVersion != 2 ||
		it.EventID != fmt.Sprintf("fitness-result-%d-v3", repairtest.IDStale) || !strings.Contains(it.Message, "moved to version 3") {
		t.Errorf("repair %s, item %+v", r.State, it)
	}
}

// Replays are bounded per shard: no shard exceeds the rate, and shards do
// not share one budget.
func TestRateLimitPerShard(t *testing.T) {
	f := newFixture(t, repair.ManagerConfig{})
	for i := range int64(60) {
		f.Put(t, repairtest.Rec{ID: 5000 + i, Version: 1})
	}
	run := f.Reconcile(t)
	cfg := fastConfig()
	cfg.RowsPerSecond, cfg.WorkersPerShard = 20, 4
	f.startExecutor(t, cfg, nil)
	rs, err := f.mgr.Create(context.Background(), repair.CreateRequest{Selection: repair.Selection{RunID: run.ID}, RequestID: "r", Reason: "backfill", By: "otto"})
	if err != nil {
		t.Fatal(err)
	}
	f.WaitState(t, rs[0].ID, repair.StateVerified, 30*time.Second)
	times := f.rep.Times()
	if len(times) != 2 {
		t.Fatalf("replays on %d shards, want 2", len(times))
	}
	for shard, ts := range times {
		// In any window of one second at most rate + burst (1) replays.
		for i := range ts {
			n := 0
			for _, u := range ts[i:] {
				if u.Sub(ts[i]) < time.Second {
					n++
				}
			}
			if n > 21 {
				t.Errorf("%s: %d replays within one second of %s; the rate is 20/s", shard, n, ts[i].Format(time.StampMilli))
				break
			}
		}
		if span, min := ts[len(ts)-1].Sub(ts[0]), time.Duration(float64(len(ts)-1)/20*0.9*float64(time.Second)); span < min {
			t.Errorf("%s: %d replays in %s; at 20/s they need at least %s", shard, len(ts), span, min)
		}
	}
	// That the budget is per shard, not shared, is TestBudgetIsPerShard
	// (a shared budget is also what a slow machine looks like here).
}

// Cancelling an executing repair stops it: no more replays, the rest stays
// PENDING, the discrepancies are free for a new repair.
func TestCancelStopsExecution(t *testing.T) {
	f := newFixture(t, repair.ManagerConfig{})
	for i := range int64(40) {
		f.Put(t, repairtest.Rec{ID: 6000 + i, Version: 1})
	}
	run := f.Reconcile(t)
	cfg := fastConfig()
	cfg.RowsPerSecond = 5
	f.startExecutor(t, cfg, nil)
	ctx := context.Background()
	rs, err := f.mgr.Create(ctx, repair.CreateRequest{Selection: repair.Selection{RunID: run.ID}, RequestID: "r", Reason: "backfill", By: "otto"})
	if err != nil {
		t.Fatal(err)
	}
	f.WaitRepair(t, rs[0].ID, 20*time.Second, func(r repair.Repair) bool { return r.ItemsDone >= 3 })
	got, err := f.mgr.Cancel(ctx, rs[0].ID, "otto", "wrong campaign")
	if err != nil || got.State != repair.StateCancelled || got.Ended.IsZero() {
		t.Fatalf("Cancel = %+v, %v", got, err)
	}
	time.Sleep(300 * time.Millisecond) // in-flight items finish
	calls := total(f.rep.Calls())
	time.Sleep(time.Second)
	if after := total(f.rep.Calls()); after != calls {
		t.Errorf("replays went on after the cancellation: %d -> %d", calls, after)
	}
	pending := 0
	for _, it := range f.items(t, got.ID) {
		if it.Outcome == repair.OutcomePending {
			pending++
		}
	}
	if pending < 40-calls || pending == 0 {
		t.Errorf("%d items PENDING after %d replays", pending, calls)
	}
	if diff := cmp.Diff([]string{">EXECUTING", "EXECUTING>CANCELLED"}, f.states(t, got.ID)); diff != "" {
		t.Errorf("transitions (-want +got):\n%s", diff)
	}
	if _, err := f.mgr.Cancel(ctx, got.ID, "otto", "again"); !errors.Is(err, apierr.FailedPrecondition) {
		t.Errorf("cancelling a cancelled repair = %v", err)
	}
	again, err := f.mgr.Create(ctx, repair.CreateRequest{Selection: repair.Selection{RunID: run.ID}, RequestID: "r2", Reason: "backfill", By: "otto"})
	if err != nil || len(again) != 1 || again[0].ItemsTotal != 40 {
		t.Errorf("a new repair of the same discrepancies = %+v, %v", again, err)
	}
}

func total(m map[int64]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// An executor stopped mid-repair (its context cancelled while items were in
// flight, their replays sent but not recorded) leaves the repair EXECUTING;
// a new executor on the same store finishes it. Items recorded as applied
// are not replayed again; the interrupted ones are re-armed with the same
// version and event id. Item by item (batch 1) and in batches of 10, where
// a whole batch is in flight until its one control commit.
func TestCrashResume(t *testing.T) {
	for _, batch := range []int{1, 10} {
		t.Run(fmt.Sprintf("batch %d", batch), func(t *testing.T) { crashResume(t, batch) })
	}
}

func crashResume(t *testing.T, batch int) {
	f := newFixture(t, repair.ManagerConfig{})
	for i := range int64(30) {
		f.Put(t, repairtest.Rec{ID: 7000 + i, Version: 1})
	}
	run := f.Reconcile(t)
	var crashing atomic.Bool
	crashing.Store(true)
	var n atomic.Int64
	f.rep.After = func(ctx context.Context, _ int64) error {
		if crashing.Load() && n.Add(1) > 10 {
			<-ctx.Done() // the process dies here: the event went out, the executor never learns
			return ctx.Err()
		}
		return nil
	}
	cfg := fastConfig()
	cfg.BatchSize = batch
	stop := f.startExecutor(t, cfg, nil)
	ctx := context.Background()
	rs, err := f.mgr.Create(ctx, repair.CreateRequest{Selection: repair.Selection{RunID: run.ID}, RequestID: "r", Reason: "backfill", By: "otto"})
	if err != nil {
		t.Fatal(err)
	}
	// A deadline for a loaded machine (make test's MariaDB pass missed 20 s
	// once with 13 of the 14 replays in).
	deadline := time.Now().Add(60 * time.Second)
	for n.Load() < 10+int64(2*cfg.WorkersPerShard) { // every worker of both shards stuck
		if time.Now().After(deadline) {
			t.Fatalf("%d replays; the workers never got stuck", n.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	mid, err := f.Store.GetRepair(ctx, rs[0].ID)
	if err != nil || mid.State != repair.StateExecuting || mid.ItemsDone >= 30 || mid.LeaseOwner != "" {
		t.Fatalf("after the stop: %+v, %v", mid, err)
	}
	appliedBefore := map[int64]bool{}
	for id, it := range f.items(t, mid.ID) {
		appliedBefore[id] = it.Outcome == repair.OutcomeApplied
	}
	crashing.Store(false)
	f.startExecutor(t, cfg, nil)
	done := f.WaitRepair(t, mid.ID, 30*time.Second, repair.Repair.Terminal)
	if done.State != repair.StateVerified || done.ItemsDone != 30 || done.ItemsFailed != 0 {
		t.Fatalf("resumed repair = %+v", done)
	}
	twice := 0
	for id, evs := range f.rep.Events() {
		switch {
		case appliedBefore[id] && len(evs) != 1:
			t.Errorf("%d was recorded as applied before the stop and replayed %d times", id, len(evs))
		case len(evs) > 2:
			t.Errorf("%d replayed %d times", id, len(evs))
		case len(evs) == 2:
			twice++
			if evs[0] != evs[1] {
				t.Errorf("%d re-armed with another event: %v", id, evs)
			}
		}
	}
	if inFlight := 2 * cfg.WorkersPerShard * batch; len(f.rep.Events()) != 30 || twice == 0 || twice > inFlight {
		t.Errorf("%d records replayed, %d of them twice; want 30, and only the %d in flight twice", len(f.rep.Events()), twice, inFlight)
	}
}

// Replays go in batches (one ReplayBatch, one control commit each) within
// the shard's rate; an item of a batch that fails is tried alone with its
// remaining attempts and fails by itself: the other 29 are applied.
func TestReplaysGoInBatches(t *testing.T) {
	f := newFixture(t, repair.ManagerConfig{})
	const bad = 8013
	for i := range int64(30) {
		f.Put(t, repairtest.Rec{ID: 8000 + i, Version: 1})
	}
	run := f.Reconcile(t)
	var badCalls atomic.Int64
	f.rep.Before = func(_ context.Context, id int64) error {
		if id == bad {
			badCalls.Add(1)
			return errors.New("shard refused the outbox row")
		}
		return nil
	}
	f.startExecutor(t, fastConfig(), nil)
	rs, err := f.mgr.Create(context.Background(), repair.CreateRequest{Selection: repair.Selection{RunID: run.ID}, RequestID: "r", Reason: "backfill", By: "otto"})
	if err != nil {
		t.Fatal(err)
	}
	r := f.WaitRepair(t, rs[0].ID, 20*time.Second, repair.Repair.Terminal)
	if r.State != repair.StateFailed || r.ItemsDone != 29 || r.ItemsFailed != 1 {
		t.Errorf("repair = %+v; want FAILED with 29 applied and 1 failed", r)
	}
	// 30 items over two shards in batches of at most 10: at most 4 batches
	// (2 per shard), at least 3.
	if b := f.rep.Batches(); b < 3 || b > 4 {
		t.Errorf("%d batches for 30 items in batches of 10 over two shards", b)
	}
	its := f.items(t, r.ID)
	if it := its[bad]; it.Outcome != repair.OutcomeFailed || it.Attempts != 3 || badCalls.Load() != 3 {
		t.Errorf("failed item = %+v after %d calls; want FAILED after 3 attempts (one in its batch, two alone)", it, badCalls.Load())
	}
	for id, it := range its {
		if id != bad && (it.Outcome != repair.OutcomeApplied || it.Attempts != 1 || it.AppliedVersion != 1) {
			t.Errorf("item %d = %+v; want APPLIED at the first attempt", id, it)
		}
	}
}

// An item that cannot be applied fails after its attempts; the repair fails
// without verification, the others stay applied, nothing is resolved.
func TestItemFailureFailsTheRepair(t *testing.T) {
	f := newFixture(t, repair.ManagerConfig{})
	run := f.scenario(t)
	f.rep.Before = func(_ context.Context, id int64) error {
		if id == repairtest.IDStale {
			return errors.New("shard refused the outbox row")
		}
		return nil
	}
	f.startExecutor(t, fastConfig(), nil)
	ctx := context.Background()
	rs, err := f.mgr.Create(ctx, repair.CreateRequest{Selection: repair.Selection{RunID: run.ID, DiscrepancyIDs: f.ids(t, run.ID, repairtest.IDMissing, repairtest.IDStale)},
		RequestID: "r", Reason: "INC-5", By: "otto"})
	if err != nil {
		t.Fatal(err)
	}
	r := f.WaitRepair(t, rs[0].ID, 20*time.Second, repair.Repair.Terminal)
	if r.State != repair.StateFailed || r.ItemsFailed != 1 || r.ItemsDone != 1 || r.Verification != repair.VerifyPending ||
		!strings.Contains(r.Message, "1 of 2 items could not be applied") {
		t.Errorf("repair = %+v", r)
	}
	its := f.items(t, r.ID)
	if it := its[repairtest.IDStale]; it.Outcome != repair.OutcomeFailed || it.Attempts != 3 || !strings.Contains(it.Message, "shard refused the outbox row") {
		t.Errorf("failed item = %+v", it)
	}
	if it := its[repairtest.IDMissing]; it.Outcome != repair.OutcomeApplied {
		t.Errorf("other item = %+v", it)
	}
	if res := f.Resolved(t, run.ID); res[repairtest.IDMissing] || res[repairtest.IDStale] {
		t.Error("a failed repair resolved discrepancies")
	}
	if _, _, err := f.mgr.Verify(ctx, r.ID, "otto"); !errors.Is(err, apierr.FailedPrecondition) {
		t.Errorf("verifying a repair with failed items = %v", err)
	}
}

// Rebuilds: the epoch must exceed the floor; a direct rebuild needs another
// admin's approval, runs, and can be cancelled before it switches readers,
// never after.
func TestRebuilds(t *testing.T) {
	f := newFixture(t, repair.ManagerConfig{EpochFloor: 1})
	f.scenario(t)
	ctx := context.Background()
	scope := reconcile.Scope{DetectID: repairtest.DetectID}
	var fe *apierr.FieldError
	if _, err := f.mgr.StartRebuild(ctx, repair.RebuildRequest{RequestID: "b0", Scope: scope, Epoch: 1, Reason: "fix", By: "alice"}); !errors.As(err, &fe) || fe.Field != "epoch" {
		t.Fatalf("a rebuild at the floor's epoch = %v", err)
	}
	rb, err := f.mgr.StartRebuild(ctx, repair.RebuildRequest{RequestID: "b1", Scope: scope, Epoch: 2, Reason: "mapping fix v2", By: "alice"})
	if err != nil || rb.State != repair.StateAwaitingApproval {
		t.Fatalf("StartRebuild = %+v, %v", rb, err)
	}
	if again, err := f.mgr.StartRebuild(ctx, repair.RebuildRequest{RequestID: "b1", Scope: scope, Epoch: 2, Reason: "mapping fix v2", By: "alice"}); err != nil || again.ID != rb.ID {
		t.Errorf("the same StartRebuild again = %+v, %v", again, err)
	}
	if _, err := f.mgr.StartRebuild(ctx, repair.RebuildRequest{RequestID: "b1", Scope: scope, Epoch: 3, Reason: "other", By: "alice"}); !errors.Is(err, apierr.ErrRequestReused) {
		t.Errorf("b1 reused = %v", err)
	}
	if _, err := f.mgr.StartRebuild(ctx, repair.RebuildRequest{RequestID: "b2", Scope: scope, Epoch: 3, Reason: "second", By: "alice"}); !errors.Is(err, apierr.FailedPrecondition) {
		t.Errorf("a second active rebuild of the campaign = %v", err)
	}
	if _, err := f.mgr.ApproveRebuild(ctx, rb.ID, "alice", "self"); !errors.Is(err, apierr.FailedPrecondition) {
		t.Errorf("self-approval of a rebuild = %v", err)
	}

	gate := make(chan struct{})
	f.rb.Gate = func(ctx context.Context, phase string) error {
		if phase == repair.PhaseVerifying {
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	f.startExecutor(t, fastConfig(), nil)
	if _, err := f.mgr.ApproveRebuild(ctx, rb.ID, "bob", "reviewed"); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, f, rb.ID, repair.PhaseVerifying)
	got, err := f.mgr.CancelRebuild(ctx, rb.ID, "bob", "wrong epoch")
	if err != nil || got.State != repair.StateCancelled {
		t.Fatalf("CancelRebuild = %+v, %v", got, err)
	}
	time.Sleep(300 * time.Millisecond)
	if got, _ := f.Store.GetRebuild(ctx, rb.ID); got.State != repair.StateCancelled {
		t.Errorf("the cancelled rebuild became %s", got.State)
	}

	// A rebuild that is switching readers can no longer be cancelled. (The
	// fake wrote the cancelled rebuild's rows into the live table, so the
	// projection holds epoch 2 now: the next epoch is 3.)
	rb2, err := f.mgr.StartRebuild(ctx, repair.RebuildRequest{RequestID: "b3", Scope: scope, Epoch: 3, Reason: "mapping fix v3", By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	switching := make(chan struct{})
	f.rb.Gate = func(ctx context.Context, phase string) error {
		if phase == repair.PhaseSwitching {
			<-switching
		}
		return nil
	}
	if _, err := f.mgr.ApproveRebuild(ctx, rb2.ID, "bob", "reviewed"); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, f, rb2.ID, repair.PhaseSwitching)
	if _, err := f.mgr.CancelRebuild(ctx, rb2.ID, "bob", "too late"); !errors.Is(err, apierr.FailedPrecondition) || !strings.Contains(err.Error(), "switching") {
		t.Errorf("cancelling a switching rebuild = %v", err)
	}
	close(switching)
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := f.Store.GetRebuild(ctx, rb2.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Terminal() {
			if got.State != repair.StateVerified || got.Phase != repair.PhaseSwitched || got.RowsWritten != 25 || got.ApprovedBy != "bob" {
				t.Errorf("rebuild = %+v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rebuild still %s", got.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
	floor, err := f.mgr.EpochFloor(ctx, scope)
	if err != nil || floor != 3 {
		t.Errorf("epoch floor after a rebuild at 3 = %d, %v", floor, err)
	}
}

func waitPhase(t *testing.T, f *fixture, id, phase string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		rb, err := f.Store.GetRebuild(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if rb.Phase == phase {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("rebuild %s is %s in phase %q, not %s", id, rb.State, rb.Phase, phase)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The floor of a rebuild epoch: the live path's, the projection's, and
// that of rebuilds that wrote rows.
func TestEpochFloor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		floor  uint16
		stored uint16 // epoch of a delivered row (0: none)
		want   uint16
	}{
		{"empty projection", 0, 0, 0},
		{"configured floor", 4, 0, 4},
		{"stored epoch", 1, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, repair.ManagerConfig{EpochFloor: tc.floor})
			if tc.stored > 0 {
				f.Deliver(t, repairtest.Rec{ID: 42, Version: 1, Epoch: tc.stored})
			}
			got, err := f.mgr.EpochFloor(context.Background(), reconcile.Scope{DetectID: repairtest.DetectID})
			if err != nil || got != tc.want {
				t.Errorf("EpochFloor = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// The epoch rule of the documented rebuild flow (plan, create, redeploy the
// consumer at the rebuild's epoch E, approve) under live writes: the floor
// is fixed at planning; rows the live path writes at E afterwards, however
// many, do not block the approval (before, the first of them raised the
// floor to E and ApproveRepair answered "epoch E no longer exceeds the epoch
// floor E"); a row above E, a retired floor above E, or the configured floor
// do.
func TestApprovalAfterTheLivePathMovedToTheRebuildEpoch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		deliver uint16 // epoch of rows written after the plan (0: none)
		retire  uint16 // epoch retired in the projection after the plan (0: none)
		refused string // "" approved, else a part of the refusal
	}{
		{"live path at E", 1, 0, ""},
		{"nothing written", 0, 0, ""},
		{"a row above E", 2, 0, "holds or retired epoch 2 above it"},
		{"retired above E", 0, 2, "holds or retired epoch 2 above it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, repair.ManagerConfig{})
			run := f.scenario(t)
			ctx := context.Background()
			plan, err := f.mgr.Plan(ctx, repair.Selection{RunID: run.ID, DiscrepancyIDs: f.ids(t, run.ID, repairtest.IDContent)})
			if err != nil || plan.EpochFloor != 0 {
				t.Fatalf("plan: floor %d, %v; want 0", plan.EpochFloor, err)
			}
			rs, err := f.mgr.Create(ctx, repair.CreateRequest{Selection: repair.Selection{RunID: run.ID, DiscrepancyIDs: f.ids(t, run.ID, repairtest.IDContent),
				RebuildEpoch: 1}, RequestID: "rb-" + tc.name, Reason: "mapping fixed in epoch 1", By: "otto"})
			if err != nil || len(rs) != 1 {
				t.Fatalf("create = %v, %v", rs, err)
			}
			if tc.deliver > 0 {
				// The consumer redeployed at E delivers the live writes of the scope.
				for i := range int64(5) {
					f.PutDelivered(t, repairtest.Rec{ID: 300 + i, Version: 1, Epoch: tc.deliver})
				}
				f.Deliver(t, repairtest.Rec{ID: 100, Version: 2, Epoch: tc.deliver})
			}
			if tc.retire > 0 {
				if err := chstore.NewProjection(f.CH.Conn).RaiseEpochFloor(ctx, chstore.EpochRetirement{Epoch: tc.retire, Time: time.Now(), DetectID: 77}); err != nil {
					t.Fatal(err)
				}
			}
			_, err = f.mgr.Approve(ctx, rs[0].ID, "bob", "mapping reviewed")
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("approval = %v, want approved", err)
			case tc.refused != "" && (!errors.Is(err, apierr.FailedPrecondition) || !strings.Contains(err.Error(), tc.refused)):
				t.Fatalf("approval = %v, want FAILED_PRECONDITION with %q", err, tc.refused)
			}
			// Planning a new rebuild now needs an epoch above everything
			// stored, E included, and above the approved rebuild's.
			want := max(tc.deliver, tc.retire)
			if tc.refused == "" {
				want = max(want, 1)
			}
			floor, err := f.mgr.EpochFloor(ctx, reconcile.Scope{DetectID: repairtest.DetectID})
			if err != nil || floor != want {
				t.Errorf("epoch floor for the next plan = %d, %v; want %d", floor, err, want)
			}
		})
	}
}

// An idle executor does not poll the control database for work every Poll:
// work created through its own process (the manager wired to its Wake)
// starts at once although its idle poll is a minute, and work queued by
// another replica (a manager without that wiring) is found by its idle poll.
func TestExecutorWakesOnWorkAndFindsOthersByItsIdlePoll(t *testing.T) {
	f := newFixture(t, repair.ManagerConfig{})
	run := f.scenario(t)
	ctx := context.Background()

	cfg := fastConfig()
	cfg.IdlePoll = time.Minute
	reg := prometheus.NewRegistry()
	ex, err := repair.NewExecutor(f.Log, cfg, f.deps(), reg)
	if err != nil {
		t.Fatal(err)
	}
	deps := f.deps()
	deps.Wake = ex.Wake
	mgr, err := repair.NewManager(repair.ManagerConfig{}, deps)
	if err != nil {
		t.Fatal(err)
	}
	ectx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ex.Run(ectx) }()
	stopA := func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("executor: %v", err)
		}
	}
	defer func() {
		if ectx.Err() == nil {
			stopA()
		}
	}()
	// The executor's first look (at start-up) is over once it published its
	// signals; from then on it idles for a minute unless woken.
	waitGauge(t, reg, "repair_store_up", 1, 20*time.Second)

	rs, err := mgr.Create(ctx, repair.CreateRequest{Selection: repair.Selection{RunID: run.ID, RebuildEpoch: 1}, RequestID: "wake", Reason: "INC-9", By: "otto"})
	if err != nil {
		t.Fatal(err)
	}
	by := byAction(rs)
	got := f.WaitRepair(t, by[repair.ActionReplay].ID, 30*time.Second, repair.Repair.Terminal)
	if got.State != repair.StateVerified {
		t.Errorf("replay repair ended %s, want VERIFIED", got.State)
	}
	stopA()

	// Another replica's approval: nothing wakes this executor, its idle poll
	// (1 s here) finds the work.
	cfg.IdlePoll = time.Second
	f.startExecutor(t, cfg, nil)
	if _, err := f.mgr.Approve(ctx, by[repair.ActionRemove].ID, "bob", "origins checked"); err != nil {
		t.Fatal(err)
	}
	if got := f.WaitRepair(t, by[repair.ActionRemove].ID, 30*time.Second, repair.Repair.Terminal); got.State != repair.StateVerified {
		t.Errorf("removal approved through another replica ended %s, want VERIFIED", got.State)
	}
}

// waitGauge waits until the gauge name in reg reads want.
func waitGauge(t *testing.T, reg *prometheus.Registry, name string, want float64, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name && len(mf.GetMetric()) > 0 && mf.GetMetric()[0].GetGauge().GetValue() == want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never read %v within %s", name, want, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
