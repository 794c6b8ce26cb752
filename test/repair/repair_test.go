// Package repair_test proves the repair half of resultsync end to end: the
// projection is damaged, a real reconciliation run finds the damage, and the
// repair server — built as services/repair builds it — plans, is approved,
// executes through the real event path (shard outbox, relay, Pulsar,
// consumer) and verifies, until a follow-up reconciliation is clean.
package repair_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/testkit/reconcileapitest"
)

// Campaigns of the tests: the five classes a replay, a tombstone or an
// approved removal repairs live in one campaign; the content defect, which a
// rebuild of its scope repairs, in another, so that the rebuild is not what
// fixes the others.
const (
	campaign        = 20001
	rebuildCampaign = 20002
	school          = 7
)

// Every class of discrepancy, from a real reconciliation run through the
// repair server: plan, approve where needed, execute, verify; the follow-up
// reconciliation is clean and the discrepancies are resolved.
func TestEveryClassIsRepairedFromARealRun(t *testing.T) {
	for _, path := range replayPaths {
		t.Run(path, func(t *testing.T) { everyClassIsRepaired(t, path) })
	}
}

// replayPaths are the repair server's --replay-path values: the tests of
// replays and tombstones run on both.
var replayPaths = []string{"outbox", "broker"}

// startRepairOn restarts the platform's repair server on the replay path,
// with extra settings.
func startRepairOn(p *platform, path string, extra ...string) {
	p.StopRepair()
	p.StartRepair(append([]string{"--replay-path=" + path}, extra...)...)
}

