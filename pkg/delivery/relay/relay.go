// Package relay drains shard outboxes into the broker. Per shard it loops:
// claim a small batch (a short transaction, see outbox.Repo.Claim), publish
// it outside any transaction, then record SENT (broker acknowledged) or
// FAILED/PARKED (with backoff) for exactly the rows its claim token still
// owns. Rows of a relay that dies are reclaimed when their lease expires.
// Nothing is dropped: an event that keeps failing is PARKED, visible, and
// replayed only through an explicit call.
//
// SENT means the broker acknowledged the event; it says nothing about the
// projection. Duplicates are expected (a lost acknowledgment, a lost SENT
// update, a reclaimed lease): consumers are idempotent per (data_id, version).
//
// Failures that retrying fixes (a shard or the broker unreachable) are
// retried with backoff for as long as they last. A failure that retrying
// cannot fix — every shard refusing the relay's credentials or privileges
// for FatalClaimFailures consecutive cycles — ends Run with
// ErrEveryShardRefused, so the process exits and says why.
package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/resultsync/resultsync/pkg/delivery/outbox"
)

// Message is one event to publish.
type Message struct {
	Key        string // data_id, so a record's versions stay on one partition
	Payload    []byte // the outbox payload, byte for byte
	EventID    string
	ShardID    string
	CommitTime time.Time
}

// Publisher publishes a batch and reports, per message, nil when the broker
// acknowledged it. It must return within ctx's deadline.
type Publisher interface {
	Publish(ctx context.Context, msgs []Message) []error
}

// Store is what the relay needs of one shard's outbox (outbox.Repo).
type Store interface {
	ShardID() string
	ClaimBatch(ctx context.Context, spec outbox.ClaimSpec) (outbox.Claim, error)
	MarkSent(ctx context.Context, token string, ids []int64) (int64, error)
	MarkFailed(ctx context.Context, token string, ids []int64, cause string, maxAttempts int, b outbox.Backoff) (failed, parked int64, err error)
}

// Config tunes a relay instance.
type Config struct {
	BatchSize      int           // rows per claim
	Lease          time.Duration // how long a claim is owned
	PublishTimeout time.Duration // bound on one batch's publish
	// CompletionTimeout bounds the SENT / FAILED update of one batch. The
	// lease must be longer than PublishTimeout + CompletionTimeout, so a
	// healthy claimant always records its outcome before another can
	// reclaim the rows (a tighter lease means reclaims and duplicate
	// publishes). 0 means DefaultCompletionTimeout, or half of what the
	// lease leaves after the publish timeout when that is less.
	CompletionTimeout time.Duration
	// PollInterval is the wait after a claim that found nothing eligible.
	// A loop that has found nothing for IdleAfter doubles its wait after
	// each further empty claim, up to MaxIdleInterval; a claim that finds
	// rows resets it, and the next claim follows at once. So a shard with
	// any traffic (an event per IdleAfter) is claimed every PollInterval
	// as before, and only an idle one is claimed less often.
	PollInterval time.Duration
	// MaxIdleInterval bounds the idle wait of a claim loop, so it bounds the
	// claim delay of the first event after a quiet spell (commit-to-SENT of
	// an isolated event is at most about this plus a publish) and sets the
	// idle claim rate: ClaimSlots loops per shard each claiming once per
	// MaxIdleInterval. Under steady traffic the loops find rows and stay at
	// PollInterval. 0 means DefaultMaxIdleInterval (PollInterval when that
	// is longer).
	MaxIdleInterval time.Duration
	// MaxAttempts is how many attempts — failed publishes and claims whose
	// lease expired before their outcome was recorded (the claimant
	// crashed) — an event gets before it is PARKED.
	MaxAttempts int
	Backoff     outbox.Backoff // retry delay of FAILED rows
	// ClaimSlots bounds how many claim loops work one shard at once,
	// across every relay instance (see outbox.SlotSession): each instance
	// runs that many loops per shard, and a loop claims only while it
	// holds one of the shard's slots; the others stand by, each waiting in
	// a blocking GET_LOCK (StandbyWait at a time) for a slot, and take it
	// over when its holder releases it or its session ends. 0 means
	// DefaultClaimSlots.
	ClaimSlots int
	// FatalClaimFailures is how many consecutive cycles every shard must
	// fail with a permanent error (IsPermanent) before Run gives up with
	// ErrEveryShardRefused. 0 means DefaultFatalClaimFailures; negative
	// never gives up. Cycles back off from PollInterval, doubling up to 5s,
	// so the default takes about ten seconds.
	FatalClaimFailures int
	// StopTimeout bounds, once ctx has ended, the wait of an in-flight
	// batch for its acknowledgments and then for its completion (SENT /
	// FAILED) to be written: Run returns within about twice this after ctx
	// ends, whatever the broker and the shards do. 0 means
	// DefaultStopTimeout. Rows whose completion did not make it are
	// published again after their lease: a duplicate, never a loss.
	StopTimeout time.Duration
}

