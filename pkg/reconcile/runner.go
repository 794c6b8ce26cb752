package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/apierr"
)

// RevisionReader reads a campaign's revision on the authoritative side.
type RevisionReader interface {
	CampaignRevision(ctx context.Context, detectID int64) (int64, error)
}

// CampaignRevision implements RevisionReader: the sum of the campaign's
// bucket revisions over every shard (kept by triggers); it moves with every
// committed change.
func (m MySQLSource) CampaignRevision(ctx context.Context, detectID int64) (int64, error) {
	var total int64
	for i, db := range m.Shards {
		var rev int64
		if err := db.QueryRowContext(ctx, "SELECT COALESCE(SUM(revision), 0) FROM campaign_bucket WHERE detect_id = ?", detectID).Scan(&rev); err != nil {
			return 0, fmt.Errorf("shard %d revision: %w", i, err)
		}
		total += rev
	}
	return total, nil
}

// CampaignExists reports whether any shard knows the campaign.
func (m MySQLSource) CampaignExists(ctx context.Context, detectID int64) (bool, error) {
	for i, db := range m.Shards {
		var n int
		err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM (SELECT 1 FROM fitness_result WHERE detect_id = ? LIMIT 1) t", detectID).Scan(&n)
		if err != nil {
			return false, fmt.Errorf("shard %d: %w", i, err)
		}
		if n > 0 {
			return true, nil
		}
	}
	return false, nil
}

// RunnerConfig tunes runs.
type RunnerConfig struct {
	Buckets int           // buckets per comparison
	Grace   time.Duration // least wait before candidates are re-checked
	// CatchUpWait is the longest wait for the projection to reach a run's
	// boundary (checked every CatchUpPoll, not slept through): after a scan
	// the campaign revision moved under, and before the re-check.
	CatchUpWait        time.Duration
	MaxBoundaryRetries int // scans retried because the revision moved
	// MaxConcurrentRuns bounds the runs executed at once; more wait QUEUED
	// in arrival order (0: DefaultMaxConcurrentRuns).
	MaxConcurrentRuns int
	// MaxQueuedRuns bounds the runs Admit lets wait QUEUED beyond those
	// executing (0: DefaultMaxQueuedRuns).
	MaxQueuedRuns int
}

// Defaults of the run bounds.
const (
	DefaultMaxConcurrentRuns = 2
	DefaultMaxQueuedRuns     = 32
)

// ErrQueueFull is returned by Admit when the queue of runs is full.
var ErrQueueFull = apierr.New(apierr.ResourceExhausted, "too many reconciliation runs are executing or queued; retry when one has ended")

// CatchUpPoll is how often the projection's applied positions are read
// while a run waits for them.
const CatchUpPoll = 200 * time.Millisecond

// DefaultRunnerConfig is a sane default.
func DefaultRunnerConfig() RunnerConfig {
	return RunnerConfig{Buckets: 1024, Grace: 5 * time.Second, CatchUpWait: 30 * time.Second, MaxBoundaryRetries: 3,
		MaxConcurrentRuns: DefaultMaxConcurrentRuns, MaxQueuedRuns: DefaultMaxQueuedRuns}
}

// Runner executes stored runs.
type Runner struct {
	log    *slog.Logger
	cfg    RunnerConfig
	src    Side
	rev    RevisionReader
	dst    Side
	store  *RunStore
	flight Flight
	slots  chan struct{}
	// admitted counts the runs Admit let in that have not released.
	admitted  atomic.Int64
	maxQueued int64
	m         *runnerMetrics
}

// RunnerOption configures a Runner.
type RunnerOption func(*Runner)

// WithFlight gives the runner the evidence that tells delay from wrong data
// (OutboxFlight). Without it a run cannot check its boundary: it drills
// into the differing buckets after the grace period only and reports every
// difference it finds then.
func WithFlight(f Flight) RunnerOption { return func(rn *Runner) { rn.flight = f } }

type runnerMetrics struct {
	runs       *prometheus.CounterVec
	seconds    prometheus.Histogram
	rows       prometheus.Counter
	unresolved *prometheus.GaugeVec
	queued     prometheus.Gauge
	inFlight   *prometheus.GaugeVec
}