func everyClassIsRepaired(t *testing.T, path string) {
	p := newPlatform(t)
	startRepairOn(p, path)
	const (
		missing    = 910001 // MISSING_IN_TARGET: its rows removed from ClickHouse
		stale      = 910002 // STALE_TARGET_VERSION: at v4, its v4 row removed
		deleted    = 910003 // DELETION_NOT_APPLIED: deleted (v2 tombstone), the tombstone removed
		unexpected = 910005 // UNEXPECTED_TARGET_RECORD: a row no shard has
		ahead      = 910006 // TARGET_AHEAD_OF_SOURCE: a v3 row over a v1 record
		content    = 920004 // CONTENT_MISMATCH: a wrong value at its version
	)
	healthy := []int64{910101, 910102, 910103, 910104, 910105, 920101, 920102, 920103}

	// Authoritative writes through ResultService; the live path delivers them.
	for _, id := range []int64{missing, stale, deleted, ahead} {
		p.Record(campaign, id, school, "2.21")
	}
	for _, id := range healthy {
		p.Record(detectOf(id), id, school, "1.50")
	}
	p.Record(rebuildCampaign, content, school, "3.05")
	for v := int64(1); v < 4; v++ {
		p.Correct(stale, school, v, fmt.Sprintf("2.2%d", v+1))
	}
	p.Remove(deleted, school, 1)
	for id, v := range map[int64]int64{missing: 1, stale: 4, deleted: 2, ahead: 1, content: 1} {
		p.WaitVersion(detectOf(id), id, v)
	}
	for _, id := range healthy {
		p.WaitVersion(detectOf(id), id, 1)
	}

	// The damage.
	ctx := context.Background()
	removeAbove := func(id, above int64) {
		t.Helper()
		if _, err := p.Proj.RemoveAbove(ctx, detectOf(id), id, above); err != nil {
			t.Fatal(err)
		}
	}
	removeAbove(missing, 0)
	removeAbove(stale, 3)
	removeAbove(deleted, 1)
	aheadRow := p.Origins(campaign, ahead)[0]
	aheadRow.Version, aheadRow.EventID = 3, fmt.Sprintf("fitness-result-%d-v3", ahead)
	wrong := p.Origins(rebuildCampaign, content)[0]
	wrong.Result = "1.11" // same version, same epoch: a defective mapping
	ghost := chstore.Row{DetectID: campaign, DataID: unexpected, UserID: 5, ProjectID: 3, SchoolID: school, Grade: 5, Version: 1,
		Result: "9.99", Unit: "m", EventID: fmt.Sprintf("fitness-result-%d-v1", unexpected), ShardID: p.Shards.Shards[p.Shards.Owner(unexpected)].ID,
		SourceCommitMs: time.Now().UnixMilli(), IngestMs: time.Now().UnixMilli()}
	if err := p.Proj.Insert(ctx, []chstore.Row{aheadRow, wrong, ghost}); err != nil {
		t.Fatal(err)
	}

	// A real reconciliation of each campaign finds exactly the damage.
	run, found := p.reconcileRun(campaign)
	wantClasses := map[int64]fitnessv1.DiscrepancyClass{
		missing:    fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_MISSING_IN_TARGET,
		stale:      fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_STALE_TARGET_VERSION,
		deleted:    fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_DELETION_NOT_APPLIED,
		unexpected: fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_UNEXPECTED_TARGET_RECORD,
		ahead:      fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_TARGET_AHEAD_OF_SOURCE,
	}
	if diff := cmp.Diff(wantClasses, classes(found)); diff != "" {
		t.Fatalf("discrepancies of campaign %d (-want +got):\n%s", campaign, diff)
	}
	rebuildRun, foundContent := p.reconcileRun(rebuildCampaign)
	if diff := cmp.Diff(map[int64]fitnessv1.DiscrepancyClass{content: fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_CONTENT_MISMATCH},
		classes(foundContent)); diff != "" {
		t.Fatalf("discrepancies of campaign %d (-want +got):\n%s", rebuildCampaign, diff)
	}

	// The dry run: what would be replayed, tombstoned and removed; nothing
	// changes.
	plan, err := p.Repair.PlanRepair(operator(), &fitnessv1.PlanRepairRequest{RunId: run})
	if err != nil {
		t.Fatal(err)
	}
	wantPlan := map[fitnessv1.RepairAction]string{
		fitnessv1.RepairAction_REPAIR_ACTION_REPLAY:    "2 approval=false",
		fitnessv1.RepairAction_REPAIR_ACTION_TOMBSTONE: "1 approval=false",
		fitnessv1.RepairAction_REPAIR_ACTION_REMOVE:    "2 approval=true",
	}
	if diff := cmp.Diff(wantPlan, planned(plan)); diff != "" {
		t.Fatalf("plan (-want +got):\n%s", diff)
	}
	if got := p.CurrentOf(campaign, missing); got.Version != 0 {
		t.Fatalf("the plan changed the projection: %d is at %+v", missing, got)
	}

	// Create: the replay and the tombstone run at once; the removal waits for
	// an admin other than the requester.
	repairStart := time.Now().UTC()
	created, err := p.Repair.CreateRepair(operator(), &fitnessv1.CreateRepairRequest{RunId: run, Reason: "damaged projection", RequestId: "repair-" + run})
	if err != nil {
		t.Fatal(err)
	}
	byAction := map[fitnessv1.RepairAction]*fitnessv1.Repair{}
	for _, r := range created.GetRepairs() {
		byAction[r.GetAction()] = r
	}
	removal := byAction[fitnessv1.RepairAction_REPAIR_ACTION_REMOVE]
	if removal.GetState() != fitnessv1.RepairState_REPAIR_STATE_AWAITING_APPROVAL {
		t.Fatalf("removal created %s, want AWAITING_APPROVAL", removal.GetState())
	}
	if _, err := p.Repair.ApproveRepair(operator(), &fitnessv1.ApproveRepairRequest{RepairId: removal.GetRepairId(), Reason: "mine"}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("an operator's approval = %v, want PERMISSION_DENIED", err)
	}
	if _, err := p.Repair.ApproveRepair(alice(), &fitnessv1.ApproveRepairRequest{RepairId: removal.GetRepairId(), Reason: "origins checked"}); err != nil {
		t.Fatal(err)
	}
	for a, r := range byAction {
		got := p.waitRepair(r.GetRepairId(), fitnessv1.RepairState_REPAIR_STATE_VERIFIED)
		if got.GetVerification() != fitnessv1.VerificationResult_VERIFICATION_RESULT_PASSED {
			t.Errorf("%s repair verification %s", a, got.GetVerification())
		}
	}

	// The replays kept the records' existing versions and event ids.
	items := p.items(byAction[fitnessv1.RepairAction_REPAIR_ACTION_REPLAY].GetRepairId())
	items = append(items, p.items(byAction[fitnessv1.RepairAction_REPAIR_ACTION_TOMBSTONE].GetRepairId())...)
	wantItems := map[int64]string{
		missing: fmt.Sprintf("APPLIED v1 fitness-result-%d-v1 PASSED", missing),
		stale:   fmt.Sprintf("APPLIED v4 fitness-result-%d-v4 PASSED", stale),
		deleted: fmt.Sprintf("APPLIED v2 fitness-result-%d-v2 PASSED", deleted),
	}
	if diff := cmp.Diff(wantItems, describeItems(items)); diff != "" {
		t.Errorf("replay and tombstone items (-want +got):\n%s", diff)
	}
	// The removal showed the rows' origins before it removed them.
	for _, it := range p.items(removal.GetRepairId()) {
		if len(it.GetOrigins()) == 0 || it.GetRowsRemoved() == 0 {
			t.Errorf("removal item of %d: origins %v, %d rows removed", it.GetDataId(), it.GetOrigins(), it.GetRowsRemoved())
		}
	}

	// The content defect: the fixed transformation is deployed at epoch 1,
	// then the scope is rebuilt at that epoch, approved by another admin.
	p.StopConsumer()
	p.StartConsumer(1)
	rb, err := p.Repair.CreateRepair(operator(), &fitnessv1.CreateRepairRequest{RunId: rebuildRun, Reason: "mapping defect fixed in epoch 1",
		RequestId: "rebuild-" + rebuildRun, RebuildEpoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rb.GetRepairs()) != 1 || rb.GetRepairs()[0].GetAction() != fitnessv1.RepairAction_REPAIR_ACTION_REBUILD {
		t.Fatalf("rebuild repair = %v", rb.GetRepairs())
	}
	rebuildID := rb.GetRepairs()[0].GetRepairId()
	if _, err := p.Repair.ApproveRepair(bob(), &fitnessv1.ApproveRepairRequest{RepairId: rebuildID, Reason: "scope checked"}); err != nil {
		t.Fatal(err)
	}
	p.waitRepair(rebuildID, fitnessv1.RepairState_REPAIR_STATE_VERIFIED)

	// Afterwards: the follow-up reconciliations are clean, and every
	// discrepancy of the first runs is resolved.
	for _, c := range []int64{campaign, rebuildCampaign} {
		if _, again := p.reconcileRun(c); len(again) != 0 {
			t.Errorf("campaign %d after the repairs: %d discrepancies: %v", c, len(again), again)
		}
	}
	for _, r := range []string{run, rebuildRun} {
		_, ds := p.discrepancies(r)
		for _, d := range ds {
			if !d.GetResolved() {
				t.Errorf("run %s: discrepancy %s of %d not resolved", r, d.GetClass(), d.GetDataId())
			}
		}
	}
	// The path taken: through the outbox, the replayed records' rows were
	// re-armed and sent again; through the broker, the outbox was not
	// written.
	if n := p.outboxRowsSentSince(repairStart, missing, stale, deleted); (n == 0) != (path == "broker") {
		t.Errorf("replay path %s: %d outbox rows of the replayed records sent since the repair started", path, n)
	}
	// Record by record.
	want := map[int64]current{missing: {Version: 1, Milli: 2210, Deleted: false}, stale: {Version: 4, Milli: 2240, Deleted: false}, deleted: {Version: 2, Milli: 2210, Deleted: true}, ahead: {Version: 1, Milli: 2210, Deleted: false},
		unexpected: {}, content: {Version: 1, Milli: 3050, Deleted: false}}
	for id, w := range want {
		if got := p.CurrentOf(detectOf(id), id); got != w {
			t.Errorf("record %d in ClickHouse = %+v, want %+v", id, got, w)
		}
	}
}

// A replay delivers the record's existing version and event id (v4, ...-v4),
// never a repair-time version; a correction to v5 committed while the
// repair runs is the final state.
func TestReplayKeepsTheSourceVersionAndACorrectionWins(t *testing.T) {
	for _, path := range replayPaths {
		t.Run(path, func(t *testing.T) { replayKeepsTheSourceVersion(t, path) })
	}
}

func replayKeepsTheSourceVersion(t *testing.T, path string) {
	p := newPlatform(t)
	// A slow repair (5 rows/s per shard over 31 items) leaves time to commit
	// the correction while it runs.
	startRepairOn(p, path, "--rows-per-second=5", "--workers-per-shard=1")
	const target = 930000 // the lowest data_id: its item comes first
	p.Record(campaign, target, school, "2.21")
	for v := int64(1); v < 4; v++ {
		p.Correct(target, school, v, fmt.Sprintf("2.2%d", v+1))
	}
	var others []int64
	for i := int64(1); i <= 30; i++ {
		others = append(others, target+i)
		p.Record(campaign, target+i, school, "1.75")
	}
	p.WaitVersion(campaign, target, 4)
	for _, id := range others {
		p.WaitVersion(campaign, id, 1)
	}
	ctx := context.Background()
	if _, err := p.Proj.RemoveAbove(ctx, campaign, target, 3); err != nil {
		t.Fatal(err)
	}
	for _, id := range others {
		if _, err := p.Proj.RemoveAbove(ctx, campaign, id, 0); err != nil {
			t.Fatal(err)
		}
	}
	run, found := p.reconcileRun(campaign)
	if len(found) != 31 {
		t.Fatalf("%d discrepancies, want 31", len(found))
	}
	created, err := p.Repair.CreateRepair(operator(), &fitnessv1.CreateRepairRequest{RunId: run, Reason: "replay", RequestId: "replay-" + run})
	if err != nil {
		t.Fatal(err)
	}
	id := created.GetRepairs()[0].GetRepairId()

	// Once the v4 replay is in ClickHouse, and while the repair still runs,
	// the teacher corrects the record to v5.
	p.WaitFor("the v4 replay in ClickHouse", 30*time.Second, func() bool { return p.CurrentOf(campaign, target).Version == 4 })
	if got, want := p.EventOf(campaign, target), fmt.Sprintf("fitness-result-%d-v4", target); got != want {
		t.Fatalf("the replayed row carries event id %q, want the existing %q", got, want)
	}
	if r := p.getRepair(id); r.GetState() != fitnessv1.RepairState_REPAIR_STATE_EXECUTING {
		t.Fatalf("repair %s already %s (%d of %d items) when the correction was to be made", id, r.GetState(), r.GetItemsDone(), r.GetItemsTotal())
	}
	p.Correct(target, school, 4, "2.35")
	p.waitRepair(id, fitnessv1.RepairState_REPAIR_STATE_VERIFIED)

	var item *fitnessv1.RepairItem
	for _, it := range p.items(id) {
		if it.GetDataId() == target {
			item = it
		}
	}
	if got, want := describeItems([]*fitnessv1.RepairItem{item})[target], fmt.Sprintf("APPLIED v4 fitness-result-%d-v4 PASSED", target); got != want {
		t.Errorf("item of %d = %q, want %q", target, got, want)
	}
	p.WaitVersion(campaign, target, 5)
	if got := p.CurrentOf(campaign, target); got != (current{Version: 5, Milli: 2350, Deleted: false}) {
		t.Errorf("final state of %d = %+v, want v5 at 2.35", target, got)
	}
	if _, again := p.reconcileRun(campaign); len(again) != 0 {
		t.Errorf("after the repair: %d discrepancies", len(again))
	}
}

// detectOf is the campaign of a test record id.
func detectOf(id int64) int64 {
	if id >= 920000 && id < 930000 {
		return rebuildCampaign
	}
	return campaign
}

// ---- reconciliation ----

// reconcileRun runs a CONTENT reconciliation of the campaign to its end
// through ReconcileService and returns its id and discrepancies.
func (p *platform) reconcileRun(detect int64) (string, []*fitnessv1.Discrepancy) {
	p.t.Helper()
	return p.scopedRun(&fitnessv1.ReconcileScope{DetectId: detect})
}

// scopedRun runs a CONTENT reconciliation of scope to its end, fails the
// test unless it SUCCEEDED, and returns the run and its discrepancies.
func (p *platform) scopedRun(scope *fitnessv1.ReconcileScope) (string, []*fitnessv1.Discrepancy) {
	p.t.Helper()
	run := reconcileapitest.Run(p.t, p.Reconcile, operator, scope, fitnessv1.ReconcileDepth_RECONCILE_DEPTH_CONTENT, 60*time.Second)
	if run.GetState() != fitnessv1.RunState_RUN_STATE_SUCCEEDED {
		p.t.Fatalf("reconciliation of %v: %s %s %s", scope, run.GetState(), run.GetErrorMessage(), run.GetMessage())
	}
	return p.discrepancies(run.GetRunId())
}

// discrepancies lists every discrepancy of a run, page by page.
func (p *platform) discrepancies(run string) (string, []*fitnessv1.Discrepancy) {
	p.t.Helper()
	return run, reconcileapitest.Discrepancies(p.t, p.Reconcile, operator, run)
}

func classes(ds []*fitnessv1.Discrepancy) map[int64]fitnessv1.DiscrepancyClass {
	m := map[int64]fitnessv1.DiscrepancyClass{}
	for _, d := range ds {
		m[d.GetDataId()] = d.GetClass()
	}
	return m
}

// ---- repairs ----

func planned(p *fitnessv1.PlanRepairResponse) map[fitnessv1.RepairAction]string {
	m := map[fitnessv1.RepairAction]string{}
	for _, a := range p.GetActions() {
		m[a.GetAction()] = fmt.Sprintf("%d approval=%t", a.GetItems(), a.GetRequiresApproval())
	}
	return m
}

func (p *platform) getRepair(id string) *fitnessv1.Repair {
	p.t.Helper()
	got, err := p.Repair.GetRepair(operator(), &fitnessv1.GetRepairRequest{RepairId: id})
	if err != nil {
		p.t.Fatalf("get repair %s: %v", id, err)
	}
	return got.GetRepair()
}

// waitRepair waits until the repair is in state; a repair that ends in
// another state fails the test with its message.
func (p *platform) waitRepair(id string, state fitnessv1.RepairState) *fitnessv1.Repair {
	p.t.Helper()
	var r *fitnessv1.Repair
	p.WaitFor(fmt.Sprintf("repair %s %s", id, state), 120*time.Second, func() bool {
		r = p.getRepair(id)
		switch r.GetState() {
		case state:
			return true
		case fitnessv1.RepairState_REPAIR_STATE_FAILED, fitnessv1.RepairState_REPAIR_STATE_CANCELLED, fitnessv1.RepairState_REPAIR_STATE_VERIFIED:
			p.t.Fatalf("repair %s (%s) ended %s: %s", id, r.GetAction(), r.GetState(), r.GetMessage())
		}
		return false
	})
	return r
}

// items lists every item of a repair.
func (p *platform) items(id string) []*fitnessv1.RepairItem {
	p.t.Helper()
	var all []*fitnessv1.RepairItem
	token := ""
	for {
		page, err := p.Repair.ListRepairItems(operator(), &fitnessv1.ListRepairItemsRequest{RepairId: id, PageSize: 500, PageToken: token})
		if err != nil {
			p.t.Fatal(err)
		}
		all = append(all, page.GetItems()...)
		if token = page.GetNextPageToken(); token == "" {
			return all
		}
	}
}

// describeItems is "OUTCOME vN event-id VERIFICATION" by data_id.
func describeItems(items []*fitnessv1.RepairItem) map[int64]string {
	m := map[int64]string{}
	for _, it := range items {
		m[it.GetDataId()] = fmt.Sprintf("%s v%d %s %s",
			trimEnum(it.GetOutcome().String(), "REPAIR_ITEM_OUTCOME_"), it.GetAppliedVersion(), it.GetEventId(),
			trimEnum(it.GetVerification().String(), "VERIFICATION_RESULT_"))
	}
	return m
}

func trimEnum(s, prefix string) string {
	if len(s) > len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):]
	}
	return s
}

// outboxRowsSentSince counts the outbox rows of ids, on their shards, not
// SENT or sent at or after since.
func (p *platform) outboxRowsSentSince(since time.Time, ids ...int64) int {
	p.t.Helper()
	n := 0
	for _, id := range ids {
		var c int
		if err := p.ShardDBs[p.Shards.Owner(id)].QueryRowContext(context.Background(),
			"SELECT COUNT(*) FROM outbox_event WHERE data_id = ? AND (status <> 'SENT' OR sent_time >= ?)", id, since).Scan(&c); err != nil {
			p.t.Fatal(err)
		}
		n += c
	}
	return n
}
