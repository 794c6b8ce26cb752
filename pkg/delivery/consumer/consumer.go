package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
)

// Writer stores a batch synchronously (chstore.Projection).
type Writer interface {
	Insert(ctx context.Context, rows []chstore.Row) error
}

// EpochFloorReader reads the epoch floor: the lowest transformation epoch
// still allowed to write (chstore.Projection; see pkg/recovery/rebuild).
type EpochFloorReader interface {
	EpochFloor(ctx context.Context) (uint16, error)
}

// PositionWriter records the applied position per (source shard, topic
// partition) (chstore.Projection; ClickHouse migration 0009).
type PositionWriter interface {
	InsertAppliedPositions(ctx context.Context, ps []chstore.AppliedPosition, nowMs int64) error
}

// DeadLetterer takes an event that can never be written.
type DeadLetterer interface {
	DeadLetter(ctx context.Context, msg pulsar.Message, reason string) error
}

// Config tunes a consumer. A batch is cut when it holds BatchSize messages
// or BatchBytes of payload, or BatchWait after its first message arrived,
// or, while no insert is in flight, as soon as MinInsertGap has passed since
// the previous cut: whichever comes first. So a quiet consumer writes an
// event at once, and a busy one gathers what arrives during an insert into
// the next (group commit), creating at most one ClickHouse part per
// MinInsertGap from early cuts.
type Config struct {
	BatchSize  int           // messages per insert at most
	BatchBytes int           // payload bytes per insert at most (a single larger message is a batch of its own)
	BatchWait  time.Duration // longest wait before a partial batch is written
	// MinInsertGap is the shortest time between two cuts made because the
	// writer was idle (0: cut the moment the writer is idle; BatchWait or
	// more: never cut early).
	MinInsertGap time.Duration
	Epoch        uint16        // transformation epoch written with every row
	RetryBase    time.Duration // first wait after a failed insert
	RetryMax     time.Duration // longest wait between insert attempts
	// EpochCheck is how long a read epoch floor is trusted before it is read
	// again (0: DefaultEpochCheck).
	EpochCheck time.Duration
}

// DefaultEpochCheck is how often, at most, the epoch floor is re-read.
const DefaultEpochCheck = 5 * time.Second

// DefaultConfig is a sane default.
func DefaultConfig() Config {
	return Config{BatchSize: DefaultBatchSize, BatchBytes: DefaultBatchBytes, BatchWait: 200 * time.Millisecond,
		MinInsertGap: DefaultMinInsertGap, RetryBase: 200 * time.Millisecond, RetryMax: 10 * time.Second}
}

// DefaultMinInsertGap bounds the inserts cut early (the writer idle) to 20
// a second per consumer.
const DefaultMinInsertGap = 50 * time.Millisecond

// DefaultBatchSize and DefaultBatchBytes bound a batch by default.
const (
	DefaultBatchSize  = 5000
	DefaultBatchBytes = 4 << 20
)

// Validate rejects impossible settings.
func (c Config) Validate() error {
	if c.BatchSize < 1 || c.BatchBytes < 1 || c.BatchWait <= 0 || c.RetryBase <= 0 || c.RetryMax < c.RetryBase || c.EpochCheck < 0 {
		return fmt.Errorf("consumer config: need batch size >= 1, batch bytes >= 1, batch wait > 0, 0 < retry base <= retry max, epoch check >= 0 (got %+v)", c)
	}
	if c.MinInsertGap < 0 {
		return fmt.Errorf("consumer config: min insert gap %s must not be negative", c.MinInsertGap)
	}
	return nil
}

// Hooks observe a consumer; they never change what it does (faults are
// injected at the boundaries: a proxy in front of the broker or ClickHouse).
type Hooks struct {
	// Applied, when set, sees every batch once its messages are acknowledged,
	// with the time ClickHouse acknowledged the insert (for freshness
	// measurements in the benchmarks).
	Applied func(rows []chstore.Row, insertAcked time.Time)
}