// NewRunner returns a runner; reg may be nil.
func NewRunner(log *slog.Logger, cfg RunnerConfig, src Side, rev RevisionReader, dst Side, store *RunStore, reg prometheus.Registerer, opts ...RunnerOption) *Runner {
	m := &runnerMetrics{
		runs:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "reconcile_runs_total", Help: "Reconciliation runs ended, by state."}, []string{"state"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "reconcile_run_seconds", Help: "Reconciliation run duration.", Buckets: prometheus.ExponentialBuckets(0.1, 2, 14)}),
		rows:    prometheus.NewCounter(prometheus.CounterOpts{Name: "reconcile_rows_compared_total", Help: "Rows compared (both sides)."}),
		unresolved: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "reconcile_unresolved_discrepancies",
			Help: "Records with an unresolved discrepancy, per class, over every run and campaign (read from the control database after each run: a verified repair or a later clean run covering a record resolves it)."}, []string{"class"}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{Name: "reconcile_runs_queued", Help: "Runs waiting for a free run slot."}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "reconcile_in_flight_records",
			Help: "Records the latest run found still in flight (unsent or unapplied), per shard."}, []string{"shard"}),
	}
	if reg != nil {
		reg.MustRegister(m.runs, m.seconds, m.rows, m.unresolved, m.queued, m.inFlight)
	}
	n := cfg.MaxConcurrentRuns
	if n <= 0 {
		n = DefaultMaxConcurrentRuns
	}
	q := cfg.MaxQueuedRuns
	if q <= 0 {
		q = DefaultMaxQueuedRuns
	}
	rn := &Runner{log: log, cfg: cfg, src: src, rev: rev, dst: dst, store: store, slots: make(chan struct{}, n), maxQueued: int64(q), m: m}
	for _, o := range opts {
		o(rn)
	}
	return rn
}

// Admit reserves a place for a run about to be started: at most
// MaxConcurrentRuns executing plus MaxQueuedRuns queued; ErrQueueFull
// beyond. release gives the place back once the run has ended.
func (rn *Runner) Admit() (release func(), err error) {
	if rn.admitted.Add(1) > int64(cap(rn.slots))+rn.maxQueued {
		rn.admitted.Add(-1)
		return nil, ErrQueueFull
	}
	var once sync.Once
	return func() { once.Do(func() { rn.admitted.Add(-1) }) }, nil
}

// Execute runs r to a terminal state, writing progress to the store. When
// MaxConcurrentRuns runs are executing, r waits QUEUED for a slot.
func (rn *Runner) Execute(ctx context.Context, r Run) Run {
	start := time.Now()
	bad := map[int64]bool{}
	err := rn.execute(ctx, &r, bad)
	switch {
	case err != nil:
		r.State, r.Error = StateFailed, err.Error()
	case len(r.BehindShards()) > 0:
		r.State = StateBoundaryNotReached
	default:
		r.State = StateSucceeded
		// Earlier discrepancies of the records this run covered and found
		// consistent are resolved before the run is recorded SUCCEEDED (a
		// crash in between leaves them for the next clean run).
		if n, rerr := rn.resolveCovered(context.WithoutCancel(ctx), r, bad); rerr != nil {
			rn.log.Error("resolving the discrepancies a run found consistent", "run", r.ID, "err", rerr)
			r.Message += fmt.Sprintf("could not resolve earlier discrepancies of the records found consistent: %v. ", rerr)
		} else if n > 0 {
			r.Resolved = n
			r.Message += fmt.Sprintf("%d earlier discrepancies resolved: their records were found consistent. ", n)
		}
	}
	r.Ended = time.Now().UTC()
	if uerr := rn.store.Update(context.WithoutCancel(ctx), r); uerr != nil {
		rn.log.Error("recording the end of a run", "run", r.ID, "err", uerr)
	}
	rn.refreshUnresolved(context.WithoutCancel(ctx))
	rn.m.runs.WithLabelValues(r.State).Inc()
	rn.m.seconds.Observe(time.Since(start).Seconds())
	rn.log.Info("reconciliation run ended", "run", r.ID, "state", r.State, "discrepancies", r.Discrepancies, "in_flight", r.InFlight,
		"behind", r.BehindShards(), "rows", r.RowsCompared, "err", r.Error)
	return r
}