// Defaults of the zero-valued Config fields.
const (
	DefaultFatalClaimFailures = 10
	DefaultStopTimeout        = 2 * time.Second
	DefaultCompletionTimeout  = 10 * time.Second
	DefaultClaimSlots         = 2
	// DefaultMaxIdleInterval is the default MaxIdleInterval: chosen with
	// bench/relay's first-event phase and bench/idle (docs/design.md,
	// "Quiet when idle").
	DefaultMaxIdleInterval = 200 * time.Millisecond
)

// IdleAfter is how long a claim loop must have found nothing before it
// backs off from PollInterval towards MaxIdleInterval.
const IdleAfter = time.Second

// StandbyWait is how long a loop without a claim slot waits, in one
// blocking GET_LOCK, for the slot it stands by for (at most; a quarter of
// the lease when that is shorter, and never under one second: the engines
// wait whole seconds), before it looks at every slot again. It also bounds
// how long a stopping relay's standby statement lingers on the server.
const StandbyWait = 5 * time.Second

// DefaultConfig is a sane production default.
func DefaultConfig() Config {
	return Config{
		BatchSize: 500, Lease: 30 * time.Second, PublishTimeout: 10 * time.Second, CompletionTimeout: DefaultCompletionTimeout,
		PollInterval: 20 * time.Millisecond, MaxIdleInterval: DefaultMaxIdleInterval, MaxAttempts: 20,
		Backoff:            outbox.Backoff{Base: 500 * time.Millisecond, Max: 5 * time.Minute},
		FatalClaimFailures: DefaultFatalClaimFailures, ClaimSlots: DefaultClaimSlots,
		// StopTimeout stays 0: DefaultStopTimeout, or what a server derives
		// from its shutdown grace.
	}
}

// completionTimeout is CompletionTimeout with its default applied.
func (c Config) completionTimeout() time.Duration {
	if c.CompletionTimeout != 0 {
		return c.CompletionTimeout
	}
	return min(DefaultCompletionTimeout, (c.Lease-c.PublishTimeout)/2)
}

