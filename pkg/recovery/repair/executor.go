package repair

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/recovery/replay"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
)

// ExecutorConfig tunes the executor.
type ExecutorConfig struct {
	// RowsPerSecond bounds the rows repaired per second on each shard, over
	// every repair this executor runs (--rows-per-second), so current
	// traffic keeps flowing.
	RowsPerSecond int
	// WorkersPerShard is how many items (or batches) of one repair are
	// applied at once on one shard (within the rate).
	WorkersPerShard int
	// BatchSize is how many replays and tombstones one shard transaction
	// and one control-database commit carry at most (--batch-size); the
	// rate's burst (RowsPerSecond/20) bounds it too, so a slow rate still
	// applies items one by one.
	BatchSize int
	// MaxConcurrent is how many repairs and rebuilds run at once.
	MaxConcurrent int
	// Poll is how often, while this executor runs work, its leases are
	// renewed and more runnable work is looked for.
	Poll time.Duration
	// IdlePoll is how often an executor running nothing looks for runnable
	// work by itself: work created or approved through this process wakes it
	// at once (Deps.Wake), so this only bounds how late it notices work
	// another replica queued and did not start (it was full, or it crashed
	// and the lease expired). 0 means ten polls.
	IdlePoll time.Duration
	// Lease is how long a claimed repair or rebuild stays with this executor
	// without renewal: after a crash, another executor resumes it after that.
	Lease time.Duration
	// VerifyTimeout bounds a repair's verification: still wrong after it,
	// the repair FAILS with the keys that differ (--verify-timeout).
	VerifyTimeout time.Duration
	// VerifyPoll is how often an unfinished verification compares again.
	VerifyPoll time.Duration
	// ItemAttempts bounds the attempts to apply one item before it FAILS.
	ItemAttempts int
	// RetryBackoff is the wait before the second attempt, doubled for each
	// further one (at most 10s).
	RetryBackoff time.Duration
}

// DefaultExecutorConfig returns the defaults of the repair server.
func DefaultExecutorConfig() ExecutorConfig {
	return ExecutorConfig{RowsPerSecond: 5000, WorkersPerShard: 8, BatchSize: 250, MaxConcurrent: 4, Poll: time.Second, IdlePoll: 10 * time.Second, Lease: 30 * time.Second,
		VerifyTimeout: 2 * time.Minute, VerifyPoll: time.Second, ItemAttempts: 5, RetryBackoff: 200 * time.Millisecond}
}

// Validate rejects impossible settings.
func (c ExecutorConfig) Validate() error {
	var errs []error
	if c.RowsPerSecond < 1 {
		errs = append(errs, fmt.Errorf("rows-per-second must be at least 1, got %d", c.RowsPerSecond))
	}
	if c.WorkersPerShard < 1 || c.WorkersPerShard > 64 || c.MaxConcurrent < 1 || c.MaxConcurrent > 64 {
		errs = append(errs, errors.New("workers per shard and concurrent repairs must be 1-64"))
	}
	if c.BatchSize < 1 || c.BatchSize > replay.MaxBatch {
		errs = append(errs, fmt.Errorf("batch size must be 1-%d, got %d", replay.MaxBatch, c.BatchSize))
	}
	if c.Poll <= 0 || c.Lease < 3*c.Poll {
		errs = append(errs, fmt.Errorf("poll must be positive and the lease (%s) at least three polls (%s)", c.Lease, c.Poll))
	}
	if c.IdlePoll < 0 || (c.IdlePoll > 0 && c.IdlePoll < c.Poll) {
		errs = append(errs, fmt.Errorf("idle-poll must be at least the poll (%s), or 0 for ten polls, got %s", c.Poll, c.IdlePoll))
	}
	if c.VerifyPoll <= 0 || c.VerifyTimeout < c.VerifyPoll {
		errs = append(errs, fmt.Errorf("verify-poll must be positive and verify-timeout (%s) at least one verify-poll (%s)", c.VerifyTimeout, c.VerifyPoll))
	}
	if c.ItemAttempts < 1 || c.RetryBackoff <= 0 {
		errs = append(errs, errors.New("item attempts must be at least 1 and the retry backoff positive"))
	}
	return errors.Join(errs...)
}

