package reconcile

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
)

// SchedulerCreatedBy is the requester recorded on the runs the scheduler
// starts.
const SchedulerCreatedBy = "scheduler"

// SchedulerConfig tunes the scheduled reconciliation.
type SchedulerConfig struct {
	// Interval is the time between the starts of two cycles.
	Interval time.Duration
	// Period bounds how long any bucket of any campaign goes without a
	// CONTENT comparison (the rotating sample), and how long a campaign goes
	// without a clean run of the whole campaign.
	Period time.Duration
	// Depth is the depth of the whole-campaign runs (VERSIONS or CONTENT).
	Depth Depth
	// MaxRunsPerCycle bounds the runs one cycle starts (whole-campaign runs
	// first, then samples). The scheduler executes them one at a time, so
	// it never holds more than one of the runner's slots.
	MaxRunsPerCycle int
	// RowsPerSecond caps the rows the scheduled runs compare (both sides),
	// averaged: a cycle starts no run while the rows already compared exceed
	// the allowance earned at this rate. 0: no cap.
	RowsPerSecond float64
	// LeaseTTL is how long the active scheduler's lease lasts unrenewed; it
	// is renewed every LeaseTTL/3, and another replica takes over once it
	// expired.
	LeaseTTL time.Duration
}

// DefaultSchedulerConfig is a sane default: every campaign's changes are
// compared within minutes, and every bucket at CONTENT depth within a day.
func DefaultSchedulerConfig() SchedulerConfig {
	return SchedulerConfig{Interval: time.Minute, Period: 24 * time.Hour, Depth: DepthVersions, MaxRunsPerCycle: 8,
		RowsPerSecond: 2_000_000, LeaseTTL: 30 * time.Second}
}

// Validate rejects impossible settings, naming every one.
func (c SchedulerConfig) Validate() error {
	var errs []error
	if c.Interval < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("schedule-interval must be at least 10ms, got %s", c.Interval))
	}
	if c.Period < c.Interval {
		errs = append(errs, fmt.Errorf("schedule-period (%s) must be at least schedule-interval (%s)", c.Period, c.Interval))
	}
	if c.Depth != DepthVersions && c.Depth != DepthContent {
		errs = append(errs, fmt.Errorf("schedule-depth must be VERSIONS or CONTENT, got %d", c.Depth))
	}
	if c.MaxRunsPerCycle < 1 || c.MaxRunsPerCycle > 10_000 {
		errs = append(errs, fmt.Errorf("schedule-max-runs must be 1..10000, got %d", c.MaxRunsPerCycle))
	}
	if c.RowsPerSecond < 0 {
		errs = append(errs, fmt.Errorf("schedule-rows-per-second must not be negative, got %g", c.RowsPerSecond))
	}
	if c.LeaseTTL < 30*time.Millisecond {
		errs = append(errs, fmt.Errorf("schedule-lease-ttl must be at least 30ms, got %s", c.LeaseTTL))
	}
	return errors.Join(errs...)
}

// ParseDepth reads VERSIONS or CONTENT (any case).
func ParseDepth(s string) (Depth, error) {
	switch strings.ToUpper(s) {
	case "COUNTS":
		return DepthCounts, nil
	case "VERSIONS":
		return DepthVersions, nil
	case "CONTENT":
		return DepthContent, nil
	}
	return 0, fmt.Errorf("unknown depth %q (COUNTS, VERSIONS or CONTENT)", s)
}

// CampaignSource lists the campaigns the authoritative side holds and reads
// their revisions.
type CampaignSource interface {
	Campaigns(ctx context.Context) ([]int64, error)
	RevisionReader
}

// shardCampaigns adds the campaigns of one shard's bucket aggregates to
// seen.
func shardCampaigns(ctx context.Context, db *sql.DB, seen map[int64]bool) error {
	rows, err := db.QueryContext(ctx, "SELECT DISTINCT detect_id FROM campaign_bucket")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		seen[id] = true
	}
	// Err: an error that ended the iteration early is reported by Err alone.
	return rows.Err()
}