// acquire waits for a run slot, showing r QUEUED meanwhile.
func (rn *Runner) acquire(ctx context.Context, r *Run) error {
	select {
	case rn.slots <- struct{}{}:
		return nil
	default:
	}
	rn.m.queued.Inc()
	defer rn.m.queued.Dec()
	r.State = StateQueued
	r.Message += fmt.Sprintf("queued behind the %d runs executing (at most %d at once). ", cap(rn.slots), cap(rn.slots))
	if err := rn.store.Update(ctx, *r); err != nil {
		return err
	}
	select {
	case rn.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// execute compares r, recording in bad the records it found inconsistent
// (confirmed discrepancies and records in flight).
func (rn *Runner) execute(ctx context.Context, r *Run, bad map[int64]bool) error {
	if err := rn.acquire(ctx, r); err != nil {
		return err
	}
	defer func() { <-rn.slots }()
	r.State = StateRunning
	if err := rn.store.Update(ctx, *r); err != nil {
		return err
	}
	sample := func(int) bool { return r.SampleRate > 0 && rand.Float64() < r.SampleRate }
	src, dst := rn.src, rn.dst
	if w := r.Window; w != nil {
		// Only the window's buckets are compared, each record by record.
		n := rn.cfg.Buckets
		sample = func(b int) bool { return w.Contains(b, n) }
		src, dst = windowSide{Side: src, w: *w}, windowSide{Side: dst, w: *w}
	}

	var (
		p        Progress
		drill    []BucketLoad
		boundary map[string]time.Time
	)
	for attempt := 0; ; attempt++ {
		var err error
		if boundary, err = rn.positions(ctx, r); err != nil {
			return err
		}
		before, err := rn.rev.CampaignRevision(ctx, r.Scope.DetectID)
		if err != nil {
			return err
		}
		// The scan compares bucket summaries: the buckets that differ (and
		// the sampled ones) are drilled into record by record once the
		// boundary is checked, and what differs then is stored.
		p, drill, err = Summarize(ctx, src, dst, r.Scope, r.Depth, rn.cfg.Buckets, sample)
		if err != nil {
			return err
		}
		r.BucketsDone, r.BucketsTotal, r.RowsCompared = p.BucketsDone, p.BucketsTotal, p.RowsCompared
		_ = rn.store.Update(ctx, *r)
		after, err := rn.rev.CampaignRevision(ctx, r.Scope.DetectID)
		if err != nil {
			return err
		}
		if before == after {
			break
		}
		if attempt >= rn.cfg.MaxBoundaryRetries {
			r.Message += fmt.Sprintf("campaign revision kept moving (%d -> %d) after %d retries; every candidate is re-checked against the shards' outboxes and the projection's applied positions. ", before, after, attempt)
			break
		}
		r.BoundaryRetries++
		r.State = StateWaiting
		r.Message += fmt.Sprintf("revision moved %d -> %d during scan %d; ", before, after, attempt+1)
		_ = rn.store.Update(ctx, *r)
		// Wait (checked) until the projection applied what the shards had
		// committed by the end of this scan, then scan again.
		end, err := rn.positions(ctx, r)
		if err != nil {
			return err
		}
		caught, err := rn.catchUp(ctx, r, end)
		if err != nil {
			return err
		}
		if caught {
			r.Message += "the projection caught up; scanning again. "
		} else {
			r.Message += fmt.Sprintf("the projection did not catch up within %s (behind: %s); scanning again. ", rn.cfg.CatchUpWait, strings.Join(r.BehindShards(), ", "))
		}
		r.State = StateRunning
	}
	rn.m.rows.Add(float64(p.RowsCompared))
	if len(drill) == 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(rn.cfg.Grace):
	}
	// The boundary: the projection must have applied what every shard had
	// committed when the scan started. Checked, not waited for blindly.
	caught, err := rn.catchUp(ctx, r, boundary)
	if err != nil {
		return err
	}
	r.State = StateRunning
	_ = rn.store.Update(ctx, *r)
	// The drill-down, bucket step by bucket step: what differs is
	// delay when its newest version is still in flight (evidence from the
	// outbox and the applied positions, read before the records), and
	// wrong data otherwise; wrong data is stored a step at a time.
	inFlight := map[string]int64{}
	var applied map[string]time.Time
	if rn.flight != nil {
		// Read before any record: an event applied meanwhile is at worst
		// counted in flight, never called wrong.
		if _, applied, err = rn.flight.Positions(ctx); err != nil {
			return fmt.Errorf("reading the projection's applied positions: %w", err)
		}
	}
	found := 0 // buckets with a difference (steps hold disjoint buckets)
	err = StreamBuckets(ctx, src, dst, r.Scope, r.Depth, rn.cfg.Buckets, drill, func(ds []Discrepancy) error {
		seen := map[int64]bool{}
		for _, d := range ds {
			seen[d.DataID%int64(rn.cfg.Buckets)] = true
			// Confirmed or in flight: not consistent either way.
			bad[d.DataID] = true
		}
		found += len(seen)
		confirmed, err := rn.separateInFlight(ctx, ds, applied, inFlight)
		if err != nil {
			return err
		}
		if err := rn.store.AddDiscrepancies(ctx, r.ID, r.Scope.DetectID, confirmed); err != nil {
			return err
		}
		r.Discrepancies += int64(len(confirmed))
		r.InFlight = 0
		for i := range r.Shards {
			r.Shards[i].InFlight = inFlight[r.Shards[i].ShardID]
			r.InFlight += r.Shards[i].InFlight
		}
		return nil
	}, func(done int) {
		r.BucketsDone = p.BucketsDone + int64(done)
		_ = rn.store.Update(ctx, *r)
	})
	if err != nil {
		return err
	}
	r.BucketsDone = r.BucketsTotal
	for _, s := range r.Shards {
		rn.m.inFlight.WithLabelValues(s.ShardID).Set(float64(s.InFlight))
	}
	if clean := len(drill) - found; clean > 0 {
		r.Message += fmt.Sprintf("%d of %d differing or sampled buckets matched record by record after the wait (projection lag, or sampled). ", clean, len(drill))
	}
	if r.InFlight > 0 {
		var parts []string
		for _, s := range r.Shards {
			if s.InFlight > 0 {
				parts = append(parts, fmt.Sprintf("%s: %d", s.ShardID, s.InFlight))
			}
		}
		r.Message += fmt.Sprintf("%d records in flight (newest version unsent or not yet applied), not reported as discrepancies: %s. ", r.InFlight, strings.Join(parts, ", "))
	}
	if !caught {
		r.Message += fmt.Sprintf("boundary not reached: the projection had not applied what %s committed before the scan started, after waiting %s. ",
			strings.Join(r.BehindShards(), ", "), rn.cfg.CatchUpWait)
	}
	return nil
}

// positions reads each shard's newest outbox commit (the boundary of a
// scan starting now) and records the shards in r; nil without evidence.
func (rn *Runner) positions(ctx context.Context, r *Run) (map[string]time.Time, error) {
	if rn.flight == nil {
		return nil, nil
	}
	newest, applied, err := rn.flight.Positions(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the shards' and the projection's positions: %w", err)
	}
	rn.report(r, newest, applied, false)
	return newest, nil
}

// report records, per shard of boundary (every shard of the map), its
// boundary and the applied position in r, keeping the in-flight counts;
// checked marks the shards whose applied position is before the boundary.
func (rn *Runner) report(r *Run, boundary, applied map[string]time.Time, checked bool) {
	counts := map[string]int64{}
	for _, s := range r.Shards {
		counts[s.ShardID] = s.InFlight
	}
	r.Shards = r.Shards[:0]
	for id, b := range boundary {
		r.Shards = append(r.Shards, ShardReport{ShardID: id, Boundary: b, Applied: applied[id], Behind: checked && applied[id].Before(b), InFlight: counts[id]})
	}
	sort.Slice(r.Shards, func(i, j int) bool { return r.Shards[i].ShardID < r.Shards[j].ShardID })
}

// catchUp waits until the projection's applied position of every shard
// reached boundary, reading the positions every CatchUpPoll, at most
// CatchUpWait; it reports whether it did (true without evidence), and
// leaves the per-shard picture in r.
func (rn *Runner) catchUp(ctx context.Context, r *Run, boundary map[string]time.Time) (bool, error) {
	if rn.flight == nil {
		return true, nil
	}
	deadline := time.Now().Add(rn.cfg.CatchUpWait)
	for {
		_, applied, err := rn.flight.Positions(ctx)
		if err != nil {
			return false, fmt.Errorf("reading the projection's applied positions: %w", err)
		}
		rn.report(r, boundary, applied, true)
		behind := r.BehindShards()
		if len(behind) == 0 {
			return true, nil
		}
		if !time.Now().Before(deadline) {
			return false, nil
		}
		if r.State != StateWaiting {
			r.State = StateWaiting
			r.Message += fmt.Sprintf("waiting for the projection to reach the boundary of %s; ", strings.Join(behind, ", "))
			_ = rn.store.Update(ctx, *r)
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(min(CatchUpPoll, time.Until(deadline))):
		}
	}
}

// separateInFlight returns the discrepancies of ds that are wrong data and
// counts, per shard in inFlight, those whose newest version is still on
// its way, by the applied positions read before the records.
func (rn *Runner) separateInFlight(ctx context.Context, ds []Discrepancy, applied map[string]time.Time, inFlight map[string]int64) ([]Discrepancy, error) {
	if rn.flight == nil {
		return ds, nil
	}
	versions := map[int64]int64{}
	for _, d := range ds {
		if canBeInFlight(d) {
			versions[d.DataID] = d.Source.Version
		}
	}
	if len(versions) == 0 {
		return ds, nil
	}
	fl, err := rn.flight.InFlight(ctx, versions, applied)
	if err != nil {
		return nil, err
	}
	if len(fl) == 0 {
		return ds, nil
	}
	out := ds[:0:0]
	for _, d := range ds {
		if sh, ok := fl[d.DataID]; ok {
			inFlight[sh]++
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// windowSide narrows a side's bucket summaries to a window of buckets.
type windowSide struct {
	Side
	w BucketWindow
}

// Buckets implements Side.
func (ws windowSide) Buckets(ctx context.Context, s Scope, n int) (map[int]BucketSum, error) {
	all, err := ws.Side.Buckets(ctx, s, n)
	if err != nil {
		return nil, err
	}
	for b := range all {
		if !ws.w.Contains(b, n) {
			delete(all, b)
		}
	}
	return all, nil
}

// resolveCovered resolves the earlier unresolved discrepancies of the
// records r covered and found consistent, and returns how many. r covered
// a record when the record lies in r's campaign, in r's bucket window (if
// any), and, for a run narrowed to a project or school, inside that scope
// on either side now; it found the record consistent when the record was
// neither reported nor in flight (bad): a record of a bucket whose summary
// matched is consistent at r's depth. Only the classes r's depth clears
// (Clears) are resolved, and only discrepancies stored before r was
// created.
func (rn *Runner) resolveCovered(ctx context.Context, r Run, bad map[int64]bool) (int64, error) {
	var classes []Class
	for c := MissingInTarget; c <= TargetAheadOfSource; c++ {
		if Clears(r.Depth, c) {
			classes = append(classes, c)
		}
	}
	if len(classes) == 0 {
		return 0, nil
	}
	scoped := r.Scope.ProjectID != 0 || r.Scope.SchoolID != 0
	var total int64
	for after := int64(0); ; {
		keys, err := rn.store.UnresolvedKeys(ctx, r.Scope.DetectID, classes, r.Created, after, IDChunk)
		if err != nil {
			return total, err
		}
		if len(keys) == 0 {
			return total, nil
		}
		after = keys[len(keys)-1]
		var cand []int64
		for _, id := range keys {
			if bad[id] || (r.Window != nil && !r.Window.Contains(int(id%int64(rn.cfg.Buckets)), rn.cfg.Buckets)) {
				continue
			}
			cand = append(cand, id)
		}
		if scoped && len(cand) > 0 {
			// Inside the scope on either side: a record outside it on both
			// was not compared by this run.
			var sr, tr map[int64]Record
			var serr, terr error
			both(func() { sr, serr = rn.src.Records(ctx, r.Scope, 0, nil, cand) }, func() { tr, terr = rn.dst.Records(ctx, r.Scope, 0, nil, cand) })
			if err := errors.Join(serr, terr); err != nil {
				return total, fmt.Errorf("reading the scope of records with earlier discrepancies: %w", err)
			}
			in := cand[:0]
			for _, id := range cand {
				_, s := sr[id]
				_, t := tr[id]
				if s || t {
					in = append(in, id)
				}
			}
			cand = in
		}
		n, err := rn.store.ResolveKeys(ctx, r.ID, r.Scope.DetectID, classes, r.Created, cand)
		total += n
		if err != nil {
			return total, err
		}
		if len(keys) < IDChunk {
			return total, nil
		}
	}
}

// refreshUnresolved sets the unresolved gauge from the control database.
func (rn *Runner) refreshUnresolved(ctx context.Context) {
	counts, err := rn.store.UnresolvedRecords(ctx)
	if err != nil {
		rn.log.Warn("could not count unresolved discrepancies", "err", err)
		return
	}
	for c := MissingInTarget; c <= TargetAheadOfSource; c++ {
		rn.m.unresolved.WithLabelValues(c.String()).Set(float64(counts[c]))
	}
}
