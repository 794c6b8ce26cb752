package reconcile_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/delivery/lagwatch"
	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/reconciletest"
	"github.com/resultsync/resultsync/pkg/write/resultstore"
)

// runner runs stored reconciliations over w with the outbox evidence.
func (w *writePath) runner(t *testing.T) (*reconcile.Runner, *reconcile.RunStore) {
	t.Helper()
	return w.runnerWith(t, nil, nil)
}

// runnerWith is runner with its metrics in reg (nil: none) and the outbox
// evidence seen through wrap (nil: as it is).
func (w *writePath) runnerWith(t *testing.T, reg *prometheus.Registry, wrap func(reconcile.Flight) reconcile.Flight) (*reconcile.Runner, *reconcile.RunStore) {
	t.Helper()
	var outboxes []lagwatch.Shard
	for i, d := range w.dbs {
		outboxes = append(outboxes, lagwatch.Shard{ID: w.m.Shards[i].ID, DB: d.DB})
	}
	store := reconcile.NewRunStore(infratest.NewMySQLDatabase(t, schema.Control).DB)
	cfg := reconcile.RunnerConfig{Buckets: 64, Grace: 0, CatchUpWait: 600 * time.Millisecond, MaxBoundaryRetries: 3}
	var fl reconcile.Flight = reconcile.NewOutboxFlight(w.dst.Conn, outboxes)
	if wrap != nil {
		fl = wrap(fl)
	}
	var rg prometheus.Registerer
	if reg != nil {
		rg = reg
	}
	return reconcile.NewRunner(slog.New(slog.NewTextHandler(io.Discard, nil)), cfg, w.src, w.src, w.dst, store, rg, reconcile.WithFlight(fl)), store
}