// Executor runs repairs EXECUTING or AWAITING_VERIFICATION and approved
// rebuilds in the background. Each is claimed under a lease in the control
// database, so one executor runs it at a time and a repair left behind by a
// crash is resumed by the next (after its lease expired, or at once after a
// clean stop, which releases it). Resuming applies the items not recorded
// as applied: replays are idempotent (same version, same event id), so an
// item interrupted between its replay and its record is at most re-armed.
type Executor struct {
	cfg     ExecutorConfig
	log     *slog.Logger
	store   *Store
	rep     Replayer
	ed      TargetEditor
	rb      Rebuilder
	src     reconcile.Side
	shardOf func(int64) string
	ver     *Verifier
	m       *metrics
	owner   string
	wake    chan struct{}

	mu       sync.Mutex
	limiters map[string]*rate.Limiter
	running  map[string]context.CancelFunc // "repair:<id>", "rebuild:<id>"
	wg       sync.WaitGroup
}

// NewExecutor returns an executor; reg (optional) receives its metrics.
func NewExecutor(log *slog.Logger, cfg ExecutorConfig, d Deps, reg prometheus.Registerer) (*Executor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("repair executor: %w", err)
	}
	if err := d.check(true); err != nil {
		return nil, err
	}
	return &Executor{cfg: cfg, log: log, store: d.Store, rep: d.Replayer, ed: d.Editor, rb: d.Rebuilder, src: d.Source, shardOf: d.ShardOf,
		ver: newVerifier(d), m: newMetrics(reg), owner: "executor-" + newID()[:12], wake: make(chan struct{}, 1),
		limiters: map[string]*rate.Limiter{}, running: map[string]context.CancelFunc{}}, nil
}

// Wake makes the executor look for runnable work now.
func (e *Executor) Wake() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// idlePoll is IdlePoll with its default applied.
func (c ExecutorConfig) idlePoll() time.Duration {
	if c.IdlePoll > 0 {
		return c.IdlePoll
	}
	return 10 * c.Poll
}

// Run looks for runnable work on Wake, every Poll while it runs work and
// every IdlePoll otherwise, until ctx ends; then it stops its workers,
// releases their leases and returns nil. The repair signals (metrics) are
// refreshed at most every five polls (5 s by default), at the pace of the
// loop: every IdlePoll while idle.
func (e *Executor) Run(ctx context.Context) error {
	e.log.Info("repair executor started", "owner", e.owner, "rows_per_second_per_shard", e.cfg.RowsPerSecond,
		"verify_timeout", e.cfg.VerifyTimeout, "lease", e.cfg.Lease, "idle_poll", e.cfg.idlePoll())
	t := time.NewTimer(e.cfg.Poll)
	defer t.Stop()
	var lastSignals time.Time
	for {
		e.watch(ctx, repairSubject)
		e.watch(ctx, rebuildSubject)
		e.start(ctx, repairSubject)
		e.start(ctx, rebuildSubject)
		if time.Since(lastSignals) >= min(5*time.Second, e.cfg.Poll*5) {
			e.signals(ctx)
			lastSignals = time.Now()
		}
		e.mu.Lock()
		next := e.cfg.idlePoll()
		if len(e.running) > 0 {
			next = e.cfg.Poll
		}
		e.mu.Unlock()
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(next)
		select {
		case <-ctx.Done():
			e.wg.Wait()
			e.log.Info("repair executor stopped", "owner", e.owner)
			return nil
		case <-t.C:
		case <-e.wake:
		}
	}
}

func key(sub subject, id string) string { return sub.kind + ":" + id }

