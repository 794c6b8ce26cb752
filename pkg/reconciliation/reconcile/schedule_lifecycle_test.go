package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/testkit/reconciletest"
	"github.com/resultsync/resultsync/pkg/write/resultstore"
)

// hookFlight is the real outbox evidence with a hook run before its n-th
// Positions call: a write then lands after the run's boundary was read and
// before its records are, exactly when live traffic would.
type hookFlight struct {
	reconcile.Flight
	calls, at int
	hook      func()
}

func (h *hookFlight) Positions(ctx context.Context) (map[string]time.Time, map[string]time.Time, error) {
	h.calls++
	if h.calls == h.at && h.hook != nil {
		h.hook()
	}
	return h.Flight.Positions(ctx)
}

// lifecycleRunner is w's runner with a metrics registry and a hookable
// flight.
func (w *writePath) lifecycleRunner(t *testing.T) (*reconcile.Runner, *reconcile.RunStore, *hookFlight, *prometheus.Registry) {
	t.Helper()
	var fl *hookFlight
	reg := prometheus.NewRegistry()
	rn, store := w.runnerWith(t, reg, func(f reconcile.Flight) reconcile.Flight {
		fl = &hookFlight{Flight: f}
		return fl
	})
	return rn, store, fl, reg
}

// discrepancies returns a run's discrepancies by record.
func discrepancies(t *testing.T, store *reconcile.RunStore, runID string) map[int64]reconcile.StoredDiscrepancy {
	t.Helper()
	return reconciletest.Discrepancies(t, store, runID)
}

func unresolvedGauge(t *testing.T, reg *prometheus.Registry, class reconcile.Class) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "reconcile_unresolved_discrepancies" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "class" && l.GetValue() == class.String() {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no reconcile_unresolved_discrepancies{class=%q}", class)
	return 0
}

