package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/chstore"
)

// Writer stores a batch synchronously (chstore.Projection).
type Writer interface {
	Insert(ctx context.Context, rows []chstore.Row) error
}

// DeadLetterer takes an event that can never be written.
type DeadLetterer interface {
	DeadLetter(ctx context.Context, msg pulsar.Message, reason string) error
}

// Config tunes a consumer.
type Config struct {
	BatchSize int           // messages per insert at most
	BatchWait time.Duration // longest wait before a partial batch is written
	Epoch     uint16        // transformation epoch written with every row
	RetryBase time.Duration // first wait after a failed insert
	RetryMax  time.Duration // longest wait between insert attempts
}

// DefaultConfig is a sane default.
func DefaultConfig() Config {
	return Config{BatchSize: 5000, BatchWait: 200 * time.Millisecond, RetryBase: 200 * time.Millisecond, RetryMax: 10 * time.Second}
}

// Validate rejects impossible settings.
func (c Config) Validate() error {
	if c.BatchSize < 1 || c.BatchWait <= 0 || c.RetryBase <= 0 || c.RetryMax < c.RetryBase {
		return fmt.Errorf("consumer config: need batch size >= 1, batch wait > 0, 0 < retry base <= retry max (got %+v)", c)
	}
	return nil
}

// Hooks inject faults in tests.
type Hooks struct {
	// AfterInsert runs after ClickHouse acknowledged a batch and before the
	// messages are acknowledged; an error stops Run there (a crash).
	AfterInsert func(ctx context.Context) error
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
}

// New returns a consumer reading cons. lag may be shared with the status API.
func New(log *slog.Logger, cfg Config, cons pulsar.Consumer, w Writer, dlq DeadLetterer, lag *Lag, reg prometheus.Registerer, hooks Hooks) (*Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if lag == nil {
		lag = NewLag()
	}
	return &Consumer{log: log, cfg: cfg, cons: cons, w: w, dlq: dlq, lag: lag, m: newMetrics(reg, lag), hooks: hooks, now: time.Now}, nil
}

// Lag returns the consumer's lag tracker.
func (c *Consumer) Lag() *Lag { return c.lag }

// ErrCrashed is returned by Run when the AfterInsert hook stopped it.
var ErrCrashed = errors.New("consumer stopped between insert and acknowledgment")

// Run consumes until ctx ends. Messages of a batch that was not written are
// never acknowledged, so the broker redelivers them (to this instance after a
// reconnect, or to another).
func (c *Consumer) Run(ctx context.Context) error {
	var msgs []pulsar.Message
	var rows []chstore.Row
	deadline := time.Time{}
	for {
		if ctx.Err() != nil {
			return nil
		}
		wait := c.cfg.BatchWait
		if !deadline.IsZero() {
			wait = time.Until(deadline)
		}
		if len(msgs) > 0 && (len(msgs) >= c.cfg.BatchSize || wait <= 0) {
			if err := c.flush(ctx, msgs, rows); err != nil {
				return err
			}
			msgs, rows, deadline = msgs[:0], rows[:0], time.Time{}
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, max(wait, time.Millisecond))
		msg, err := c.cons.Receive(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				c.log.Warn("receiving", "err", err)
			}
			if len(msgs) > 0 && deadline.IsZero() {
				deadline = c.now()
			}
			continue
		}
		ev, err := Decode(msg.Payload())
		if err != nil {
			c.deadLetter(ctx, msg, err)
			continue
		}
		if len(msgs) == 0 {
			deadline = c.now().Add(c.cfg.BatchWait)
		}
		msgs = append(msgs, msg)
		rows = append(rows, ToRow(ev, c.cfg.Epoch, 0))
	}
}

// flush writes rows until ClickHouse acknowledges them (backing off while it
// fails), then acknowledges their messages.
func (c *Consumer) flush(ctx context.Context, msgs []pulsar.Message, rows []chstore.Row) error {
	wait := c.cfg.RetryBase
	for attempt := 1; ; attempt++ {
		ingest := c.now().UnixMilli()
		for i := range rows {
			rows[i].IngestMs = ingest
		}
		start := time.Now()
		err := c.w.Insert(ctx, rows)
		c.m.insertSeconds.Observe(time.Since(start).Seconds())
		if err == nil {
			break
		}
		c.m.insertFailures.Inc()
		c.log.Error("insert failed; nothing acknowledged, retrying", "rows", len(rows), "attempt", attempt, "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return nil // unacknowledged: redelivered later
		case <-time.After(wait):
		}
		wait = min(2*wait, c.cfg.RetryMax)
	}
	if c.hooks.AfterInsert != nil {
		if err := c.hooks.AfterInsert(ctx); err != nil {
			return fmt.Errorf("%w: %v", ErrCrashed, err)
		}
	}
	for _, m := range msgs {
		if err := c.cons.Ack(m); err != nil {
			c.log.Warn("acknowledging", "err", err) // redelivery only duplicates an applied version
		}
	}
	c.m.applied.Add(float64(len(rows)))
	for _, r := range rows {
		c.lag.Observe(r.ShardID, r.SourceCommitMs, r.IngestMs)
	}
	return nil
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
	c.log.Warn("event dead-lettered", "message_id", msg.ID().String(), "reason", reason)
}

// Subscribe opens the projection's subscription on topic: Failover, so each
// partition (and therefore each data_id) is consumed in order by one active
// instance while instances share partitions; from the earliest message, so a
// new subscription misses nothing.
func Subscribe(client pulsar.Client, topic, subscription string) (pulsar.Consumer, error) {
	c, err := client.Subscribe(pulsar.ConsumerOptions{
		Topic:                       topic,
		SubscriptionName:            subscription,
		Type:                        pulsar.Failover,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
		ReceiverQueueSize:           5000,
		NackRedeliveryDelay:         time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("subscribing %s to %s: %w", subscription, topic, err)
	}
	return c, nil
}
