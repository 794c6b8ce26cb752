package reconcile_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// schedulerOn returns a scheduler over f with its own runner (its worker
// running until the test ends), on control.
func (f *fixture) schedulerOn(t *testing.T, control *infratest.MySQLDatabase, cfg reconcile.SchedulerConfig, holder string) (*reconcile.Scheduler, *reconcile.RunStore, *prometheus.Registry) {
	t.Helper()
	store := reconcile.NewRunStore(control.DB)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	rn := reconcile.NewRunner(log, reconcile.RunnerConfig{Buckets: 64, Grace: 0, MaxBoundaryRetries: 1}, f.src, f.src, f.dst, store, reg)
	ctx, stop := context.WithCancel(context.Background())
	worker := make(chan struct{})
	go func() { defer close(worker); _ = rn.Run(ctx) }()
	t.Cleanup(func() { stop(); <-worker })
	s, err := reconcile.NewScheduler(log, cfg, rn, store, reconcile.NewScheduleStore(control.DB), f.src, reg, holder)
	if err != nil {
		t.Fatal(err)
	}
	return s, store, reg
}

// gauge reads a gauge of reg by name and detect_id label.
func gauge(t *testing.T, reg *prometheus.Registry, name string, detectID int64) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "detect_id" && l.GetValue() == fmt.Sprint(detectID) {
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

// TestSchedulerSamplesContentDriftWithinPeriod: a campaign of 300 records
// on two shards and ClickHouse, and one record whose ClickHouse row holds a
// wrong result at the right version (a defective mapping: counts and
// versions match). Nobody starts a run. The scheduler's first cycle runs the
// campaign at VERSIONS depth (clean: the drift is invisible there) and then
// compares a rotating window of buckets at CONTENT depth each cycle; a
// sample run reports the record CONTENT_MISMATCH within one period, the
// whole campaign is not run again while its revision stands, and the
// per-campaign gauges are set.
func TestSchedulerSamplesContentDriftWithinPeriod(t *testing.T) {
	f := newFixture(t)
	f.seed(t, 300)
	const drifted = int64(100123) // version 1, live
	if err := f.proj.Insert(t.Context(), []chstore.Row{{DetectID: campaign, DataID: drifted, UserID: 4, ProjectID: 3, SchoolID: 10 + 123%7,
		Grade: 5, Version: 1, Epoch: 1, Result: "9.99", Unit: "m", EventID: "fitness-result-100123-v1", ShardID: "shard-x"}}); err != nil {
		t.Fatal(err)
	}
	if got := f.compareWith(t, reconcile.DepthVersions, 64); len(got) != 0 {
		t.Fatalf("the drift is visible at VERSIONS depth: %v", got)
	}
	control := infratest.NewMySQLDatabase(t, schema.Control)
	const period = 2 * time.Second
	cfg := reconcile.SchedulerConfig{Interval: 100 * time.Millisecond, Period: period, Depth: reconcile.DepthVersions, MaxRunsPerCycle: 10, LeaseTTL: time.Second}
	s, store, reg := f.schedulerOn(t, control, cfg, "a")
	start := time.Now()
	var found reconcile.Run
	for cycles := 0; found.ID == "" && time.Since(start) < period+time.Second; cycles++ {
		if err := s.Cycle(t.Context()); err != nil {
			t.Fatal(err)
		}
		runs, _, err := store.List(t.Context(), campaign, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.Discrepancies > 0 {
				found = r
			}
		}
		if found.ID == "" {
			time.Sleep(cfg.Interval) // the cadence Run keeps between cycles
		}
	}
	if found.ID == "" {
		t.Fatalf("no scheduled run found the content drift within %s", time.Since(start))
	}
	elapsed := time.Since(start)
	ds := discrepancies(t, store, found.ID)
	if len(ds) != 1 || ds[drifted].Class != reconcile.ContentMismatch {
		t.Errorf("run %s found %v; want %d CONTENT_MISMATCH", found.ID, ds, drifted)
	}
	if found.CreatedBy != reconcile.SchedulerCreatedBy || found.Depth != reconcile.DepthContent || found.State != reconcile.StateSucceeded {
		t.Errorf("the run that found it: by %q at depth %d, %s; want a SUCCEEDED CONTENT run by the scheduler", found.CreatedBy, found.Depth, found.State)
	}
	runs, _, err := store.List(t.Context(), campaign, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	whole := 0
	for _, r := range runs {
		if r.CreatedBy == reconcile.SchedulerCreatedBy && r.Depth == reconcile.DepthVersions {
			whole++
			if r.Discrepancies != 0 || r.State != reconcile.StateSucceeded {
				t.Errorf("the VERSIONS run %s: %s with %d discrepancies", r.ID, r.State, r.Discrepancies)
			}
		}
	}
	if whole != 1 {
		t.Errorf("%d whole-campaign runs; want 1 (the revision did not move)", whole)
	}
	t.Logf("found in %s by %s (%d runs, %s)", elapsed, found.ID, len(runs), found.Message)
	if age, ok := gauge(t, reg, "reconcile_campaign_last_clean_run_age_seconds", campaign); !ok || age > period.Seconds() {
		t.Errorf("last clean run age = %v (set %t); want at most %s", age, ok, period)
	}
	if _, ok := gauge(t, reg, "reconcile_campaign_oldest_unchecked_bucket_age_seconds", campaign); !ok {
		t.Error("no oldest-unchecked-bucket gauge for the campaign")
	}
	cs, err := reconcile.NewScheduleStore(control.DB).List(t.Context(), 64, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].DetectID != campaign || cs[0].CheckedBuckets == 0 || cs[0].LastCleanRevision < 0 {
		t.Errorf("schedule = %+v", cs)
	}
}

// TestSchedulerCoversEveryBucketWithinPeriod: cycles back to back over a
// clean campaign compare every one of its buckets at CONTENT depth within
// the period.
func TestSchedulerCoversEveryBucketWithinPeriod(t *testing.T) {
	f := newFixture(t)
	f.seed(t, 200)
	control := infratest.NewMySQLDatabase(t, schema.Control)
	const period = time.Second
	cfg := reconcile.SchedulerConfig{Interval: 100 * time.Millisecond, Period: period, Depth: reconcile.DepthVersions, MaxRunsPerCycle: 10, LeaseTTL: time.Second}
	s, _, _ := f.schedulerOn(t, control, cfg, "a")
	sched := reconcile.NewScheduleStore(control.DB)
	start := time.Now()
	for {
		if err := s.Cycle(t.Context()); err != nil {
			t.Fatal(err)
		}
		cs, err := sched.List(t.Context(), 64, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) == 1 && cs[0].CheckedBuckets == 64 {
			t.Logf("every bucket compared in %s (%d cycles)", time.Since(start), s.Cycles())
			break
		}
		if time.Since(start) > period+cfg.Interval+500*time.Millisecond {
			t.Fatalf("after %s only %+v", time.Since(start), cs)
		}
		time.Sleep(cfg.Interval)
	}
}

// TestSchedulerLease: two schedulers on one control database: only one
// runs cycles; when it stops, the other takes over within the lease.
func TestSchedulerLease(t *testing.T) {
	f := newFixture(t)
	f.seed(t, 50)
	control := infratest.NewMySQLDatabase(t, schema.Control)

	// The lease itself, by the database's clock.
	st := reconcile.NewScheduleStore(control.DB)
	ttl := 300 * time.Millisecond
	for _, step := range []struct {
		holder string
		want   bool
	}{{"x", true}, {"y", false}, {"x", true}, {"y", false}} {
		if got, err := st.Acquire(t.Context(), step.holder, ttl); err != nil || got != step.want {
			t.Fatalf("Acquire(%s) = %t, %v; want %t", step.holder, got, err, step.want)
		}
	}
	time.Sleep(ttl + 50*time.Millisecond) // let x's lease expire
	if got, err := st.Acquire(t.Context(), "y", ttl); err != nil || !got {
		t.Fatalf("Acquire(y) after x's lease expired = %t, %v", got, err)
	}
	if got, err := st.Acquire(t.Context(), "x", ttl); err != nil || got {
		t.Fatalf("Acquire(x) while y holds = %t, %v", got, err)
	}
	if err := st.Release(t.Context(), "y"); err != nil {
		t.Fatal(err)
	}

	cfg := reconcile.SchedulerConfig{Interval: 50 * time.Millisecond, Period: time.Hour, Depth: reconcile.DepthVersions, MaxRunsPerCycle: 2, LeaseTTL: 600 * time.Millisecond}
	a, _, _ := f.schedulerOn(t, control, cfg, "a")
	b, _, _ := f.schedulerOn(t, control, cfg, "b")
	ctxA, stopA := context.WithCancel(t.Context())
	ctxB, stopB := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for _, x := range []struct {
		s   *reconcile.Scheduler
		ctx context.Context
	}{{a, ctxA}, {b, ctxB}} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = x.s.Run(x.ctx) }()
	}
	defer func() { stopA(); stopB(); wg.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for a.Cycles()+b.Cycles() < 10 {
		if time.Now().After(deadline) {
			t.Fatalf("cycles: a %d, b %d", a.Cycles(), b.Cycles())
		}
		time.Sleep(20 * time.Millisecond)
	}
	active, idle := a, b
	stopActive := stopA
	if b.Cycles() > 0 {
		active, idle, stopActive = b, a, stopB
	}
	if idle.Cycles() != 0 {
		t.Fatalf("both schedulers ran cycles: a %d, b %d", a.Cycles(), b.Cycles())
	}
	stopActive()
	before := active.Cycles()
	for idle.Cycles() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the idle scheduler %s did not take over (cycles %d)", idle.Holder(), idle.Cycles())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if active.Cycles() > before+1 {
		t.Errorf("the stopped scheduler kept cycling: %d -> %d", before, active.Cycles())
	}
}