// watch renews the leases of the work running here and stops what ended,
// was cancelled or was taken over.
func (e *Executor) watch(ctx context.Context, sub subject) {
	e.mu.Lock()
	var ids []string
	for k := range e.running {
		if id, ok := cutPrefix(k, sub.kind+":"); ok {
			ids = append(ids, id)
		}
	}
	e.mu.Unlock()
	if len(ids) == 0 || ctx.Err() != nil {
		return
	}
	held, err := e.store.renew(ctx, sub, ids, e.owner, e.cfg.Lease)
	if err != nil {
		e.log.Warn("renewing leases", "kind", sub.kind, "err", err)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, id := range ids {
		if !held[id] {
			if cancel, ok := e.running[key(sub, id)]; ok {
				e.log.Info("stopping work that ended, was cancelled or was taken over", "kind", sub.kind, "id", id)
				cancel()
			}
		}
	}
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return "", false
}

// start claims runnable work up to MaxConcurrent and runs it.
func (e *Executor) start(ctx context.Context, sub subject) {
	if ctx.Err() != nil {
		return
	}
	e.mu.Lock()
	busy := len(e.running)
	e.mu.Unlock()
	if busy >= e.cfg.MaxConcurrent {
		return
	}
	ids, err := e.store.runnable(ctx, sub, e.owner, e.cfg.MaxConcurrent+busy)
	if err != nil {
		e.log.Warn("looking for runnable work", "kind", sub.kind, "err", err)
		return
	}
	for _, id := range ids {
		e.mu.Lock()
		_, already := e.running[key(sub, id)]
		full := len(e.running) >= e.cfg.MaxConcurrent
		e.mu.Unlock()
		if already {
			continue
		}
		if full {
			return
		}
		ok, err := e.store.claim(ctx, sub, id, e.owner, e.cfg.Lease)
		if err != nil {
			e.log.Warn("claiming work", "kind", sub.kind, "id", id, "err", err)
			continue
		}
		if ok {
			e.spawn(ctx, sub, id)
		}
	}
}

func (e *Executor) spawn(ctx context.Context, sub subject, id string) {
	wctx, cancel := context.WithCancel(ctx)
	e.mu.Lock()
	e.running[key(sub, id)] = cancel
	e.mu.Unlock()
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer func() {
			cancel()
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := e.store.release(rctx, sub, id, e.owner); err != nil {
				e.log.Warn("releasing a lease", "kind", sub.kind, "id", id, "err", err)
			}
			rcancel()
			e.mu.Lock()
			delete(e.running, key(sub, id))
			e.mu.Unlock()
			e.Wake()
		}()
		e.log.Info("running", "kind", sub.kind, "id", id)
		if sub == repairSubject {
			e.runRepair(wctx, id)
		} else {
			e.runDirectRebuild(wctx, id)
		}
	}()
}

// pause waits one poll (or until ctx ends) after an error.
func (e *Executor) pause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(e.cfg.Poll):
	}
}

// runRepair drives one repair until it ends, leaves the states an executor
// runs, or ctx ends.
func (e *Executor) runRepair(ctx context.Context, id string) {
	for ctx.Err() == nil {
		r, err := e.store.GetRepair(ctx, id)
		if err == nil {
			switch r.State {
			case StateExecuting:
				err = e.execute(ctx, r)
			case StateAwaitingVerification:
				err = e.verify(ctx, r)
			default:
				return
			}
		}
		if errors.Is(err, errLeaseLost) {
			e.log.Warn("another executor took over the repair", "repair", id)
			return
		}
		if err != nil && ctx.Err() == nil {
			e.log.Warn("repair step failed; retrying", "repair", id, "err", err)
			e.pause(ctx)
		}
	}
}

