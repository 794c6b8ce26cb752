package reconcile

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
	Buckets            int           // buckets per comparison
	Grace              time.Duration // wait before re-checking candidates
	CatchUpWait        time.Duration // wait when the revision moved during a scan
	MaxBoundaryRetries int           // scans retried because the revision moved
}

// DefaultRunnerConfig is a sane default.
func DefaultRunnerConfig() RunnerConfig {
	return RunnerConfig{Buckets: 1024, Grace: 5 * time.Second, CatchUpWait: 2 * time.Second, MaxBoundaryRetries: 3}
}

// Runner executes stored runs.
type Runner struct {
	log   *slog.Logger
	cfg   RunnerConfig
	src   Side
	rev   RevisionReader
	dst   Side
	store *RunStore
	m     *runnerMetrics
}

type runnerMetrics struct {
	runs       *prometheus.CounterVec
	seconds    prometheus.Histogram
	rows       prometheus.Counter
	unresolved *prometheus.GaugeVec
}

// NewRunner returns a runner; reg may be nil.
func NewRunner(log *slog.Logger, cfg RunnerConfig, src Side, rev RevisionReader, dst Side, store *RunStore, reg prometheus.Registerer) *Runner {
	m := &runnerMetrics{
		runs:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "reconcile_runs_total", Help: "Reconciliation runs ended, by state."}, []string{"state"}),
		seconds:    prometheus.NewHistogram(prometheus.HistogramOpts{Name: "reconcile_run_seconds", Help: "Reconciliation run duration.", Buckets: prometheus.ExponentialBuckets(0.1, 2, 14)}),
		rows:       prometheus.NewCounter(prometheus.CounterOpts{Name: "reconcile_rows_compared_total", Help: "Rows compared (both sides)."}),
		unresolved: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "reconcile_unresolved_discrepancies", Help: "Discrepancies of the latest run per class."}, []string{"class"}),
	}
	if reg != nil {
		reg.MustRegister(m.runs, m.seconds, m.rows, m.unresolved)
	}
	return &Runner{log: log, cfg: cfg, src: src, rev: rev, dst: dst, store: store, m: m}
}

// Execute runs r to a terminal state, writing progress to the store.
func (rn *Runner) Execute(ctx context.Context, r Run) Run {
	start := time.Now()
	err := rn.execute(ctx, &r)
	if err != nil {
		r.State, r.Error = StateFailed, err.Error()
	} else {
		r.State = StateSucceeded
	}
	r.Ended = time.Now().UTC()
	if uerr := rn.store.Update(context.WithoutCancel(ctx), r); uerr != nil {
		rn.log.Error("recording the end of a run", "run", r.ID, "err", uerr)
	}
	rn.m.runs.WithLabelValues(r.State).Inc()
	rn.m.seconds.Observe(time.Since(start).Seconds())
	rn.log.Info("reconciliation run ended", "run", r.ID, "state", r.State, "discrepancies", r.Discrepancies, "rows", r.RowsCompared, "err", r.Error)
	return r
}

func (rn *Runner) execute(ctx context.Context, r *Run) error {
	r.State = StateRunning
	if err := rn.store.Update(ctx, *r); err != nil {
		return err
	}
	sample := func(int) bool { return r.SampleRate > 0 && rand.Float64() < r.SampleRate }
	var res Result
	for attempt := 0; ; attempt++ {
		before, err := rn.rev.CampaignRevision(ctx, r.Scope.DetectID)
		if err != nil {
			return err
		}
		res, err = Compare(ctx, rn.src, rn.dst, r.Scope, r.Depth, rn.cfg.Buckets, sample, func(p Progress) {
			r.BucketsDone, r.BucketsTotal, r.RowsCompared = p.BucketsDone, p.BucketsTotal, p.RowsCompared
			_ = rn.store.Update(ctx, *r)
		})
		if err != nil {
			return err
		}
		after, err := rn.rev.CampaignRevision(ctx, r.Scope.DetectID)
		if err != nil {
			return err
		}
		if before == after {
			break
		}
		if attempt >= rn.cfg.MaxBoundaryRetries {
			r.Message += fmt.Sprintf("campaign revision kept moving (%d -> %d) after %d retries; candidates are confirmed only after the grace re-check. ", before, after, attempt)
			break
		}
		r.BoundaryRetries++
		r.State = StateWaiting
		r.Message += fmt.Sprintf("revision moved %d -> %d during scan %d; waiting %s for the projection to catch up. ", before, after, attempt+1, rn.cfg.CatchUpWait)
		_ = rn.store.Update(ctx, *r)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(rn.cfg.CatchUpWait):
		}
		r.State = StateRunning
	}
	rn.m.rows.Add(float64(res.Progress.RowsCompared))
	confirmed := res.Discrepancies
	if len(res.Discrepancies) > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(rn.cfg.Grace):
		}
		var err error
		if confirmed, err = Recheck(ctx, rn.src, rn.dst, r.Scope, r.Depth, res.Discrepancies); err != nil {
			return err
		}
		if dropped := len(res.Discrepancies) - len(confirmed); dropped > 0 {
			r.Message += fmt.Sprintf("%d candidates resolved themselves within the %s grace period (projection lag). ", dropped, rn.cfg.Grace)
		}
	}
	if err := rn.store.AddDiscrepancies(ctx, r.ID, r.Scope.DetectID, confirmed); err != nil {
		return err
	}
	r.Discrepancies = int64(len(confirmed))
	byClass := map[Class]int{}
	for _, d := range confirmed {
		byClass[d.Class]++
	}
	for c := MissingInTarget; c <= TargetAheadOfSource; c++ {
		rn.m.unresolved.WithLabelValues(c.String()).Set(float64(byClass[c]))
	}
	r.BucketsDone, r.BucketsTotal, r.RowsCompared = res.Progress.BucketsDone, res.Progress.BucketsTotal, res.Progress.RowsCompared
	return nil
}