// Consumer is one consumer instance.
type Consumer struct {
	log   *slog.Logger
	cfg   Config
	cons  pulsar.Consumer
	w     Writer
	dlq   DeadLetterer
	lag   *Lag
	m     *metrics
	hooks Hooks
	now   func() time.Time

	pos        PositionWriter // nil: w does not record positions
	partitions int32          // the topic's partition count (0: unknown)

	floor   EpochFloorReader // nil: w does not read the floor
	floorAt time.Time        // when floorV was read (zero: never)
	floorV  uint16
	retired atomic.Pointer[EpochRetiredError]
	// writeErr is the failure of the latest attempt to write a batch, nil
	// once a batch is written; posErr the same for recording positions.
	writeErr atomic.Pointer[error]
	posErr   atomic.Pointer[error]
}

// Deps are what a consumer reads from and writes to.
type Deps struct {
	// Sub is the subscription the consumer reads (Subscribe).
	Sub pulsar.Consumer
	// Writer stores the batches (chstore.Projection).
	Writer Writer
	// DLQ receives the events that can never be written.
	DLQ DeadLetterer
	// Lag is the lag tracker, shared with the status API (nil: its own).
	Lag *Lag
	// Registry registers the metrics (nil: not registered).
	Registry prometheus.Registerer
	// Hooks observe the consumer (none by default).
	Hooks Hooks
}

// New returns a consumer reading d.Sub. When d.Writer also reads the epoch
// floor (EpochFloorReader, as chstore.Projection does), the consumer refuses
// to write once cfg.Epoch is below the floor (see Run).
func New(log *slog.Logger, cfg Config, d Deps) (*Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if d.Lag == nil {
		d.Lag = NewLag()
	}
	if cfg.EpochCheck == 0 {
		cfg.EpochCheck = DefaultEpochCheck
	}
	c := &Consumer{log: log, cfg: cfg, cons: d.Sub, w: d.Writer, dlq: d.DLQ, lag: d.Lag, m: newMetrics(d.Registry, d.Lag), hooks: d.Hooks, now: time.Now}
	if f, ok := d.Writer.(EpochFloorReader); ok {
		c.floor = f
	}
	if pw, ok := d.Writer.(PositionWriter); ok {
		c.pos = pw
	}
	if pc, ok := d.Sub.(interface{ Partitions() int }); ok {
		c.partitions = int32(pc.Partitions())
	}
	return c, nil
}

// ErrEpochRetired is returned (wrapped in an *EpochRetiredError) by Run when
// the consumer's transformation epoch is below the epoch floor.
var ErrEpochRetired = errors.New("transformation epoch retired")

// EpochRetiredError says a consumer's epoch was retired by a rebuild.
type EpochRetiredError struct {
	Epoch, Floor uint16
}

func (e *EpochRetiredError) Error() string {
	return fmt.Sprintf("consumer epoch %d is retired: the projection's epoch floor is %d (a verified rebuild retired every epoch below it); "+
		"nothing is written or acknowledged; run the fixed transformation with --epoch >= %d", e.Epoch, e.Floor, e.Floor)
}

// Is makes errors.Is(err, ErrEpochRetired) hold.
func (e *EpochRetiredError) Is(target error) bool { return target == ErrEpochRetired }

// Retired returns the *EpochRetiredError once the consumer found its epoch
// retired (it then writes nothing more), nil otherwise. Safe for concurrent
// use (e.g. by a health check).
func (c *Consumer) Retired() error {
	if e := c.retired.Load(); e != nil {
		return e
	}
	return nil
}

// checkEpoch returns an *EpochRetiredError when the consumer's epoch is below
// the floor, or the error of reading it. The floor is re-read when the last
// read is older than cfg.EpochCheck. Called by one goroutine at a time.
func (c *Consumer) checkEpoch(ctx context.Context) error {
	if c.floor == nil {
		return nil
	}
	if e := c.retired.Load(); e != nil {
		return e
	}
	if c.floorAt.IsZero() || c.now().Sub(c.floorAt) >= c.cfg.EpochCheck {
		f, err := c.floor.EpochFloor(ctx)
		if err != nil {
			return fmt.Errorf("checking the epoch floor: %w", err)
		}
		c.floorV, c.floorAt = f, c.now()
	}
	if c.cfg.Epoch < c.floorV {
		e := &EpochRetiredError{Epoch: c.cfg.Epoch, Floor: c.floorV}
		c.retired.Store(e)
		c.log.Error("transformation epoch retired: refusing to write", "epoch", e.Epoch, "epoch_floor", e.Floor)
		return e
	}
	return nil
}