// execute applies the PENDING items of an EXECUTING repair, one worker pool
// per shard, then moves it to AWAITING_VERIFICATION (or FAILED when items
// could not be applied).
func (e *Executor) execute(ctx context.Context, r Repair) error {
	if r.Action == ActionRebuild {
		return e.executeRebuild(ctx, r)
	}
	items, err := e.store.allItems(ctx, r.ID, OutcomePending, "")
	if err != nil {
		return err
	}
	// Per shard, the replays and tombstones go in batches (one shard
	// transaction and one control commit each); removals one by one.
	size := max(1, min(e.cfg.BatchSize, e.cfg.RowsPerSecond/20))
	byShard := map[string][][]Item{}
	for _, it := range items {
		batches := byShard[it.ShardID]
		n := len(batches)
		if it.Action != ActionReplay && it.Action != ActionTombstone || n == 0 || len(batches[n-1]) >= size || !batchable(batches[n-1][0]) {
			batches = append(batches, nil)
			n++
		}
		batches[n-1] = append(batches[n-1], it)
		byShard[it.ShardID] = batches
	}
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, batches := range byShard {
		ch := make(chan []Item)
		wg.Go(func() {
			defer close(ch)
			for _, b := range batches {
				select {
				case ch <- b:
				case <-wctx.Done():
					return
				}
			}
		})
		for range min(e.cfg.WorkersPerShard, len(batches)) {
			wg.Go(func() {
				for b := range ch {
					var err error
					if batchable(b[0]) && len(b) > 1 {
						err = e.applyBatch(wctx, r, b)
					} else {
						err = e.applyAndRecord(wctx, r, b[0])
					}
					if err != nil {
						cancel(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	if err := context.Cause(wctx); err != nil {
		return err
	}
	r, err = e.store.GetRepair(ctx, r.ID)
	if err != nil {
		return err
	}
	if r.State != StateExecuting {
		return nil
	}
	if r.ItemsFailed > 0 {
		msg := fmt.Sprintf("%d of %d items could not be applied (see ListRepairItems); %d were applied and stay applied; the discrepancies are free for a new repair",
			r.ItemsFailed, r.ItemsTotal, r.ItemsDone)
		return e.store.Fail(ctx, r.ID, []string{StateExecuting}, "executor", msg, "")
	}
	deadline := time.Now().UTC().Add(e.cfg.VerifyTimeout).Truncate(time.Millisecond)
	return e.store.AwaitVerification(ctx, r.ID, "executor",
		fmt.Sprintf("applied %d items; comparing their keys until %s", r.ItemsDone, deadline.Format(time.RFC3339)), deadline)
}

// applyAndRecord applies one item within its shard's rate and records the
// outcome (even when ctx ends right after the item was applied).
func (e *Executor) applyAndRecord(ctx context.Context, r Repair, it Item) error {
	if err := e.take(ctx, it.ShardID, 1); err != nil {
		return err
	}
	res, rows, err := e.apply(ctx, r, it, 1)
	if err != nil {
		return err
	}
	if rows > 1 {
		if err := e.take(ctx, it.ShardID, int(rows-1)); err != nil && ctx.Err() == nil {
			return err
		}
	}
	if err := e.record(ctx, r, []ItemResult{res}, rows); err != nil {
		return err
	}
	return ctx.Err()
}

// batchable says whether an item is applied in batches (replays and
// tombstones; removals touch ClickHouse one key at a time).
func batchable(it Item) bool { return it.Action == ActionReplay || it.Action == ActionTombstone }

// applyBatch applies replays and tombstones of one shard within its rate:
// one ReplayBatch (one shard transaction), then one FinishItems (one control
// commit). An item the batch could not replay (an error of its own, or the
// whole batch failing) goes on alone through apply, with its remaining
// attempts, so one bad record never holds back the others.
func (e *Executor) applyBatch(ctx context.Context, r Repair, batch []Item) error {
	if err := e.take(ctx, batch[0].ShardID, len(batch)); err != nil {
		return err
	}
	ids := make([]int64, len(batch))
	for i, it := range batch {
		ids[i] = it.DataID
	}
	outs, err := e.rep.ReplayBatch(ctx, ids)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e.log.Warn("replaying a batch failed; applying its items one by one", "repair", r.ID, "items", len(batch), "err", err)
		outs = make([]replay.Outcome, len(batch))
		for i := range outs {
			outs[i].Err = err
		}
	}
	results := make([]ItemResult, 0, len(batch))
	var alone []Item
	for i, it := range batch {
		o := outs[i]
		if o.Err != nil {
			e.log.Warn("applying a repair item failed", "repair", r.ID, "data_id", it.DataID, "attempt", 1, "err", o.Err)
			alone = append(alone, it)
			continue
		}
		res := ItemResult{Seq: it.Seq, Attempts: 1}
		judge(it, &res, "", o.ShardID, o.Version, o.EventID, o.Deleted)
		results = append(results, res)
	}
	if err := e.record(ctx, r, results, int64(len(results))); err != nil {
		return err
	}
	for _, it := range alone {
		res, rows, err := e.apply(ctx, r, it, 2)
		if err != nil {
			return err
		}
		if err := e.record(ctx, r, []ItemResult{res}, rows); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// record stores the outcomes of applied items (even when ctx ended right
// after they were applied) and counts them.
func (e *Executor) record(ctx context.Context, r Repair, results []ItemResult, rows int64) error {
	if len(results) == 0 {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	// The items are applied: their outcome must be recorded now. A record
	// the database rolled back for contention (two workers' FinishItems of
	// one repair can deadlock) is retried here, not by applying the items
	// again: a removal applied again finds nothing left to remove and would
	// record 0 rows removed (TestExecutionAndVerification saw it). The
	// transaction rolled back whole and records only PENDING items, so
	// retrying it is safe.
	wait := 10 * time.Millisecond
	for {
		err := e.store.FinishItems(rctx, r.ID, e.owner, results)
		if err == nil {
			break
		}
		if !mysqldb.IsRetryable(err) || rctx.Err() != nil {
			return err
		}
		e.log.Warn("recording repair items met contention; retrying", "repair", r.ID, "items", len(results), "err", err)
		select {
		case <-rctx.Done():
			return err
		case <-time.After(wait + time.Duration(mrand.Int64N(int64(wait)))):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
	action := r.Action.String()
	var failed int
	for _, res := range results {
		if res.Outcome == OutcomeFailed {
			failed++
		}
	}
	if failed > 0 {
		e.m.itemsFailed.WithLabelValues(action).Add(float64(failed))
	}
	if failed < len(results) {
		e.m.rows.WithLabelValues(action).Add(float64(rows))
	}
	return nil
}

// take waits for n rows of shard's rate.
func (e *Executor) take(ctx context.Context, shard string, n int) error {
	e.mu.Lock()
	l, ok := e.limiters[shard]
	if !ok {
		l = rate.NewLimiter(rate.Limit(e.cfg.RowsPerSecond), max(1, e.cfg.RowsPerSecond/20))
		e.limiters[shard] = l
	}
	e.mu.Unlock()
	for n > 0 {
		k := min(n, l.Burst())
		if err := l.WaitN(ctx, k); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// apply applies one item, retrying failures with backoff up to
// ItemAttempts, from attempt first (a batch made the first). It returns the
// outcome and the rows it touched; an error only when ctx ended (the item
// stays PENDING).
func (e *Executor) apply(ctx context.Context, r Repair, it Item, first int) (ItemResult, int64, error) {
	res := ItemResult{Seq: it.Seq}
	var rows int64
	wait := e.cfg.RetryBackoff
	last := errors.New("no attempt left")
	for attempt := first; attempt <= e.cfg.ItemAttempts; attempt++ {
		res.Attempts = attempt
		n, err := e.applyOnce(ctx, r, it, &res)
		rows += n
		if err == nil {
			return res, rows, nil
		}
		if ctx.Err() != nil {
			return res, rows, ctx.Err()
		}
		last = err
		e.log.Warn("applying a repair item failed", "repair", r.ID, "data_id", it.DataID, "attempt", attempt, "err", err)
		if attempt == e.cfg.ItemAttempts {
			break
		}
		select {
		case <-ctx.Done():
			return res, rows, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Second)
	}
	res.Outcome = OutcomeFailed
	res.Attempts = max(res.Attempts, first-1)
	res.Message = fmt.Sprintf("failed after %d attempts: %v", res.Attempts, last)
	return res, rows, nil
}

// applyOnce makes one attempt; an error means "retry", a definitive
// failure is recorded in res.
func (e *Executor) applyOnce(ctx context.Context, r Repair, it Item, res *ItemResult) (int64, error) {
	switch it.Action {
	case ActionReplay, ActionTombstone:
		return e.replay(ctx, it, res, "")
	case ActionRemove:
		// Never remove what the source holds. It is read by data_id without
		// any scope (every shard, campaign, project and school: a run's
		// scope never decides whether a record exists). A record the source
		// holds is never removed as unexpected: refused, nothing removed.
		// Above a source version (TARGET_AHEAD_OF_SOURCE) the floor is the
		// newer of the version reconciliation saw and the current one.
		cur, err := e.src.Records(ctx, reconcile.Scope{}, 0, nil, []int64{it.DataID})
		if err != nil {
			return 0, fmt.Errorf("reading the source of %d: %w", it.DataID, err)
		}
		rec, present := cur[it.DataID]
		if present && it.Class != reconcile.TargetAheadOfSource {
			res.Outcome, res.Message = OutcomeFailed, refuseRemoval(it.DataID, e.shardOf(it.DataID), rec).Error()
			return 0, nil
		}
		above := it.SourceVersion
		if present {
			above = max(above, rec.Version)
		}
		n, err := e.ed.RemoveAbove(ctx, it.DetectID, it.DataID, above)
		if err != nil {
			return 0, fmt.Errorf("removing the projection rows of %d above version %d: %w", it.DataID, above, err)
		}
		res.RowsRemoved += n
		note := fmt.Sprintf("removed %d projection rows above version %d", res.RowsRemoved, above)
		if above == 0 {
			note = fmt.Sprintf("removed %d projection rows (the source has no such record)", res.RowsRemoved)
		}
		if !present {
			res.Outcome, res.Message = OutcomeApplied, note
			return n, nil
		}
		k, err := e.replay(ctx, it, res, note+"; ")
		return n + k, err
	}
	res.Outcome, res.Message = OutcomeFailed, fmt.Sprintf("action %s is not applied item by item", it.Action)
	return 0, nil
}

// refuseRemoval is the FAILED_PRECONDITION refusal to remove the projection
// rows of a record the source holds, naming that record.
func refuseRemoval(dataID int64, shard string, rec reconcile.Record) error {
	state := "live"
	if rec.Deleted {
		state = "deleted"
	}
	return apierr.FailedPrecondition.Errorf("record %d is held by the source (shard %s, version %d, %s, campaign %d, school %d): its projection rows are not removed; "+
		"reconcile again: a record on both sides with different fields is CONTENT_MISMATCH (a rebuild) or a version difference (a replay)",
		dataID, shard, rec.Version, state, rec.DetectID, rec.SchoolID)
}

// replay re-delivers the record and judges the version delivered against
// the one reconciliation saw.
func (e *Executor) replay(ctx context.Context, it Item, res *ItemResult, prefix string) (int64, error) {
	shard, v, ev, deleted, err := e.rep.Replay(ctx, it.DataID)
	if err != nil {
		return 0, fmt.Errorf("replaying %d: %w", it.DataID, err)
	}
	judge(it, res, prefix, shard, v, ev, deleted)
	return 1, nil
}

// judge records a replay's outcome: the version delivered against the one
// reconciliation saw.
func judge(it Item, res *ItemResult, prefix, shard string, v int64, ev string, deleted bool) {
	res.ShardID, res.AppliedVersion, res.EventID = shard, v, ev
	kind := "state"
	if deleted {
		kind = "tombstone"
	}
	switch {
	case v > it.SourceVersion:
		res.Outcome = OutcomeSuperseded
		res.Message = fmt.Sprintf("%sthe source moved to version %d (reconciliation saw %d); replayed that %s (%s)", prefix, v, it.SourceVersion, kind, ev)
	case v < it.SourceVersion:
		res.Outcome = OutcomeFailed
		res.Message = fmt.Sprintf("%sthe replayer delivered version %d, older than the version %d reconciliation saw", prefix, v, it.SourceVersion)
	case it.Action == ActionTombstone && !deleted:
		res.Outcome = OutcomeFailed
		res.Message = fmt.Sprintf("%sversion %d of the source is not a deletion", prefix, v)
	default:
		res.Outcome = OutcomeApplied
		res.Message = fmt.Sprintf("%sreplayed %s version %d (%s) from %s", prefix, kind, v, ev, shard)
	}
}

// verify compares the repair's keys every VerifyPoll until they are clean
// (VERIFIED) or its deadline passed (FAILED).
func (e *Executor) verify(ctx context.Context, r Repair) error {
	for {
		if r.VerifyDeadline.IsZero() {
			r.VerifyDeadline = time.Now().Add(e.cfg.VerifyTimeout)
		}
		final := !time.Now().Before(r.VerifyDeadline)
		res, err := e.ver.check(ctx, r, "executor", final)
		if err != nil {
			return err
		}
		if res.Mismatched == 0 || final {
			e.log.Info("repair verification ended", "repair", r.ID, "passed", res.Passed, "mismatched", res.Mismatched)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(e.cfg.VerifyPoll, max(time.Until(r.VerifyDeadline), time.Millisecond))):
		}
		if r, err = e.store.GetRepair(ctx, r.ID); err != nil {
			return err
		}
		if r.State != StateAwaitingVerification {
			return nil
		}
	}
}

// executeRebuild drives the rebuild of an EXECUTING REBUILD repair; once it
// switched readers every item is applied and the repair verifies its keys.
func (e *Executor) executeRebuild(ctx context.Context, r Repair) error {
	rb, err := e.store.GetRebuild(ctx, r.RebuildID)
	if err != nil {
		return err
	}
	switch rb.State {
	case StateExecuting:
		return e.runRebuild(ctx, rb)
	case StateVerified:
		if err := e.store.ApplyAllPending(ctx, r.ID, e.owner, fmt.Sprintf("rebuilt at epoch %d by rebuild %s", rb.Epoch, rb.ID)); err != nil {
			return err
		}
		deadline := time.Now().UTC().Add(e.cfg.VerifyTimeout).Truncate(time.Millisecond)
		return e.store.AwaitVerification(ctx, r.ID, "executor", fmt.Sprintf("rebuild %s switched readers after %d rows; comparing the %d keys until %s",
			rb.ID, rb.RowsWritten, r.ItemsTotal, deadline.Format(time.RFC3339)), deadline)
	default:
		return e.store.Fail(ctx, r.ID, []string{StateExecuting}, "executor", fmt.Sprintf("rebuild %s is %s: %s", rb.ID, rb.State, rb.Message), "")
	}
}

// runDirectRebuild drives a rebuild started with StartRebuild.
func (e *Executor) runDirectRebuild(ctx context.Context, id string) {
	for ctx.Err() == nil {
		rb, err := e.store.GetRebuild(ctx, id)
		if err == nil {
			if rb.State != StateExecuting {
				return
			}
			err = e.runRebuild(ctx, rb)
		}
		if err != nil && ctx.Err() == nil {
			e.log.Warn("rebuild step failed; retrying", "rebuild", id, "err", err)
			e.pause(ctx)
		}
	}
}

// runRebuild runs an EXECUTING rebuild to its end (VERIFIED once readers
// were switched, or FAILED). When ctx ends first the rebuild stays
// EXECUTING (resumed later) or CANCELLED (by the API).
func (e *Executor) runRebuild(ctx context.Context, rb Rebuild) error {
	var mu sync.Mutex
	phase, raw, last := rb.Phase, "", time.Time{}
	progress := func(p string, done, total int64) {
		mu.Lock()
		defer mu.Unlock()
		changed := p != raw
		if !changed && time.Since(last) < 500*time.Millisecond {
			return
		}
		phase, raw, last = normalizePhase(p, phase), p, time.Now()
		if err := e.store.RebuildProgress(ctx, rb.ID, phase, p, done, total, changed); err != nil && ctx.Err() == nil {
			e.log.Warn("recording rebuild progress", "rebuild", rb.ID, "err", err)
		}
	}
	rows, err := e.rb.Rebuild(ctx, rb.Scope, uint16(rb.Epoch), progress)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	mu.Lock()
	at := phase
	mu.Unlock()
	if err == nil {
		e.m.rows.WithLabelValues(ActionRebuild.String()).Add(float64(rows))
		return e.store.FinishRebuild(fctx, rb.ID, StateVerified, VerifyPassed, PhaseSwitched, rows,
			fmt.Sprintf("rebuilt %d rows at epoch %d; verified, readers switched", rows, rb.Epoch))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	ver := VerifyPending
	if at == PhaseVerifying || at == PhaseSwitching {
		ver = VerifyFailed // failed its verification (before the switch, or after it and rolled back)
	}
	return e.store.FinishRebuild(fctx, rb.ID, StateFailed, ver, "", rows, fmt.Sprintf("rebuild failed in phase %q: %v", at, err))
}

// rebuilderPhases maps the phase names a Rebuilder may report to the
// phases of the API: the Phase constants themselves, and those of
// pkg/recovery/rebuild. Once a rebuild starts switching (attach, the verification
// after it, a rollback, the retirement of old epochs) it is SWITCHING: no
// longer cancellable.
var rebuilderPhases = map[string]string{
	PhaseBuilding: PhaseBuilding, PhaseCatchingUp: PhaseCatchingUp, PhaseVerifying: PhaseVerifying, PhaseSwitching: PhaseSwitching, PhaseSwitched: PhaseSwitched,
	"scan": PhaseBuilding, "catch-up": PhaseCatchingUp, "verify-staging": PhaseVerifying,
	"switch": PhaseSwitching, "verify": PhaseSwitching, "rollback": PhaseSwitching, "retire": PhaseSwitching, "done": PhaseSwitched,
}

// normalizePhase returns the API phase of a reported one; an unknown name
// keeps the previous phase (never going back from SWITCHING).
func normalizePhase(reported, previous string) string {
	if p, ok := rebuilderPhases[reported]; ok {
		if (previous == PhaseSwitching || previous == PhaseSwitched) && p != PhaseSwitched {
			return PhaseSwitching
		}
		return p
	}
	return previous
}

// signals refreshes the state gauges from the store.
func (e *Executor) signals(ctx context.Context) {
	err := func() error {
		for _, rebuilds := range []bool{false, true} {
			counts, err := e.store.Counts(ctx, rebuilds)
			if err != nil {
				return err
			}
			g, states := e.m.repairs, States
			if rebuilds {
				g, states = e.m.rebuilds, rebuildStates
			}
			for _, s := range states {
				g.WithLabelValues(s).Set(float64(counts[s]))
			}
		}
		for state, g := range map[string]prometheus.Gauge{StateAwaitingVerification: e.m.oldestVerify, StateAwaitingApproval: e.m.oldestApproval} {
			t, err := e.store.OldestInState(ctx, state)
			if err != nil {
				return err
			}
			age := 0.0
			if !t.IsZero() {
				age = max(0, time.Since(t).Seconds())
			}
			g.Set(age)
		}
		counts, err := e.store.UnresolvedRecords(ctx)
		if err != nil {
			return err
		}
		for c := reconcile.MissingInTarget; c <= reconcile.TargetAheadOfSource; c++ {
			e.m.unresolved.WithLabelValues(c.String()).Set(float64(counts[c]))
		}
		return nil
	}()
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("reading repair signals", "err", err)
		}
		e.m.storeUp.Set(0)
		return
	}
	e.m.storeUp.Set(1)
}