// Campaigns implements CampaignSource: every campaign with a bucket
// aggregate on any shard, ascending.
func (m MySQLSource) Campaigns(ctx context.Context) ([]int64, error) {
	seen := map[int64]bool{}
	for i, db := range m.Shards {
		if err := shardCampaigns(ctx, db, seen); err != nil {
			return nil, fmt.Errorf("shard %d campaigns: %w", i, err)
		}
	}
	out := make([]int64, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// ScheduleStore keeps the schedule and the scheduler's lease in the control
// database (control migration 0008).
type ScheduleStore struct {
	db *sql.DB
}

// NewScheduleStore returns a store over the control database.
func NewScheduleStore(db *sql.DB) *ScheduleStore { return &ScheduleStore{db: db} }

// schedulerLease names the lease row of the reconcile scheduler.
const schedulerLease = "reconcile-scheduler"

// Acquire takes or renews the lease for holder for ttl, by the database's
// clock, and reports whether holder holds it now. It takes an expired lease
// from another holder; it never takes a live one.
func (s *ScheduleStore) Acquire(ctx context.Context, holder string, ttl time.Duration) (bool, error) {
	us := ttl.Microseconds()
	// MySQL and MariaDB assign left to right: expire_time sees the new holder.
	if _, err := s.db.ExecContext(ctx, `INSERT INTO scheduler_lease (name, holder, expire_time)
		VALUES (?, ?, UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND)
		ON DUPLICATE KEY UPDATE
			holder = IF(holder = ? OR expire_time < UTC_TIMESTAMP(3), ?, holder),
			expire_time = IF(holder = ?, UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND, expire_time)`,
		schedulerLease, holder, us, holder, holder, holder, us); err != nil {
		return false, fmt.Errorf("taking the scheduler lease: %w", err)
	}
	var cur string
	if err := s.db.QueryRowContext(ctx, "SELECT holder FROM scheduler_lease WHERE name = ? AND expire_time >= UTC_TIMESTAMP(3)", schedulerLease).Scan(&cur); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		return false, fmt.Errorf("reading the scheduler lease: %w", err)
	}
	return cur == holder, nil
}

// Release gives the lease up if holder holds it.
func (s *ScheduleStore) Release(ctx context.Context, holder string) error {
	if _, err := s.db.ExecContext(ctx, "DELETE FROM scheduler_lease WHERE name = ? AND holder = ?", schedulerLease, holder); err != nil {
		return fmt.Errorf("releasing the scheduler lease: %w", err)
	}
	return nil
}

// CampaignSchedule is one campaign's schedule.
type CampaignSchedule struct {
	DetectID  int64
	FirstSeen time.Time
	// LastCleanRevision is the campaign revision read before the last clean
	// scheduled run (SUCCEEDED, no discrepancy); -1 when none was clean.
	LastCleanRevision int64
	LastCleanRunID    string
	LastClean         time.Time // zero: never
	LastRunID         string
	LastRun           time.Time // zero: never
	// SampleCursor is the first bucket of the next CONTENT sample.
	SampleCursor int
	LastSample   time.Time // zero: never
	// CheckedBuckets counts the buckets ever compared at CONTENT depth;
	// OldestCheck is the oldest such comparison (zero when a bucket was
	// never compared).
	CheckedBuckets int
	OldestCheck    time.Time
}

// OldestUnchecked returns when the bucket compared longest ago (at CONTENT
// depth) was compared: the campaign's first sighting while a bucket of n
// never was.
func (c CampaignSchedule) OldestUnchecked(n int) time.Time {
	if c.CheckedBuckets < n || c.OldestCheck.IsZero() {
		return c.FirstSeen
	}
	return c.OldestCheck
}

// LastVerified returns the end of the last clean run, or the campaign's
// first sighting when none was clean.
func (c CampaignSchedule) LastVerified() time.Time {
	if c.LastClean.IsZero() {
		return c.FirstSeen
	}
	return c.LastClean
}

// See records the campaigns (first sighting now; known ones unchanged).
func (s *ScheduleStore) See(ctx context.Context, ids []int64) error {
	now := time.Now().UTC()
	for i := 0; i < len(ids); i += 500 {
		chunk := ids[i:min(i+500, len(ids))]
		args := make([]any, 0, 2*len(chunk))
		for _, id := range chunk {
			args = append(args, id, now)
		}
		if _, err := s.db.ExecContext(ctx, "INSERT IGNORE INTO reconcile_schedule (detect_id, first_seen_time) VALUES "+
			mysqldb.Rows(len(chunk), 2), args...); err != nil {
			return fmt.Errorf("recording %d campaigns in the schedule: %w", len(chunk), err)
		}
	}
	return nil
}

// List returns the schedule of the campaigns after afterID, ascending, at
// most limit, with their bucket checks among the first n buckets.
func (s *ScheduleStore) List(ctx context.Context, n int, afterID int64, limit int) ([]CampaignSchedule, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT s.detect_id, s.first_seen_time, COALESCE(s.last_clean_revision, -1), s.last_clean_run_id,
		s.last_clean_time, s.last_run_id, s.last_run_time, s.sample_cursor, s.last_sample_time,
		(SELECT COUNT(*) FROM reconcile_bucket_check c WHERE c.detect_id = s.detect_id AND c.bucket < ?),
		(SELECT MIN(c.check_time) FROM reconcile_bucket_check c WHERE c.detect_id = s.detect_id AND c.bucket < ?)
		FROM reconcile_schedule s WHERE s.detect_id > ? ORDER BY s.detect_id LIMIT ?`, n, n, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("reading the schedule: %w", err)
	}
	defer rows.Close()
	var out []CampaignSchedule
	for rows.Next() {
		var c CampaignSchedule
		var clean, run, sample, oldest sql.NullTime
		if err := rows.Scan(&c.DetectID, &c.FirstSeen, &c.LastCleanRevision, &c.LastCleanRunID, &clean, &c.LastRunID, &run,
			&c.SampleCursor, &sample, &c.CheckedBuckets, &oldest); err != nil {
			return nil, fmt.Errorf("reading the schedule: %w", err)
		}
		c.LastClean, c.LastRun, c.LastSample, c.OldestCheck = clean.Time, run.Time, sample.Time, oldest.Time
		out = append(out, c)
	}
	return out, rows.Err()
}

// all returns the schedule of every campaign by id.
func (s *ScheduleStore) all(ctx context.Context, n int) (map[int64]CampaignSchedule, error) {
	out := map[int64]CampaignSchedule{}
	for after := int64(0); ; {
		page, err := s.List(ctx, n, after, 1000)
		if err != nil {
			return nil, err
		}
		for _, c := range page {
			out[c.DetectID] = c
		}
		if len(page) < 1000 {
			return out, nil
		}
		after = page[len(page)-1].DetectID
	}
}

// ranWhole records a whole-campaign run: clean when it SUCCEEDED without
// discrepancies (rev is the revision read before it started).
func (s *ScheduleStore) ranWhole(ctx context.Context, r Run, rev int64) error {
	q, args := "UPDATE reconcile_schedule SET last_run_id = ?, last_run_time = ?", []any{r.ID, r.Ended}
	if r.State == StateSucceeded && r.Discrepancies == 0 {
		q += ", last_clean_revision = ?, last_clean_run_id = ?, last_clean_time = ?"
		args = append(args, rev, r.ID, r.Ended)
	}
	if _, err := s.db.ExecContext(ctx, q+" WHERE detect_id = ?", append(args, r.Scope.DetectID)...); err != nil {
		return fmt.Errorf("recording run %s in the schedule: %w", r.ID, err)
	}
	return nil
}

// sampled records a sample run and moves the cursor past its window.
func (s *ScheduleStore) sampled(ctx context.Context, r Run, next int) error {
	if _, err := s.db.ExecContext(ctx, "UPDATE reconcile_schedule SET sample_cursor = ?, last_sample_time = ? WHERE detect_id = ?",
		next, r.Ended, r.Scope.DetectID); err != nil {
		return fmt.Errorf("recording sample run %s in the schedule: %w", r.ID, err)
	}
	return nil
}

// checked records that the buckets were compared at CONTENT depth at t.
func (s *ScheduleStore) checked(ctx context.Context, detectID int64, buckets []int, t time.Time) error {
	for i := 0; i < len(buckets); i += 1024 {
		chunk := buckets[i:min(i+1024, len(buckets))]
		args := make([]any, 0, 3*len(chunk))
		for _, b := range chunk {
			args = append(args, detectID, b, t)
		}
		if _, err := s.db.ExecContext(ctx, "INSERT INTO reconcile_bucket_check (detect_id, bucket, check_time) VALUES "+
			mysqldb.Rows(len(chunk), 3)+
			" ON DUPLICATE KEY UPDATE check_time = GREATEST(check_time, VALUES(check_time))", args...); err != nil {
			return fmt.Errorf("recording %d checked buckets of campaign %d: %w", len(chunk), detectID, err)
		}
	}
	return nil
}

// Scheduler runs reconciliations by itself: every Interval, the one active
// instance across the replicas (a lease in the control database) starts a
// whole-campaign run of each campaign whose revision moved since its last
// clean scheduled run (or whose last clean run is older than Period), and a
// CONTENT run of a rotating window of buckets of every campaign, sized so
// every bucket is compared within Period. Runs go through the runner like
// those an operator starts (Admit, RunStore.Create, Submit: the runner's
// worker, Runner.Run, must run), recorded as requested by
// SchedulerCreatedBy; a cycle that finds the runner's queue full starts
// nothing more.
type Scheduler struct {
	log    *slog.Logger
	cfg    SchedulerConfig
	n      int
	runner *Runner
	runs   *RunStore
	sched  *ScheduleStore
	src    CampaignSource
	holder string
	m      *schedulerMetrics
	// allowance is the rows the scheduled runs may still compare (token
	// bucket at RowsPerSecond); refilled at each cycle.
	allowance float64
	refilled  time.Time
	cycles    atomic.Int64
}

type schedulerMetrics struct {
	active    prometheus.Gauge
	period    prometheus.Gauge
	cleanAge  *prometheus.GaugeVec
	bucketAge *prometheus.GaugeVec
	runs      *prometheus.CounterVec
	skipped   *prometheus.CounterVec
}

// NewScheduler returns a scheduler over the runner's stores and bucket
// count; reg may be nil. holder names this instance in the lease (empty: the
// host name and a random suffix).
func NewScheduler(log *slog.Logger, cfg SchedulerConfig, runner *Runner, runs *RunStore, sched *ScheduleStore, src CampaignSource,
	reg prometheus.Registerer, holder string) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if holder == "" {
		host, _ := os.Hostname()
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		holder = host + "-" + hex.EncodeToString(b)
	}
	m := &schedulerMetrics{
		active: prometheus.NewGauge(prometheus.GaugeOpts{Name: "reconcile_scheduler_active",
			Help: "1 while this replica holds the scheduler lease and runs the reconciliation schedule."}),
		period: prometheus.NewGauge(prometheus.GaugeOpts{Name: "reconcile_scheduler_period_seconds",
			Help: "The period within which every campaign should have a clean run and every bucket a CONTENT comparison."}),
		cleanAge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "reconcile_campaign_last_clean_run_age_seconds",
			Help: "Age of the campaign's last clean scheduled run (SUCCEEDED, no discrepancy); since it was first seen when none (active scheduler only)."}, []string{"detect_id"}),
		bucketAge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "reconcile_campaign_oldest_unchecked_bucket_age_seconds",
			Help: "Age of the campaign's bucket compared longest ago at CONTENT depth; since it was first seen while a bucket never was (active scheduler only)."}, []string{"detect_id"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "reconcile_scheduled_runs_total",
			Help: "Runs the scheduler started, by kind (campaign, sample) and end state."}, []string{"kind", "state"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "reconcile_scheduler_deferred_total",
			Help: "Scheduled runs not started in their cycle, by reason (runs_per_cycle, rows_budget, queue_full)."}, []string{"reason"}),
	}
	m.period.Set(cfg.Period.Seconds())
	if reg != nil {
		reg.MustRegister(m.active, m.period, m.cleanAge, m.bucketAge, m.runs, m.skipped)
	}
	return &Scheduler{log: log, cfg: cfg, n: runner.cfg.Buckets, runner: runner, runs: runs, sched: sched, src: src, holder: holder, m: m}, nil
}

// Holder is this instance's name in the lease.
func (s *Scheduler) Holder() string { return s.holder }

// Cycles counts the cycles this instance ran.
func (s *Scheduler) Cycles() int64 { return s.cycles.Load() }

// Run schedules until ctx ends, then releases the lease; it returns nil.
// The first cycle starts one Interval after Run.
// Errors of a cycle are logged and the cycle is retried at the next tick:
// the schedule survives any dependency outage.
func (s *Scheduler) Run(ctx context.Context) error {
	tick := min(s.cfg.Interval, s.cfg.LeaseTTL/3)
	// The first cycle one interval after the start: a replica restarting in
	// a loop does not start a cycle each time.
	next := time.Now().Add(s.cfg.Interval)
	held := false
	defer func() {
		s.m.active.Set(0)
		if held {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			if err := s.sched.Release(rctx, s.holder); err != nil {
				s.log.Warn("could not release the scheduler lease; it expires by itself", "err", err)
			}
			cancel()
		}
	}()
	for {
		ok, err := s.sched.Acquire(ctx, s.holder, s.cfg.LeaseTTL)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("scheduler lease unavailable", "err", err)
		}
		if ok != held {
			s.log.Info("scheduler lease changed hands", "holder", s.holder, "active", ok)
			if !ok {
				s.m.cleanAge.Reset()
				s.m.bucketAge.Reset()
			}
			held = ok
		}
		if ok {
			s.m.active.Set(1)
		} else {
			s.m.active.Set(0)
		}
		if ok && !time.Now().Before(next) {
			start := time.Now()
			if err := s.cycleHeld(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("reconciliation schedule cycle failed; retried next cycle", "err", err)
			}
			next = start.Add(s.cfg.Interval)
			continue // renew at once: the cycle may have been long
		}
		wait := tick
		if ok {
			wait = min(tick, max(time.Until(next), 0))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// cycleHeld runs one cycle while renewing the lease; the cycle is cancelled
// as soon as the lease is lost.
func (s *Scheduler) cycleHeld(ctx context.Context) error {
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(s.cfg.LeaseTTL / 3):
			}
			ok, err := s.sched.Acquire(ctx, s.holder, s.cfg.LeaseTTL)
			if err != nil || !ok {
				if err == nil {
					err = errors.New("another replica holds it")
				}
				cancel(fmt.Errorf("scheduler lease lost: %w", err))
				return
			}
		}
	}()
	err := s.Cycle(cctx)
	if c := context.Cause(cctx); c != nil && ctx.Err() == nil {
		return errors.Join(err, c)
	}
	return err
}

// window returns the sample window of a campaign: from its cursor, the
// buckets due since its last sample (n*elapsed/Period, at least
// n*Interval/Period, at least 1), at most n.
func (s *Scheduler) window(c CampaignSchedule, now time.Time) BucketWindow {
	elapsed := s.cfg.Interval
	if !c.LastSample.IsZero() {
		elapsed = max(elapsed, now.Sub(c.LastSample))
	}
	count := int((int64(s.n)*int64(elapsed) + int64(s.cfg.Period) - 1) / int64(s.cfg.Period))
	return BucketWindow{From: c.SampleCursor % s.n, Count: max(1, min(count, s.n))}
}

// Cycle runs one cycle without the lease (Run takes it first): campaigns
// listed from the shards, whole-campaign runs of those due, then the
// samples, one run at a time within the budgets, then the gauges.
func (s *Scheduler) Cycle(ctx context.Context) error {
	s.cycles.Add(1)
	now := time.Now()
	if s.cfg.RowsPerSecond > 0 {
		if !s.refilled.IsZero() {
			s.allowance += s.cfg.RowsPerSecond * now.Sub(s.refilled).Seconds()
		} else {
			s.allowance = s.cfg.RowsPerSecond * s.cfg.Interval.Seconds()
		}
		s.allowance = min(s.allowance, s.cfg.RowsPerSecond*s.cfg.Interval.Seconds())
		s.refilled = now
	}
	ids, err := s.src.Campaigns(ctx)
	if err != nil {
		return err
	}
	if err := s.sched.See(ctx, ids); err != nil {
		return err
	}
	sched, err := s.sched.all(ctx, s.n)
	if err != nil {
		return err
	}
	type due struct {
		c   CampaignSchedule
		rev int64
	}
	var whole []due
	for _, id := range ids {
		c := sched[id]
		rev, err := s.src.CampaignRevision(ctx, id)
		if err != nil {
			return err
		}
		if c.LastCleanRevision != rev || now.Sub(c.LastVerified()) >= s.cfg.Period {
			whole = append(whole, due{c, rev})
		}
	}
	// The least recently run first, so no campaign starves another.
	sort.SliceStable(whole, func(i, j int) bool { return whole[i].c.LastRun.Before(whole[j].c.LastRun) })
	samples := make([]CampaignSchedule, 0, len(ids))
	for _, id := range ids {
		samples = append(samples, sched[id])
	}
	sort.SliceStable(samples, func(i, j int) bool { return samples[i].OldestUnchecked(s.n).Before(samples[j].OldestUnchecked(s.n)) })

	started := 0
	var stop string
	next := func() bool {
		switch {
		case stop != "":
		case started >= s.cfg.MaxRunsPerCycle:
			stop = "runs_per_cycle"
		case s.cfg.RowsPerSecond > 0 && s.allowance <= 0:
			stop = "rows_budget"
		default:
			return true
		}
		return false
	}
	for _, d := range whole {
		if !next() {
			s.m.skipped.WithLabelValues(stop).Inc()
			continue
		}
		r, err := s.execute(ctx, Scope{DetectID: d.c.DetectID}, s.cfg.Depth, nil, fmt.Sprintf("scheduled: campaign revision %d (last clean at %d). ", d.rev, d.c.LastCleanRevision))
		if errors.Is(err, ErrQueueFull) {
			stop = "queue_full"
			s.m.skipped.WithLabelValues(stop).Inc()
			continue
		}
		if err != nil {
			return err
		}
		started++
		s.m.runs.WithLabelValues("campaign", r.State).Inc()
		if err := s.sched.ranWhole(ctx, r, d.rev); err != nil {
			return err
		}
		if r.State == StateSucceeded && r.Depth >= DepthContent {
			all := make([]int, s.n)
			for b := range all {
				all[b] = b
			}
			if err := s.sched.checked(ctx, r.Scope.DetectID, all, r.Ended); err != nil {
				return err
			}
		}
	}
	for _, c := range samples {
		if !next() {
			s.m.skipped.WithLabelValues(stop).Inc()
			continue
		}
		w := s.window(c, time.Now())
		r, err := s.execute(ctx, Scope{DetectID: c.DetectID}, DepthContent, &w,
			fmt.Sprintf("scheduled: CONTENT sample of buckets %d-%d of %d. ", w.From, (w.From+w.Count-1)%s.n, s.n))
		if errors.Is(err, ErrQueueFull) {
			stop = "queue_full"
			s.m.skipped.WithLabelValues(stop).Inc()
			continue
		}
		if err != nil {
			return err
		}
		started++
		s.m.runs.WithLabelValues("sample", r.State).Inc()
		if err := s.sched.sampled(ctx, r, (w.From+w.Count)%s.n); err != nil {
			return err
		}
		if r.State == StateSucceeded {
			bs := make([]int, w.Count)
			for i := range bs {
				bs[i] = (w.From + i) % s.n
			}
			if err := s.sched.checked(ctx, r.Scope.DetectID, bs, r.Ended); err != nil {
				return err
			}
		}
	}
	return s.gauges(ctx, ids)
}

// execute starts a run the way StartReconciliationRun does (Admit,
// RunStore.Create, Submit to the runner's worker) and waits for its end; the
// run is cancelled (FAILED) when ctx ends first.
func (s *Scheduler) execute(ctx context.Context, sc Scope, depth Depth, w *BucketWindow, msg string) (Run, error) {
	release, err := s.runner.Admit()
	if err != nil {
		return Run{}, err
	}
	sample := 0.0
	if w != nil {
		sample = float64(w.Count) / float64(s.n)
	}
	r, err := s.runs.Create(ctx, sc, depth, sample, SchedulerCreatedBy)
	if err != nil {
		release()
		return Run{}, err
	}
	r.Window, r.Message = w, msg
	r = <-s.runner.Submit(ctx, r, release)
	if s.cfg.RowsPerSecond > 0 {
		s.allowance -= float64(r.RowsCompared)
	}
	if ctx.Err() != nil {
		return r, ctx.Err()
	}
	return r, nil
}

// gauges sets the per-campaign ages of the campaigns the shards hold.
func (s *Scheduler) gauges(ctx context.Context, ids []int64) error {
	sched, err := s.sched.all(ctx, s.n)
	if err != nil {
		return err
	}
	now := time.Now()
	s.m.cleanAge.Reset()
	s.m.bucketAge.Reset()
	for _, id := range ids {
		c, ok := sched[id]
		if !ok {
			continue
		}
		l := strconv.FormatInt(id, 10)
		s.m.cleanAge.WithLabelValues(l).Set(now.Sub(c.LastVerified()).Seconds())
		s.m.bucketAge.WithLabelValues(l).Set(now.Sub(c.OldestUnchecked(s.n)).Seconds())
	}
	return nil
}