// Validate rejects impossible settings, notably a lease that does not cover
// the publish timeout plus the completion timeout (a slow but healthy batch
// would be reclaimed and published twice).
func (c Config) Validate() error {
	var errs []error
	if c.BatchSize < 1 || c.BatchSize > 10000 {
		errs = append(errs, fmt.Errorf("batch size must be 1-10000, got %d", c.BatchSize))
	}
	if c.PublishTimeout <= 0 {
		errs = append(errs, fmt.Errorf("publish timeout must be positive, got %s", c.PublishTimeout))
	}
	if c.CompletionTimeout < 0 {
		errs = append(errs, fmt.Errorf("completion timeout must not be negative, got %s", c.CompletionTimeout))
	}
	if ct := c.completionTimeout(); c.Lease <= c.PublishTimeout+ct || ct <= 0 {
		errs = append(errs, fmt.Errorf("lease (%s) must be longer than the publish timeout (%s) plus the completion timeout (%s)",
			c.Lease, c.PublishTimeout, max(ct, 0)))
	}
	if c.PollInterval <= 0 {
		errs = append(errs, fmt.Errorf("poll interval must be positive, got %s", c.PollInterval))
	}
	if c.MaxIdleInterval < 0 || (c.MaxIdleInterval > 0 && c.MaxIdleInterval < c.PollInterval) {
		errs = append(errs, fmt.Errorf("max idle interval must be at least the poll interval (%s), or 0 for the default, got %s", c.PollInterval, c.MaxIdleInterval))
	}
	if c.MaxAttempts < 1 {
		errs = append(errs, fmt.Errorf("max attempts must be at least 1, got %d", c.MaxAttempts))
	}
	if c.Backoff.Base <= 0 || c.Backoff.Max < c.Backoff.Base {
		errs = append(errs, fmt.Errorf("backoff needs 0 < base <= max, got base %s max %s", c.Backoff.Base, c.Backoff.Max))
	}
	if c.StopTimeout < 0 {
		errs = append(errs, fmt.Errorf("stop timeout must not be negative, got %s", c.StopTimeout))
	}
	if c.ClaimSlots < 0 || c.ClaimSlots > 64 {
		errs = append(errs, fmt.Errorf("claim slots must be 1-64 (0: %d), got %d", DefaultClaimSlots, c.ClaimSlots))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.FatalClaimFailures == 0 {
		c.FatalClaimFailures = DefaultFatalClaimFailures
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = DefaultStopTimeout
	}
	c.CompletionTimeout = c.completionTimeout()
	if c.ClaimSlots == 0 {
		c.ClaimSlots = DefaultClaimSlots
	}
	if c.MaxIdleInterval == 0 {
		c.MaxIdleInterval = max(DefaultMaxIdleInterval, c.PollInterval)
	}
	return c
}

// ClaimObserver sees every claim and completion, for tests and tracing.
type ClaimObserver interface {
	Claimed(shardID string, c outbox.Claim)
	Completed(shardID string, c outbox.Claim, sent, failed, parked int64)
}

// Relay is one relay instance over a set of shards.
type Relay struct {
	cfg      Config
	log      *slog.Logger
	pub      Publisher
	stores   []Store
	metrics  *Metrics
	observer ClaimObserver

	mu     sync.Mutex
	shards map[string]*shardState
}

// shardState is what the relay last saw of one shard.
type shardState struct {
	lastErr   error // the last cycle's error; nil after a successful cycle
	permanent int   // consecutive cycles failed with a permanent error
}

// New returns a relay publishing through pub from every store. metrics and
// observer may be nil.
func New(log *slog.Logger, cfg Config, pub Publisher, stores []Store, metrics *Metrics, observer ClaimObserver) (*Relay, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("relay config: %w", err)
	}
	if len(stores) == 0 {
		return nil, errors.New("relay config: no shards")
	}
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	r := &Relay{cfg: cfg.withDefaults(), log: log, pub: pub, stores: stores, metrics: metrics, observer: observer,
		shards: map[string]*shardState{}}
	for _, st := range stores {
		if _, dup := r.shards[st.ShardID()]; dup {
			return nil, fmt.Errorf("relay config: shard %s given twice", st.ShardID())
		}
		r.shards[st.ShardID()] = &shardState{}
	}
	return r, nil
}

// ErrEveryShardRefused ends Run when every shard keeps failing with an error
// that retrying cannot fix (see IsPermanent).
var ErrEveryShardRefused = errors.New("every shard refuses the relay")

// slotStore is a Store whose claim loops are bounded across instances by
// claim slots (outbox.Repo).
type slotStore interface {
	OpenSlotSession(ctx context.Context, idle time.Duration) (*outbox.SlotSession, error)
}

// prober is a Store that can tell, in one cheap read, whether a claim
// would find anything (outbox.Repo.Eligible): an idle loop asks it before
// each claim instead of opening a claim transaction that finds nothing.
type prober interface {
	Eligible(ctx context.Context) (bool, error)
}

// idleProbe is the eligibility probe of one shard, shared by the relay's
// loops of that shard: an idle loop takes the answer another loop got less
// than fresh (half the longest idle wait) ago when that answer was
// "nothing", so the shard is asked about once per MaxIdleInterval whatever
// the number of loops, and an event committed meanwhile still waits at most
// about MaxIdleInterval for the next real question.
type idleProbe struct {
	p     prober
	fresh time.Duration

	mu      sync.Mutex
	emptyAt time.Time // when a probe last found nothing (zero: never, or it found rows since)
}