// WriteErr returns the failure of the latest attempt to write a batch while
// the consumer keeps retrying it, and nil once a batch was written (or
// before the first attempt). Safe for concurrent use (e.g. by a health
// check): ClickHouse answering pings is not enough if it refuses the
// consumer's inserts.
func (c *Consumer) WriteErr() error {
	if p := c.writeErr.Load(); p != nil {
		return *p
	}
	if p := c.posErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Lag returns the consumer's lag tracker.
func (c *Consumer) Lag() *Lag { return c.lag }

// batch is a run of received messages and their rows, cut by count, bytes
// or time.
type batch struct {
	msgs     []pulsar.Message
	rows     []chstore.Row
	bytes    int       // payload bytes
	inserted time.Time // when ClickHouse acknowledged the insert
	// positions is the newest source commit (ms) per (shard, partition).
	positions map[posKey]int64
}

type posKey struct {
	shard     string
	partition int32
}

// appliedPositions lists the newest position per (shard, partition) of bs.
func (c *Consumer) appliedPositions(bs []*batch) []chstore.AppliedPosition {
	newest := bs[0].positions
	if len(bs) > 1 {
		newest = make(map[posKey]int64, len(bs[0].positions))
		for _, b := range bs {
			for k, ms := range b.positions {
				if ms > newest[k] {
					newest[k] = ms
				}
			}
		}
	}
	out := make([]chstore.AppliedPosition, 0, len(newest))
	for k, ms := range newest {
		out = append(out, chstore.AppliedPosition{ShardID: k.shard, Partition: k.partition, Partitions: c.partitions, CommitMs: ms})
	}
	return out
}

// Run consumes until ctx ends, in three stages that overlap:
//
//   - receiving (this goroutine): messages are received, decoded and
//     validated into the current batch, which is cut when it holds
//     cfg.BatchSize messages, before a message would take its payload above
//     cfg.BatchBytes (a larger message is a batch of its own),
//     cfg.BatchWait after its first message, or as soon as no insert is in
//     flight (none being written, none waiting) and cfg.MinInsertGap has
//     passed since the previous cut;
//   - writing: a second goroutine inserts each batch (one synchronous
//     insert, retried with backoff while it fails) while the next batch is
//     being received; at most one cut batch waits for it, so memory stays
//     bounded by about three batches;
//   - acknowledging: a third goroutine records the applied positions of
//     the batches the writer inserted (one insert for every batch written
//     since its previous one, retried with backoff while it fails) and then
//     acknowledges their messages, while the writer inserts the next batch:
//     the positions' insert is off the rows' path.
//
// Ordering: a message is acknowledged only after the insert holding it was
// acknowledged by ClickHouse and then the applied position covering it was
// recorded, so a position never runs ahead of stored rows and a batch
// whose position was not recorded is never acknowledged; the messages of a
// batch that was not written (the insert failed and ctx ended, or the
// epoch was retired) or whose position was not recorded before ctx ended
// are never acknowledged, so the broker redelivers them (to this instance
// after a reconnect, or to another), and writing a redelivered event again
// is harmless (the same row version). Run returns once all three stages
// stopped; the acknowledgments of every written batch whose position was
// recorded have then been handed to the Pulsar client.
//
// Epoch floor: Run checks it before receiving and before every insert
// (re-reading it at most every cfg.EpochCheck). When the consumer's epoch is
// below it, nothing more is inserted or acknowledged and Run returns an
// *EpochRetiredError (errors.Is ErrEpochRetired). While the floor cannot be
// read, a batch is not written (as when the insert fails) and is retried.
func (c *Consumer) Run(ctx context.Context) error {
	if err := c.checkEpoch(ctx); errors.Is(err, ErrEpochRetired) {
		return err
	} else if err != nil {
		c.log.Warn("epoch floor unreadable at start; checked again before every insert", "err", err)
	}
	toWrite := make(chan *batch, 1) // a cut batch waiting for the writer
	// Batches cut and not yet done by the writer (written or not); the
	// writer kicks wrote, never blocking, each time it is done with one.
	var inflight atomic.Int32
	wrote := make(chan struct{}, 1)
	toAck := make(chan *batch, 1) // a written batch waiting for the acker
	failed := make(chan struct{}) // closed when the writer stops for good
	var writeErr error            // set before failed is closed
	ackDone := make(chan struct{})
	go func() {
		defer close(ackDone)
		c.recordAndAcknowledge(ctx, toAck)
	}()
	writeDone := make(chan struct{})
	go func() {
		defer close(writeDone)
		defer close(toAck)
		idleSince := time.Time{} // zero until the first batch was written
		for b := range toWrite {
			if !idleSince.IsZero() {
				c.m.writerIdle.Add(time.Since(idleSince).Seconds())
			}
			written, err := c.write(ctx, b)
			inflight.Add(-1)
			select {
			case wrote <- struct{}{}:
			default: // a kick is already pending
			}
			if err != nil {
				writeErr = err
				close(failed)
				for range toWrite { // drain; nothing more is written or acknowledged
				}
				return
			}
			if written {
				toAck <- b
			}
			idleSince = time.Now()
		}
	}()

	err := c.receive(ctx, toWrite, &inflight, wrote, failed)
	close(toWrite)
	<-writeDone
	<-ackDone
	if writeErr != nil {
		return writeErr
	}
	return err
}

// Why a batch was cut (consumer_batches_cut_total's reason).
const (
	cutSize  = "size"
	cutBytes = "bytes"
	cutWait  = "wait"
	cutIdle  = "idle"
)

// receive fills batches and hands them to the writer until ctx ends or the
// writer fails (failed closed). inflight counts the batches cut and not yet
// done by the writer, which kicks wrote when it is done with one.
func (c *Consumer) receive(ctx context.Context, toWrite chan<- *batch, inflight *atomic.Int32, wrote <-chan struct{}, failed <-chan struct{}) error {
	msgs := c.cons.Chan()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var (
		cur     *batch
		started time.Time // when cur's first message arrived
		lastCut time.Time
	)
	// cut hands the current batch to the writer, counting why it was cut;
	// false when Run must stop.
	cut := func(reason string) bool {
		c.m.cuts.WithLabelValues(reason).Inc()
		timer.Stop()
		b := cur
		cur = nil
		lastCut = time.Now()
		inflight.Add(1)
		select {
		case toWrite <- b:
			return true
		default:
		}
		blocked := time.Now()
		defer func() { c.m.receiveBlocked.Add(time.Since(blocked).Seconds()) }()
		for {
			select {
			case toWrite <- b:
				return true
			case <-wrote: // the batch is still cut: the next decision is after it is handed
				continue
			case <-failed:
			case <-ctx.Done():
			}
			return false
		}
	}
	// due is when cur must be cut by time: BatchWait after its first
	// message, or earlier, MinInsertGap after the previous cut, while no
	// insert is in flight.
	due := func() time.Time {
		d := started.Add(c.cfg.BatchWait)
		if inflight.Load() == 0 {
			if e := lastCut.Add(c.cfg.MinInsertGap); e.Before(d) {
				d = e
			}
		}
		return d
	}
	// settle cuts cur when it is due, or sets the timer for when it will
	// be; false when Run must stop.
	settle := func() bool {
		if cur == nil {
			return true
		}
		d := due()
		wait := time.Until(d)
		if wait <= 0 {
			if d.Equal(started.Add(c.cfg.BatchWait)) {
				return cut(cutWait)
			}
			return cut(cutIdle)
		}
		timer.Reset(wait)
		return true
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-failed:
			return nil
		case <-wrote:
			if !settle() {
				return nil
			}
		case <-timer.C:
			if !settle() {
				return nil
			}
		case cm, ok := <-msgs:
			if !ok {
				return errors.New("the Pulsar consumer was closed")
			}
			msg := cm.Message
			ev, err := Decode(msg.Payload())
			if err != nil {
				c.deadLetter(ctx, msg, err)
				continue
			}
			size := len(msg.Payload())
			if cur != nil && cur.bytes+size > c.cfg.BatchBytes && !cut(cutBytes) {
				return nil
			}
			fresh := cur == nil
			if fresh {
				cur = &batch{msgs: make([]pulsar.Message, 0, min(c.cfg.BatchSize, 1024)), rows: make([]chstore.Row, 0, min(c.cfg.BatchSize, 1024)),
					positions: map[posKey]int64{}}
				started = time.Now()
			}
			cur.msgs = append(cur.msgs, msg)
			r := ToRow(ev, c.cfg.Epoch, 0)
			cur.rows = append(cur.rows, r)
			_, part := pulsarbus.PartitionOf(msg.Topic())
			if k := (posKey{r.ShardID, int32(part)}); r.SourceCommitMs > cur.positions[k] {
				cur.positions[k] = r.SourceCommitMs
			}
			cur.bytes += size
			c.m.received.Inc()
			if len(cur.msgs) >= c.cfg.BatchSize {
				if !cut(cutSize) {
					return nil
				}
			} else if cur.bytes >= c.cfg.BatchBytes {
				if !cut(cutBytes) {
					return nil
				}
			} else if fresh && !settle() {
				return nil
			}
		}
	}
}

