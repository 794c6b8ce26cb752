package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/platform/apierr"
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
var ErrQueueFull = apierr.NewReason(apierr.ResourceExhausted, apierr.RunQueueFull, "too many reconciliation runs are executing or queued; retry when one has ended")

// CatchUpPoll is how often the projection's applied positions are read
// while a run waits for them.
const CatchUpPoll = 200 * time.Millisecond

// DefaultRunnerConfig is a sane default.
func DefaultRunnerConfig() RunnerConfig {
	return RunnerConfig{Buckets: 1024, Grace: 5 * time.Second, CatchUpWait: 30 * time.Second, MaxBoundaryRetries: 3,
		MaxConcurrentRuns: DefaultMaxConcurrentRuns, MaxQueuedRuns: DefaultMaxQueuedRuns}
}

// Runner executes stored runs: a worker (Run) executes the runs submitted
// to its queue (queue.go); Execute runs one in the caller's goroutine.
type Runner struct {
	log    *slog.Logger
	cfg    RunnerConfig
	src    Side
	rev    RevisionReader
	dst    Side
	store  *RunStore
	flight Flight
	// slots holds a token per run executing (at most MaxConcurrentRuns).
	slots chan struct{}
	// admitted counts the runs Admit let in that have not released.
	admitted  atomic.Int64
	maxQueued int64
	m         *runnerMetrics
	wake      chan struct{} // the queue changed or a slot was freed

	mu      sync.Mutex
	waiting []*job // submitted, waiting for a slot, in arrival order
	closed  bool   // the worker stopped: Submit ends runs at once
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
	rn := &Runner{log: log, cfg: cfg, src: src, rev: rev, dst: dst, store: store, slots: make(chan struct{}, n), maxQueued: int64(q), m: m,
		wake: make(chan struct{}, 1)}
	for _, o := range opts {
		o(rn)
	}
	return rn
}

// Execute runs r to a terminal state in the caller's goroutine, writing
// progress to the store (tests, benchmarks and tools; a server Submits).
// When MaxConcurrentRuns runs are executing, r waits QUEUED for a slot.
func (rn *Runner) Execute(ctx context.Context, r Run) Run {
	start := time.Now()
	if err := rn.acquire(ctx, &r); err != nil {
		return rn.finish(ctx, r, start, nil, err)
	}
	defer rn.freeSlot()
	bad := map[int64]bool{}
	err := rn.compare(ctx, &r, bad)
	return rn.finish(ctx, r, start, bad, err)
}

// acquire waits for a run slot, showing r QUEUED meanwhile.
func (rn *Runner) acquire(ctx context.Context, r *Run) error {
	if rn.trySlot() {
		return nil
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

// finish records r's end, started at start: FAILED with err, else
// BOUNDARY_NOT_REACHED or SUCCEEDED; a SUCCEEDED run first resolves the
// earlier discrepancies of the records it covered and did not find
// inconsistent (bad). The end is recorded even when ctx has ended.
func (rn *Runner) finish(ctx context.Context, r Run, start time.Time, bad map[int64]bool, err error) Run {
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