func (q *idleProbe) eligible(ctx context.Context) (bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.emptyAt.IsZero() && time.Since(q.emptyAt) < q.fresh {
		return false, nil
	}
	ok, err := q.p.Eligible(ctx)
	q.emptyAt = time.Time{}
	if err == nil && !ok {
		q.emptyAt = time.Now()
	}
	return ok, err
}

// Run drains every shard concurrently, in loops of their own so that no
// shard starves another, until ctx ends; then it returns nil. A shard whose
// store has claim slots (outbox.Repo) gets ClaimSlots loops, each claiming
// only while it holds a slot; any other store gets one loop. An in-flight batch
// is completed (its SENT/FAILED update written, within StopTimeout) before
// Run returns.
//
// Transient failures (a shard or the broker unreachable) are retried with
// backoff for as long as they last; ShardErr shows them. When every shard
// has failed FatalClaimFailures consecutive cycles with a permanent error
// (access denied, unknown database: IsPermanent), Run stops every loop and
// returns an error wrapping ErrEveryShardRefused and each shard's last
// error: retrying cannot fix it, and the process should exit and say so.
func (r *Relay) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, st := range r.stores {
		ss, slotted := st.(slotStore)
		loops := 1
		if slotted {
			loops = r.cfg.ClaimSlots
		}
		var probe *idleProbe // shared by the shard's loops
		if p, ok := st.(prober); ok {
			probe = &idleProbe{p: p, fresh: r.cfg.MaxIdleInterval / 2}
		}
		for k := range loops {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.loop(ctx, cancel, st, ss, probe, k)
			}()
		}
	}
	wg.Wait()
	if err := context.Cause(ctx); errors.Is(err, ErrEveryShardRefused) {
		return err
	}
	return nil
}

// ShardErr returns the error of the last cycle on shardID: nil when it
// succeeded (or none ran yet), the claim or completion error otherwise.
// Health probes report it.
func (r *Relay) ShardErr(shardID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.shards[shardID]; ok {
		return s.lastErr
	}
	return fmt.Errorf("unknown shard %q", shardID)
}

// record notes a cycle's outcome on shardID and returns the fatal error
// once every shard has failed permanently often enough in a row.
func (r *Relay) record(shardID string, err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.shards[shardID]
	s.lastErr = err
	if err == nil || !IsPermanent(err) {
		s.permanent = 0 // only consecutive permanent failures count
		return nil
	}
	s.permanent++
	if r.cfg.FatalClaimFailures < 0 {
		return nil
	}
	causes := make([]error, 0, len(r.stores))
	for _, st := range r.stores {
		o := r.shards[st.ShardID()]
		if o.permanent < r.cfg.FatalClaimFailures {
			return nil
		}
		causes = append(causes, fmt.Errorf("%s: %w", st.ShardID(), o.lastErr))
	}
	return fmt.Errorf("%w (%d consecutive cycles each; fix the credentials, grants or database names): %w",
		ErrEveryShardRefused, r.cfg.FatalClaimFailures, joined(causes))
}

// loop is claim loop k of shard st: it claims while it holds a claim slot
// (waiting for one otherwise), backs off while the shard is idle and when
// cycles fail.
func (r *Relay) loop(ctx context.Context, fatal context.CancelCauseFunc, st Store, ss slotStore, probe *idleProbe, k int) {
	errWait := r.cfg.PollInterval
	idle := r.cfg.PollInterval // the wait after the next empty claim, once idle
	lastWork := time.Now()
	slots := slotHolder{r: r, ss: ss, shard: st.ShardID(), prefer: k}
	defer slots.close()
	for ctx.Err() == nil {
		var n int
		held, err := slots.hold(ctx)
		if err == nil && held {
			// Idle (nothing found for IdleAfter): claim only when the
			// cheap probe says a claim would find something.
			if probe != nil && time.Since(lastWork) >= IdleAfter {
				var eligible bool
				if eligible, err = probe.eligible(ctx); err == nil && eligible {
					n, err = r.Cycle(ctx, st)
				}
			} else {
				n, err = r.Cycle(ctx, st)
			}
		}
		if ctx.Err() != nil {
			return
		}
		if ferr := r.record(st.ShardID(), err); ferr != nil {
			fatal(ferr)
			return
		}
		switch {
		case err != nil:
			r.log.Error("relay cycle failed", "shard", st.ShardID(), "err", err, "permanent", IsPermanent(err), "retry_in", errWait)
			slots.drop(ctx) // the session may be what failed
			sleep(ctx, errWait)
			errWait = min(errWait*2, 5*time.Second)
		case !held:
			// hold waited (StandbyWait) for a slot already: look again.
			errWait = r.cfg.PollInterval
		case n == 0:
			errWait = r.cfg.PollInterval
			r.metrics.emptyClaims.WithLabelValues(st.ShardID()).Inc()
			if time.Since(lastWork) < IdleAfter {
				sleep(ctx, r.cfg.PollInterval)
				break
			}
			sleep(ctx, idle)
			idle = min(idle*2, r.cfg.MaxIdleInterval)
		default:
			errWait, idle, lastWork = r.cfg.PollInterval, r.cfg.PollInterval, time.Now()
		}
	}
}