// write inserts b's rows until ClickHouse acknowledges them (backing off
// while it fails). It returns false, and nothing is acknowledged, when ctx
// ended first; an error only when the epoch is retired.
func (c *Consumer) write(ctx context.Context, b *batch) (bool, error) {
	wait := c.cfg.RetryBase
	for attempt := 1; ; attempt++ {
		ingest := c.now().UnixMilli()
		for i := range b.rows {
			b.rows[i].IngestMs = ingest
		}
		err := c.checkEpoch(ctx)
		if errors.Is(err, ErrEpochRetired) {
			return false, err // nothing inserted, nothing acknowledged
		}
		if err == nil {
			start := time.Now()
			err = c.w.Insert(ctx, b.rows)
			b.inserted = time.Now()
			c.m.insertSeconds.Observe(b.inserted.Sub(start).Seconds())
		}
		if err == nil {
			c.writeErr.Store(nil)
			c.lag.observeWritten(b.rows)
			return true, nil
		}
		if ctx.Err() != nil {
			return false, nil // unacknowledged: redelivered later
		}
		if !c.failed(ctx, &c.writeErr, err, &wait, "batch not written; nothing acknowledged, retrying", "rows", len(b.rows), "attempt", attempt) {
			return false, nil // unacknowledged: redelivered later
		}
	}
}

