package repair_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/recovery/repair"
	"github.com/resultsync/resultsync/pkg/testkit/repairtest"
)

// storedRun stores a SUCCEEDED run of scope with the given discrepancies, as
// a run made before scoped runs looked records up outside their scope
// stored them (a school-8 run called a school-7 record shown under school 8
// UNEXPECTED, a school-7 run called it MISSING).
func (f *fixture) storedRun(t *testing.T, scope reconcile.Scope, ds ...reconcile.Discrepancy) reconcile.Run {
	t.Helper()
	ctx := context.Background()
	r, err := f.Runs.Create(ctx, scope, reconcile.DepthContent, 0, "tester")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Runs.AddDiscrepancies(ctx, r.ID, scope.DetectID, ds); err != nil {
		t.Fatal(err)
	}
	r.State, r.Discrepancies, r.Ended = reconcile.StateSucceeded, int64(len(ds)), time.Now()
	if err := f.Runs.Update(ctx, r); err != nil {
		t.Fatal(err)
	}
	return r
}

// A removal never destroys a record the source holds, whatever the scope of
// the run that found it. A record of school 7 the projection shows under
// school 8 at the same version (a mapping defect) is CONTENT_MISMATCH in
// the school-8 and the school-7 run; a removal or replay of it planned from
// a run that called it UNEXPECTED or MISSING is refused by CreateRepair; a
// removal whose record the source holds by the time it is approved is
// refused by ApproveRepair, and by the executor when the source holds it by
// the time it runs (the item FAILED, naming the source record, nothing
// removed). The rebuild then repairs every one; the campaign is clean and no
// projection row was removed.
func TestRemovalNeverDestroysASourceRecord(t *testing.T) {
	f := newFixture(t, repair.ManagerConfig{})
	ctx := context.Background()
	const (
		mapped      = 900011 // school 7 in the source, 8 in the projection, same version
		mapped2     = 900012 // the same defect on the other shard, with the correction of a result
		heldBefore  = 900013 // only in the projection when found; the source holds it before the removal is approved
		heldAfter   = 900014 // only in the projection when found; the source holds it after approval, before execution
		school7     = 7
		school8     = 8
		defectiveEp = 0
	)
	for i := range int64(10) {
		f.PutDelivered(t, repairtest.Rec{ID: 100 + i, Version: 1, School: school7 + i%2})
	}
	f.Put(t, repairtest.Rec{ID: mapped, Version: 1, School: school7})
	f.Deliver(t, repairtest.Rec{ID: mapped, Version: 1, School: school8, Epoch: defectiveEp})
	f.Put(t, repairtest.Rec{ID: mapped2, Version: 2, School: school7, Result: "2.31"})
	f.Deliver(t, repairtest.Rec{ID: mapped2, Version: 2, School: school8, Result: "2.31", Epoch: defectiveEp})
	f.Deliver(t, repairtest.Rec{ID: heldBefore, Version: 1, School: school8})
	f.Deliver(t, repairtest.Rec{ID: heldAfter, Version: 1, School: school8})

	classes := func(run reconcile.Run) map[int64]reconcile.Class {
		out := map[int64]reconcile.Class{}
		for id, d := range f.Discrepancies(t, run.ID) {
			out[id] = d.Class
		}
		return out
	}
	run8 := f.ReconcileScope(t, reconcile.Scope{DetectID: repairtest.DetectID, SchoolID: school8})
	if diff := cmp.Diff(map[int64]reconcile.Class{mapped: reconcile.ContentMismatch, mapped2: reconcile.ContentMismatch,
		heldBefore: reconcile.UnexpectedTargetRecord, heldAfter: reconcile.UnexpectedTargetRecord}, classes(run8)); diff != "" {
		t.Errorf("school-8 run (-want +got):\n%s", diff)
	}
	run7 := f.ReconcileScope(t, reconcile.Scope{DetectID: repairtest.DetectID, SchoolID: school7})
	if diff := cmp.Diff(map[int64]reconcile.Class{mapped: reconcile.ContentMismatch, mapped2: reconcile.ContentMismatch}, classes(run7)); diff != "" {
		t.Errorf("school-7 run (-want +got):\n%s", diff)
	}

	// Forced: the discrepancies an older run stored. Neither plan is made.
	target := &reconcile.Record{DataID: mapped, Version: 1, Canonical: "stored"}
	legacy8 := f.storedRun(t, reconcile.Scope{DetectID: repairtest.DetectID, SchoolID: school8},
		reconcile.Discrepancy{Class: reconcile.UnexpectedTargetRecord, DataID: mapped, Target: target})
	_, err := f.mgr.Create(ctx, repair.CreateRequest{Selection: repair.Selection{RunID: legacy8.ID}, RequestID: "legacy-8", Reason: "forced", By: "otto"})
	wantHeld := func(what string, err error, id int64, shard string, version int64) {
		t.Helper()
		want := fmt.Sprintf("record %d is held by the source (shard %s, version %d, live, campaign %d, school %d)", id, shard, version, repairtest.DetectID, school7)
		if !errors.Is(err, apierr.FailedPrecondition) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s = %v; want FAILED_PRECONDITION naming %q", what, err, want)
		}
	}
	held := func(id int64) string {
		return fmt.Sprintf("%s: record %d is held by the source (shard %s, version 1, live, campaign %d, school %d)",
			apierr.FailedPrecondition, id, f.ShardOf(id), repairtest.DetectID, school7)
	}
	wantHeld("CreateRepair removing a record the source holds", err, mapped, f.ShardOf(mapped), 1)
	legacy7 := f.storedRun(t, reconcile.Scope{DetectID: repairtest.DetectID, SchoolID: school7},
		reconcile.Discrepancy{Class: reconcile.MissingInTarget, DataID: mapped2, Source: &reconcile.Record{DataID: mapped2, Version: 2, Canonical: "stored"}})
	_, err = f.mgr.Create(ctx, repair.CreateRequest{Selection: repair.Selection{RunID: legacy7.ID}, RequestID: "legacy-7", Reason: "forced", By: "otto"})
	if !errors.Is(err, apierr.FailedPrecondition) || !strings.Contains(err.Error(), fmt.Sprintf("record %d, MISSING_IN_TARGET", mapped2)) ||
		!strings.Contains(err.Error(), fmt.Sprintf("in the projection at version 2 under school %d", school8)) {
		t.Errorf("CreateRepair replaying a record the projection holds under another school = %v; want FAILED_PRECONDITION naming it", err)
	}

	// Removals of records truly unexpected when found.
	removal := func(id int64) repair.Repair {
		rs, err := f.mgr.Create(ctx, repair.CreateRequest{Selection: repair.Selection{RunID: run8.ID, DiscrepancyIDs: f.ids(t, run8.ID, id)},
			RequestID: fmt.Sprintf("remove-%d", id), Reason: "unexpected", By: "otto"})
		if err != nil || len(rs) != 1 || rs[0].Action != repair.ActionRemove {
			t.Fatalf("removal of %d = %+v, %v", id, rs, err)
		}
		return rs[0]
	}
	before, after := removal(heldBefore), removal(heldAfter)
	if _, err := f.mgr.Approve(ctx, after.ID, "bob", "origins checked"); err != nil {
		t.Fatal(err)
	}
	// The records come to the source (school 7, version 1).
	f.Put(t, repairtest.Rec{ID: heldBefore, Version: 1, School: school7})
	f.Put(t, repairtest.Rec{ID: heldAfter, Version: 1, School: school7})
	_, err = f.mgr.Approve(ctx, before.ID, "bob", "origins checked")
	wantHeld("ApproveRepair of a removal whose record the source holds", err, heldBefore, f.ShardOf(heldBefore), 1)
	if _, err := f.mgr.Cancel(ctx, before.ID, "bob", "the record exists"); err != nil {
		t.Fatal(err)
	}

	f.startExecutor(t, fastConfig(), nil)
	got := f.WaitRepair(t, after.ID, 20*time.Second, repair.Repair.Terminal)
	if got.State != repair.StateFailed || got.ItemsFailed != 1 {
		t.Errorf("removal repair of a record the source holds ended %+v; want FAILED with its item", got)
	}
	it := f.items(t, after.ID)[heldAfter]
	if it.Outcome != repair.OutcomeFailed || it.RowsRemoved != 0 {
		t.Errorf("item %+v; want FAILED, nothing removed", it)
	}
	if !strings.HasPrefix(it.Message, held(heldAfter)) {
		t.Errorf("item message %q; want it to start with %q", it.Message, held(heldAfter))
	}

	// The repair of wrong content: a rebuild of the campaign at epoch 1.
	rs, err := f.mgr.Create(ctx, repair.CreateRequest{Selection: repair.Selection{RunID: run8.ID, DiscrepancyIDs: f.ids(t, run8.ID, mapped, mapped2), RebuildEpoch: 1},
		RequestID: "rebuild", Reason: "school mapping fixed", By: "otto"})
	if err != nil || len(rs) != 1 || rs[0].Action != repair.ActionRebuild {
		t.Fatalf("rebuild = %+v, %v", rs, err)
	}
	if _, err := f.mgr.Approve(ctx, rs[0].ID, "bob", "mapping fixed"); err != nil {
		t.Fatal(err)
	}
	if got := f.WaitRepair(t, rs[0].ID, 30*time.Second, repair.Repair.Terminal); got.State != repair.StateVerified {
		t.Errorf("rebuild repair ended %+v", got)
	}
	if again := f.Reconcile(t); again.Discrepancies != 0 {
		t.Errorf("campaign run after the rebuild: %d discrepancies %v", again.Discrepancies, classes(again))
	}
	// Every record is in the projection under its own school (the rebuilt
	// rows outrank the defective ones), and no removal was made.
	cur, err := f.Target.Records(ctx, reconcile.Scope{DetectID: repairtest.DetectID}, 0, nil, []int64{mapped, mapped2, heldBefore, heldAfter})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{mapped, mapped2, heldBefore, heldAfter} {
		if r, ok := cur[id]; !ok || r.SchoolID != school7 || r.Deleted {
			t.Errorf("record %d in the projection: %+v, %v; want live under school %d", id, r, ok, school7)
		}
	}
	if removed := f.ed.Removed(); len(removed) != 0 {
		t.Errorf("projection rows removed: %v", removed)
	}
}