// slotHolder is a loop's claim slot session: opened on demand, kept while
// it holds a slot, checked (and kept alive) every quarter lease.
type slotHolder struct {
	r       *Relay
	ss      slotStore // nil: no slots, always hold
	shard   string
	prefer  int // the slot waited for when every slot is held
	s       *outbox.SlotSession
	checked time.Time
}

// hold reports whether the loop may claim: it holds a slot, taking one if
// it is free.
func (h *slotHolder) hold(ctx context.Context) (bool, error) {
	if h.ss == nil {
		return true, nil
	}
	if h.s == nil {
		// The server drops a session idle for two leases, and the slot
		// with it: a holder that vanished is replaced within that.
		s, err := h.ss.OpenSlotSession(ctx, 2*h.r.cfg.Lease)
		if err != nil {
			return false, err
		}
		h.s = s
	}
	if h.s.Slot() >= 0 {
		if time.Since(h.checked) < h.r.cfg.Lease/4 {
			return true, nil
		}
		if err := h.s.Check(ctx); err != nil {
			return false, err
		}
		h.checked = time.Now()
		return true, nil
	}
	ok, err := h.s.TakeWaiting(ctx, h.r.cfg.ClaimSlots, h.prefer, min(StandbyWait, h.r.cfg.Lease/4))
	if ok {
		h.checked = time.Now()
		h.r.metrics.slotsHeld.WithLabelValues(h.shard).Inc()
	}
	return ok, err
}

// drop closes the session after a failure.
func (h *slotHolder) drop(ctx context.Context) {
	if h.s != nil {
		if h.s.Slot() >= 0 {
			h.r.metrics.slotsHeld.WithLabelValues(h.shard).Dec()
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(time.Second, h.r.cfg.StopTimeout))
		defer cancel()
		h.s.Close(cctx)
		h.s = nil
	}
}

func (h *slotHolder) close() { h.drop(context.Background()) }

// joinedErrors is errors.Join printed on one line ("; "), for log lines.
type joinedErrors []error

func joined(errs []error) error { return joinedErrors(errs) }