// failed records a failed insert (in errp, for WriteErr; counted; logged
// as msg with attrs) and waits *wait before the next attempt, doubling
// *wait up to cfg.RetryMax; false when ctx ended first.
func (c *Consumer) failed(ctx context.Context, errp *atomic.Pointer[error], err error, wait *time.Duration, msg string, attrs ...any) bool {
	errp.Store(&err)
	c.m.insertFailures.Inc()
	c.log.Error(msg, append(attrs, "err", err, "retry_in", *wait)...)
	select {
	case <-ctx.Done():
		return false
	case <-time.After(*wait):
	}
	*wait = min(2**wait, c.cfg.RetryMax)
	return true
}

// recordAndAcknowledge takes the written batches from toAck until it is
// closed: it records their applied positions, then acknowledges their
// messages. The batches written while a position insert was in flight are
// recorded together by the next (their newest position per key), so the
// positions cost at most one insert per row insert, and fewer when
// ClickHouse is slow. When ctx ends before the positions of some batches
// were recorded, those are not acknowledged (redelivered later), and the
// rest of toAck is drained so the writer never blocks.
func (c *Consumer) recordAndAcknowledge(ctx context.Context, toAck <-chan *batch) {
	var pending []*batch
	for b := range toAck {
		pending = append(pending[:0], b)
	gather:
		for {
			select {
			case b, ok := <-toAck:
				if !ok {
					break gather
				}
				pending = append(pending, b)
			default:
				break gather
			}
		}
		if !c.recordPositions(ctx, pending) {
			continue // ctx ended: not acknowledged
		}
		for _, b := range pending {
			c.acknowledge(b)
		}
	}
}