func (w *writePath) run(t *testing.T, rn *reconcile.Runner, store *reconcile.RunStore) (reconcile.Run, map[int64]reconcile.Class) {
	t.Helper()
	r := reconciletest.Execute(t, rn, store, reconcile.Scope{DetectID: campaign}, reconcile.DepthContent, "test")
	got := map[int64]reconcile.Class{}
	for id, d := range reconciletest.Discrepancies(t, store, r.ID) {
		got[id] = d.Class
	}
	stored, err := store.Get(t.Context(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	type view struct {
		State                   string
		Discrepancies, InFlight int64
		Shards                  []reconcile.ShardReport
	}
	trunc := func(r reconcile.Run) view {
		v := view{State: r.State, Discrepancies: r.Discrepancies, InFlight: r.InFlight}
		for _, s := range r.Shards {
			s.Boundary, s.Applied = s.Boundary.Truncate(time.Millisecond), s.Applied.Truncate(time.Millisecond)
			v.Shards = append(v.Shards, s)
		}
		return v
	}
	if diff := cmp.Diff(trunc(r), trunc(stored)); diff != "" {
		t.Errorf("stored run differs from the executed one (-executed +stored):\n%s", diff)
	}
	return r, got
}

// applyEvents writes the given events from the shards' outboxes into the
// projection through the consumer's mapping, as a consumer that resumed.
func (w *writePath) applyEvents(t *testing.T, events []string) {
	t.Helper()
	var rows []chstore.Row
	for _, d := range w.dbs {
		for _, ev := range events {
			var payload []byte
			err := d.DB.QueryRowContext(t.Context(), "SELECT payload FROM outbox_event WHERE event_id = ?", ev).Scan(&payload)
			if err != nil {
				continue // on the other shard
			}
			e, err := consumer.Decode(payload)
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, consumer.ToRow(e, 0, time.Now().UnixMilli()))
		}
	}
	if len(rows) != len(events) {
		t.Fatalf("found %d of %d events in the outboxes", len(rows), len(events))
	}
	if err := w.proj.Insert(t.Context(), rows); err != nil {
		t.Fatal(err)
	}
}

// TestInFlightIsNotWrongData: records written through the real write path
// and delivered, except one event the projection lost although the broker
// acknowledged it and later events of its shard were applied: wrong data.
// Then the consumer stops: four new records SENT by the relay and never
// applied, and a correction still unsent. A CONTENT run reports the lost
// one as MISSING_IN_TARGET, the five as in flight on the shards that hold
// them (not MISSING_IN_TARGET or STALE_TARGET_VERSION), and ends
// BOUNDARY_NOT_REACHED naming exactly those shards. Once the consumer has
// applied them a run clears them, SUCCEEDED, and still confirms the loss.
func TestInFlightIsNotWrongData(t *testing.T) {
	w := newWritePath(t)
	var lostEvent string
	const lost = int64(900101)
	for i := range int64(40) {
		id := 900100 + i
		out, err := w.store(id).Record(t.Context(), resultstore.RecordCommand{DataID: id, DetectID: campaign, UserID: 4, ProjectID: 3,
			SchoolID: 7 + i%3, Grade: 5, Result: "2.21", Unit: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if id == lost {
			lostEvent = out.EventID
		}
	}
	w.deliver(t, func(ev string) bool { return ev == lostEvent })
	rn, store := w.runner(t)
	r, got := w.run(t, rn, store)
	if diff := cmp.Diff(map[int64]reconcile.Class{lost: reconcile.MissingInTarget}, got); diff != "" || r.State != reconcile.StateSucceeded || r.InFlight != 0 {
		t.Fatalf("caught-up run: %s, %d in flight, discrepancies (-want +got):\n%s", r.State, r.InFlight, diff)
	}

	// The consumer stops; the relay keeps sending.
	var fresh []string
	want := map[string]int64{}
	for i := range int64(4) {
		id := 900200 + i
		out, err := w.store(id).Record(t.Context(), resultstore.RecordCommand{DataID: id, DetectID: campaign, UserID: 4, ProjectID: 3,
			SchoolID: 7, Grade: 5, Result: "1.50", Unit: "m"})
		if err != nil {
			t.Fatal(err)
		}
		fresh = append(fresh, out.EventID)
		want[w.m.Shards[w.m.Owner(id)].ID]++
	}
	if n := w.deliver(t, func(string) bool { return true }); n != 0 {
		t.Fatalf("delivered %d", n)
	}
	const corrected = int64(900110)
	out, err := w.store(corrected).Correct(t.Context(), resultstore.CorrectCommand{SchoolID: 7 + (corrected-900100)%3, DataID: corrected,
		ExpectedVersion: 1, Result: "2.31", Unit: "m"})
	if err != nil {
		t.Fatal(err)
	}
	unsent := out.EventID
	want[w.m.Shards[w.m.Owner(corrected)].ID]++

	r, got = w.run(t, rn, store)
	if diff := cmp.Diff(map[int64]reconcile.Class{lost: reconcile.MissingInTarget}, got); diff != "" {
		t.Errorf("with the consumer stopped (-want +got):\n%s", diff)
	}
	gotShards := map[string]int64{}
	behind := map[string]bool{}
	for _, s := range r.Shards {
		if s.InFlight > 0 {
			gotShards[s.ShardID] = s.InFlight
		}
		if s.Behind {
			behind[s.ShardID] = true
		}
	}
	if r.State != reconcile.StateBoundaryNotReached || r.InFlight != 5 || r.Discrepancies != 1 {
		t.Errorf("run = %s, %d in flight, %d discrepancies; want BOUNDARY_NOT_REACHED, 5, 1 (message %q)", r.State, r.InFlight, r.Discrepancies, r.Message)
	}
	if diff := cmp.Diff(want, gotShards); diff != "" {
		t.Errorf("in flight per shard (-want +got):\n%s", diff)
	}
	for id := range want {
		if !behind[id] {
			t.Errorf("shard %s holds records in flight but is not named behind: %+v", id, r.Shards)
		}
	}
	t.Logf("with the consumer stopped: %s; %s", r.State, r.Message)

	// The consumer resumes: the relay sends the correction, everything is applied.
	w.deliver(t, func(string) bool { return true })
	w.applyEvents(t, append(fresh, unsent))
	r, got = w.run(t, rn, store)
	if diff := cmp.Diff(map[int64]reconcile.Class{lost: reconcile.MissingInTarget}, got); diff != "" || r.State != reconcile.StateSucceeded ||
		r.InFlight != 0 || len(r.BehindShards()) != 0 {
		t.Errorf("after catch-up: %s, %d in flight, behind %v, discrepancies (-want +got):\n%s", r.State, r.InFlight, r.BehindShards(), diff)
	}
}

// TestRecheckBeyondQuerySize re-checks more candidates than one ClickHouse
// query may list (256 KiB max_query_size: about 25-30 thousand ids).
func TestRecheckBeyondQuerySize(t *testing.T) {
	f := newFixture(t)
	f.source(t, rec{id: 900001, version: 1, school: 7, result: "2.21"})
	cands := make([]reconcile.Discrepancy, 60_000)
	for i := range cands {
		cands[i] = reconcile.Discrepancy{Class: reconcile.MissingInTarget, DataID: int64(10_000_000 + i)}
	}
	cands[len(cands)-1].DataID = 900001
	got, err := reconcile.Recheck(context.Background(), f.src, f.dst, reconcile.Scope{DetectID: campaign}, reconcile.DepthContent, cands)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].DataID != 900001 || got[0].Class != reconcile.MissingInTarget {
		t.Errorf("re-check of 60,000 candidates = %v; want 900001 missing", got)
	}
}

// TestVersionsDepthComparesDeletionState: a record deleted in the
// projection at the version the source holds live (and the reverse) is
// found at VERSIONS depth, not only at CONTENT depth.
func TestVersionsDepthComparesDeletionState(t *testing.T) {
	f := newFixture(t)
	f.seed(t, 100)
	f.source(t, rec{id: 900070, version: 2, school: 7, result: "2.31"})
	f.target(t, rec{id: 900070, version: 2, school: 7, result: "2.31", deleted: true})
	f.source(t, rec{id: 900071, version: 2, school: 8, result: "2.31", deleted: true})
	f.target(t, rec{id: 900071, version: 2, school: 8, result: "2.31"})
	want := map[int64]reconcile.Class{900070: reconcile.ContentMismatch, 900071: reconcile.DeletionNotApplied}
	for _, depth := range []reconcile.Depth{reconcile.DepthVersions, reconcile.DepthContent} {
		for _, n := range []int{64, reconcile.StoredBuckets} {
			if diff := cmp.Diff(want, f.compareWith(t, depth, n)); diff != "" {
				t.Errorf("depth %d, %d buckets (-want +got):\n%s", depth, n, diff)
			}
		}
	}
	// Live counts differ too, so COUNTS finds them as well.
	if diff := cmp.Diff(want, f.compare(t, reconcile.DepthCounts)); diff != "" {
		t.Errorf("COUNTS (-want +got):\n%s", diff)
	}
}

// TestStreamHoldsOneStep: Stream hands the differences on step by step, each
// step within ChunkRows records, and Compare returns the same.
func TestStreamHoldsOneStep(t *testing.T) {
	f := newFixture(t)
	f.seed(t, 300)
	for i := range int64(50) {
		f.source(t, rec{id: 910000 + i, version: 1, school: 7, result: "2.21"})
	}
	var steps, total int
	_, bad, err := reconcile.Stream(context.Background(), f.src, f.dst, reconcile.Scope{DetectID: campaign}, reconcile.DepthContent, 64, nil, nil,
		func(ds []reconcile.Discrepancy) error {
			steps++
			total += len(ds)
			for i := 1; i < len(ds); i++ {
				if ds[i].DataID <= ds[i-1].DataID {
					return fmt.Errorf("step not sorted at %d", ds[i].DataID)
				}
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if total != 50 || steps == 0 || len(bad) == 0 {
		t.Errorf("streamed %d discrepancies in %d steps over %d buckets; want 50", total, steps, len(bad))
	}
	var again int
	if err := reconcile.StreamBuckets(context.Background(), f.src, f.dst, reconcile.Scope{DetectID: campaign}, reconcile.DepthContent, 64, bad,
		func(ds []reconcile.Discrepancy) error { again += len(ds); return nil }, nil); err != nil || again != 50 {
		t.Errorf("re-reading the buckets found %d, %v; want 50", again, err)
	}
}

// TestEventSentAfterThePositionsIsInFlight: a correction's event is unsent
// when a run reads the applied positions; the relay sends it before the run
// reads the outbox statuses of what differs, and the consumer has not
// applied it yet, while a later event of the shard was applied: a position
// that passed over the unsent event would call its record wrong data. It is
// in flight.
func TestEventSentAfterThePositionsIsInFlight(t *testing.T) {
	w := newWritePath(t)
	const id = int64(900301)
	if _, err := w.store(id).Record(t.Context(), resultstore.RecordCommand{DataID: id, DetectID: campaign, UserID: 4, ProjectID: 3,
		SchoolID: 7, Grade: 5, Result: "2.21", Unit: "m"}); err != nil {
		t.Fatal(err)
	}
	w.deliver(t, nil)
	if _, err := w.store(id).Correct(t.Context(), resultstore.CorrectCommand{SchoolID: 7, DataID: id, ExpectedVersion: 1, Result: "2.31", Unit: "m"}); err != nil {
		t.Fatal(err)
	}
	// A later record of the same shard, sent and applied: the shard's
	// newest applied commit is past the unsent correction.
	const later = id + 2 // the same shard of two
	if w.m.Owner(later) != w.m.Owner(id) {
		t.Fatalf("records %d and %d are on different shards", id, later)
	}
	if _, err := w.store(later).Record(t.Context(), resultstore.RecordCommand{DataID: later, DetectID: campaign, UserID: 4, ProjectID: 3,
		SchoolID: 7, Grade: 5, Result: "2.21", Unit: "m"}); err != nil {
		t.Fatal(err)
	}
	w.applyEvents(t, []string{canonical.EventID(later, 1)})

	var outboxes []lagwatch.Shard
	for i, d := range w.dbs {
		outboxes = append(outboxes, lagwatch.Shard{ID: w.m.Shards[i].ID, DB: d.DB})
	}
	fl := reconcile.NewOutboxFlight(w.dst.Conn, outboxes)
	_, applied, err := fl.Positions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The relay sends everything now; the consumer applies none of it.
	w.deliver(t, func(string) bool { return true })
	got, err := fl.InFlight(t.Context(), map[int64]int64{id: 2}, applied)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got[id]; !ok {
		t.Fatalf("record %d's v2, unsent when the positions were read (%v) and sent since, is not in flight: %v", id, applied, got)
	}
}