func (j joinedErrors) Error() string {
	parts := make([]string, len(j))
	for i, e := range j {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

func (j joinedErrors) Unwrap() []error { return j }

// untilStop returns a context that outlives ctx — an in-flight batch is
// finished, not abandoned, when ctx ends — but ends after timeout, or
// stop after ctx ended, whichever comes first.
func untilStop(ctx context.Context, timeout, stop time.Duration) (context.Context, context.CancelFunc) {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	if stop >= timeout {
		return c, cancel
	}
	release := context.AfterFunc(ctx, func() {
		t := time.NewTimer(stop)
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-c.Done():
		}
	})
	return c, func() { release(); cancel() }
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Cycle runs one claim-publish-complete round on st and returns how many
// rows it claimed or parked.
func (r *Relay) Cycle(ctx context.Context, st Store) (int, error) {
	shard := st.ShardID()
	c, err := st.ClaimBatch(ctx, outbox.ClaimSpec{Limit: r.cfg.BatchSize, Lease: r.cfg.Lease, MaxAttempts: r.cfg.MaxAttempts})
	if err != nil {
		return 0, err
	}
	if len(c.Parked) > 0 {
		r.metrics.parked.WithLabelValues(shard).Add(float64(len(c.Parked)))
		events := make([]string, len(c.Parked))
		for i, x := range c.Parked {
			events[i] = x.EventID
		}
		r.log.Error("events parked: their claimant stopped before recording the outcome too many times (a poison event crashing the relay?); replay them with OutboxService.ReplayParkedEvents",
			"shard", shard, "events", events, "max_attempts", r.cfg.MaxAttempts)
	}
	if len(c.Rows) == 0 {
		return len(c.Parked), nil
	}
	r.metrics.claimed.WithLabelValues(shard).Add(float64(len(c.Rows)))
	msgs := make([]Message, len(c.Rows))
	reclaimed := 0
	for i, row := range c.Rows {
		msgs[i] = Message{Key: strconv.FormatInt(row.DataID, 10), Payload: row.Payload, EventID: row.EventID, ShardID: shard, CommitTime: row.Created}
		if row.Reclaimed {
			reclaimed++
		}
	}
	if reclaimed > 0 {
		r.metrics.reclaimed.WithLabelValues(shard).Add(float64(reclaimed))
		r.log.Warn("reclaimed rows whose lease expired", "shard", shard, "rows", reclaimed)
	}
	if r.observer != nil {
		r.observer.Claimed(shard, c)
	}

	// Publish outside any transaction, bounded by the publish timeout (< lease),
	// and by the stop timeout once ctx has ended.
	pctx, cancel := untilStop(ctx, r.cfg.PublishTimeout, r.cfg.StopTimeout)
	start := time.Now()
	errs := r.pub.Publish(pctx, msgs)
	cancel()
	r.metrics.publishSeconds.WithLabelValues(shard).Observe(time.Since(start).Seconds())

	var okIDs []int64
	failedIDs := map[string][]int64{}
	for i, row := range c.Rows {
		if errs[i] == nil {
			okIDs = append(okIDs, row.ID)
			continue
		}
		failedIDs[errs[i].Error()] = append(failedIDs[errs[i].Error()], row.ID)
	}

	// Completion is written even when ctx ended meanwhile (graceful shutdown),
	// within a short bound (the stop timeout once ctx has ended); if it
	// fails, the lease expires and the rows are published again: a
	// duplicate, never a loss.
	cctx, ccancel := untilStop(ctx, r.cfg.CompletionTimeout, r.cfg.StopTimeout)
	defer ccancel()
	var sent, failed, parked int64
	var errsOut []error
	if len(okIDs) > 0 {
		n, err := st.MarkSent(cctx, c.Token, okIDs)
		if err != nil {
			errsOut = append(errsOut, fmt.Errorf("recording %d acknowledged events (they will be published again after the lease): %w", len(okIDs), err))
		}
		sent = n
		if lost := int64(len(okIDs)) - n; err == nil && lost > 0 {
			r.metrics.lostClaims.WithLabelValues(shard).Add(float64(lost))
			r.log.Warn("claim token no longer matched; another claimant owns the rows", "shard", shard, "rows", lost)
		}
	}
	for cause, ids := range failedIDs {
		f, p, err := st.MarkFailed(cctx, c.Token, ids, cause, r.cfg.MaxAttempts, r.cfg.Backoff)
		if err != nil {
			errsOut = append(errsOut, fmt.Errorf("recording %d failed publishes: %w", len(ids), err))
			continue
		}
		failed += f
		parked += p
		r.log.Warn("publish failed", "shard", shard, "events", len(ids), "err", cause, "parked", p)
	}
	r.metrics.sent.WithLabelValues(shard).Add(float64(sent))
	r.metrics.failed.WithLabelValues(shard).Add(float64(failed))
	if parked > 0 {
		r.metrics.parked.WithLabelValues(shard).Add(float64(parked))
		r.log.Error("events parked after too many failed publishes; replay them with OutboxService.ReplayParkedEvents",
			"shard", shard, "events", parked, "max_attempts", r.cfg.MaxAttempts)
	}
	if r.observer != nil {
		r.observer.Completed(shard, c, sent, failed, parked)
	}
	return len(c.Rows) + len(c.Parked), errors.Join(errsOut...)
}