// recordPositions inserts the applied positions of bs until ClickHouse
// acknowledges them (backing off while it fails); false when ctx ended
// first. True at once when the writer records no positions.
func (c *Consumer) recordPositions(ctx context.Context, bs []*batch) bool {
	if c.pos == nil {
		return true
	}
	ps := c.appliedPositions(bs)
	wait := c.cfg.RetryBase
	for attempt := 1; ; attempt++ {
		err := c.pos.InsertAppliedPositions(ctx, ps, c.now().UnixMilli())
		if err == nil {
			c.posErr.Store(nil)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		err = fmt.Errorf("recording the applied positions of %d written batches: %w", len(bs), err)
		if !c.failed(ctx, &c.posErr, err, &wait, "applied positions not recorded; their batches are not acknowledged, retrying", "batches", len(bs), "attempt", attempt) {
			return false
		}
	}
}

// acknowledge acknowledges a written batch's messages and counts them as
// applied (the lag moved when the insert was acknowledged). The Pulsar client groups the acknowledgments (it sends them
// within 100ms); one lost before reaching the broker only makes it
// redeliver an applied version.
func (c *Consumer) acknowledge(b *batch) {
	for _, m := range b.msgs {
		if err := c.cons.Ack(m); err != nil {
			c.log.Warn("acknowledging", "err", err) // redelivery only duplicates an applied version
		}
	}
	c.m.applied.Add(float64(len(b.rows)))
	c.lag.countApplied(len(b.rows))
	if c.hooks.Applied != nil {
		c.hooks.Applied(b.rows, b.inserted)
	}
}

func (c *Consumer) deadLetter(ctx context.Context, msg pulsar.Message, cause error) {
	var ie *InvalidEventError
	reason := cause.Error()
	if errors.As(cause, &ie) {
		reason = ie.Reason
	}
	if err := c.dlq.DeadLetter(ctx, msg, reason); err != nil {
		// Not acknowledged: the broker redelivers it and we try again.
		c.log.Error("dead-lettering failed; will retry on redelivery", "err", err)
		c.cons.Nack(msg)
		return
	}
	if err := c.cons.Ack(msg); err != nil {
		c.log.Warn("acknowledging a dead letter", "err", err)
	}
	c.m.deadLettered.Inc()
	c.lag.ObserveDeadLetter()
	c.log.Warn("event dead-lettered", "message_id", msg.ID().String(), "reason", reason)
}

// Subscribe opens the projection's subscription on topic: Failover, so each
// partition (and therefore each data_id) is consumed in order by one active
// instance while instances share partitions; from the earliest message, so a
// new subscription misses nothing. It blocks up to the client's operation
// timeout while the broker is unreachable. After a broker outage the
// consumer reconnects within about pulsarbus.DefaultReconnectMax of the
// broker's return (the client's own policy waits up to a minute).
func Subscribe(client pulsar.Client, topic, subscription string) (pulsar.Consumer, error) {
	c, err := client.Subscribe(pulsar.ConsumerOptions{
		Topic:                       topic,
		SubscriptionName:            subscription,
		Type:                        pulsar.Failover,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
		ReceiverQueueSize:           5000,
		NackRedeliveryDelay:         time.Second,
		BackOffPolicyFunc:           pulsarbus.ReconnectBackoff(0),
	})
	if err != nil {
		return nil, fmt.Errorf("subscribing %s to %s: %w", subscription, topic, err)
	}
	// The partition count of the (partitioned) topic, recorded with the
	// applied positions so readers can route a data_id to its partition.
	base, _ := pulsarbus.PartitionOf(topic)
	n := 0
	if parts, err := client.TopicPartitions(base); err == nil {
		n = len(parts)
	}
	return subscribed{Consumer: c, partitions: n}, nil
}

// subscribed is a consumer that knows its topic's partition count.
type subscribed struct {
	pulsar.Consumer
	partitions int
}

// Partitions returns the topic's partition count (0: unknown).
func (s subscribed) Partitions() int { return s.partitions }