// TestCleanRunResolvesEarlierDiscrepancies is the discrepancy lifecycle on
// the real write path: three records whose first event the projection lost
// (A, B, C, all of school 8) are MISSING_IN_TARGET in a first CONTENT run.
//   - A heals through the normal path (a later correction is delivered).
//     A school-7 run is clean, but covers none of them: all three stay
//     unresolved.
//   - A campaign run during which C is corrected after the run's boundary
//     (its newest version in flight when compared): A is resolved, recorded
//     with the resolving run, time and CLEAN_RUN; B is found again and C is
//     in flight: both stay unresolved.
//   - A VERSIONS run after a content defect was found leaves the
//     CONTENT_MISMATCH unresolved even when the defect is fixed; a CONTENT
//     run resolves it.
//   - B is re-delivered and C's correction applied: the next run resolves
//     both; the unresolved gauge falls 4 -> 3 -> 0.
func TestCleanRunResolvesEarlierDiscrepancies(t *testing.T) {
	w := newWritePath(t)
	const a, b, c, d = int64(900101), int64(900104), int64(900107), int64(900110)
	events := map[int64]string{}
	for i := range int64(40) {
		id := 900100 + i
		out, err := w.store(id).Record(t.Context(), resultstore.RecordCommand{DataID: id, DetectID: campaign, UserID: 4, ProjectID: 3,
			SchoolID: 7 + i%3, Grade: 5, Result: "2.21", Unit: "m"})
		if err != nil {
			t.Fatal(err)
		}
		events[id] = out.EventID
	}
	w.deliver(t, func(ev string) bool { return ev == events[a] || ev == events[b] || ev == events[c] })
	// D: the projection holds a wrong result at D's version (a defective
	// mapping), outranking the right row by its epoch.
	wrong := chstore.Row{DetectID: campaign, DataID: d, UserID: 4, ProjectID: 3, SchoolID: 7 + (d-900100)%3, Grade: 5, Version: 1, Epoch: 1,
		Result: "9.99", Unit: "m", EventID: events[d], ShardID: w.m.Shards[w.m.Owner(d)].ID}
	if err := w.proj.Insert(t.Context(), []chstore.Row{wrong}); err != nil {
		t.Fatal(err)
	}
	rn, store, fl, reg := w.lifecycleRunner(t)
	run := func(sc reconcile.Scope, depth reconcile.Depth) reconcile.Run {
		t.Helper()
		fl.calls = 0
		r := reconciletest.Execute(t, rn, store, sc, depth, "test")
		if r.State != reconcile.StateSucceeded {
			t.Fatalf("run %s: %s (%s %s)", r.ID, r.State, r.Message, r.Error)
		}
		return r
	}
	classes := func(ds map[int64]reconcile.StoredDiscrepancy) map[int64]reconcile.Class {
		out := map[int64]reconcile.Class{}
		for id, d := range ds {
			out[id] = d.Class
		}
		return out
	}
	whole := reconcile.Scope{DetectID: campaign}
	first := run(whole, reconcile.DepthContent)
	want := map[int64]reconcile.Class{a: reconcile.MissingInTarget, b: reconcile.MissingInTarget, c: reconcile.MissingInTarget, d: reconcile.ContentMismatch}
	if diff := cmp.Diff(want, classes(discrepancies(t, store, first.ID))); diff != "" {
		t.Fatalf("first run (-want +got):\n%s", diff)
	}
	if g := unresolvedGauge(t, reg, reconcile.MissingInTarget); g != 3 {
		t.Errorf("unresolved MISSING_IN_TARGET after the first run = %v, want 3", g)
	}
	unresolved := func() map[int64]bool {
		t.Helper()
		out := map[int64]bool{}
		for id, d := range discrepancies(t, store, first.ID) {
			if !d.Resolved {
				out[id] = true
			}
		}
		return out
	}

	// A heals through the normal path.
	if _, err := w.store(a).Correct(t.Context(), resultstore.CorrectCommand{SchoolID: 8, DataID: a, ExpectedVersion: 1, Result: "2.31", Unit: "m"}); err != nil {
		t.Fatal(err)
	}
	w.deliver(t, nil)
	school7 := run(reconcile.Scope{DetectID: campaign, SchoolID: 7}, reconcile.DepthContent)
	if school7.Discrepancies != 0 {
		t.Fatalf("school-7 run found %d discrepancies", school7.Discrepancies)
	}
	if diff := cmp.Diff(map[int64]bool{a: true, b: true, c: true, d: true}, unresolved()); diff != "" {
		t.Errorf("a school-7 run resolved records of school 8 (-want +got unresolved):\n%s", diff)
	}

	// C is corrected after the boundary was read: in flight when compared.
	fl.at = 2
	fl.hook = func() {
		if _, err := w.store(c).Correct(context.Background(), resultstore.CorrectCommand{SchoolID: 8, DataID: c, ExpectedVersion: 1, Result: "2.41", Unit: "m"}); err != nil {
			t.Error(err)
		}
	}
	versions := run(whole, reconcile.DepthVersions)
	fl.hook = nil
	if versions.InFlight != 1 {
		t.Errorf("run with C in flight: %d in flight, want 1 (%s)", versions.InFlight, versions.Message)
	}
	if diff := cmp.Diff(map[int64]reconcile.Class{b: reconcile.MissingInTarget}, classes(discrepancies(t, store, versions.ID))); diff != "" {
		t.Errorf("run with C in flight (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[int64]bool{b: true, c: true, d: true}, unresolved()); diff != "" {
		t.Errorf("after a VERSIONS run with B wrong, C in flight and D's content wrong (-want +got unresolved):\n%s", diff)
	}
	resA := discrepancies(t, store, first.ID)[a]
	if resA.ResolvedByRun != versions.ID || resA.Resolution != reconcile.ResolutionCleanRun ||
		resA.ResolveTime.Before(versions.Created.Add(-time.Second)) || resA.ResolveTime.After(time.Now().Add(time.Second)) {
		t.Errorf("A resolved by %q (%s) at %s; want run %s (CLEAN_RUN) after %s", resA.ResolvedByRun, resA.Resolution, resA.ResolveTime, versions.ID, versions.Created)
	}
	if versions.Resolved != 1 {
		t.Errorf("the run reports %d resolved, want 1", versions.Resolved)
	}
	if g := unresolvedGauge(t, reg, reconcile.MissingInTarget); g != 2 {
		t.Errorf("unresolved MISSING_IN_TARGET = %v, want 2 (B, C)", g)
	}

	// Everything delivered; D's defect fixed at a higher epoch: a VERSIONS
	// run clears B and C but not D's CONTENT_MISMATCH; CONTENT does.
	w.deliver(t, nil)
	w.applyEvents(t, []string{events[b]})
	fixed := wrong
	fixed.Epoch, fixed.Result = 2, "2.21"
	if err := w.proj.Insert(t.Context(), []chstore.Row{fixed}); err != nil {
		t.Fatal(err)
	}
	if r := run(whole, reconcile.DepthVersions); r.Discrepancies != 0 || r.InFlight != 0 {
		t.Fatalf("VERSIONS run after delivery: %d discrepancies, %d in flight", r.Discrepancies, r.InFlight)
	}
	if diff := cmp.Diff(map[int64]bool{d: true}, unresolved()); diff != "" {
		t.Errorf("after a clean VERSIONS run (-want +got unresolved):\n%s", diff)
	}
	if g := unresolvedGauge(t, reg, reconcile.ContentMismatch); g != 1 {
		t.Errorf("unresolved CONTENT_MISMATCH = %v, want 1", g)
	}
	if r := run(whole, reconcile.DepthContent); r.Discrepancies != 0 {
		t.Fatalf("CONTENT run after the fix: %d discrepancies", r.Discrepancies)
	}
	if diff := cmp.Diff(map[int64]bool{}, unresolved()); diff != "" {
		t.Errorf("after a clean CONTENT run (-want +got unresolved):\n%s", diff)
	}
	for c := reconcile.MissingInTarget; c <= reconcile.TargetAheadOfSource; c++ {
		if g := unresolvedGauge(t, reg, c); g != 0 {
			t.Errorf("unresolved %s = %v after the projection is right, want 0", c, g)
		}
	}
}
