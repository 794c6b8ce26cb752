package relay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
)

// PulsarPublisher publishes to one topic, message key = data_id. On a
// partitioned topic the key picks the partition, so a record's versions stay
// in one partition, in commit order per relay claim. Batching is the default
// (not key-based): keys are nearly unique, and key-based batching made every
// message its own broker entry (8,800 vs 15,000 events/s measured here).
// Consumers therefore use a Failover subscription (one active consumer per
// partition), not Key_Shared, to keep per-key order.
//
// Every call is bounded by its context: the Pulsar client's own calls
// (creating a producer, closing it) do not take one and can block for the
// client's operation timeout while the broker is unreachable, so they run
// in the background and a caller stops waiting for them when its context
// ends.
type PulsarPublisher struct {
	client  pulsar.Client
	options pulsar.ProducerOptions

	mu        sync.Mutex
	producer  pulsar.Producer // nil until created
	creating  chan struct{}   // non-nil while a creation runs; closed when it ends
	createErr error           // the last creation's failure
	failedAt  time.Time       // when it failed
	closed    bool
	outcome   Outcome
}

// PulsarOptions configure a PulsarPublisher.
type PulsarOptions struct {
	Topic string
	// SendTimeout bounds one message's publish inside the client; it
	// should equal the relay's publish timeout.
	SendTimeout time.Duration
	// ReconnectMax caps the producer's reconnection delay after the broker
	// went away (default pulsarbus.DefaultReconnectMax), so publishing
	// resumes within about that long of the broker's return.
	ReconnectMax time.Duration
}

// createRetryDelay spaces producer creations after a failed one.
const createRetryDelay = time.Second

// closeTimeout bounds Close.
const closeTimeout = 5 * time.Second

// ErrNoProducer is reported for every message of a batch published while the
// producer does not exist yet (the broker was unreachable so far); it wraps
// nothing and carries the creation's last error in its message.
var ErrNoProducer = errors.New("no Pulsar producer")

// ErrPublisherClosed is reported for messages published after Close.
var ErrPublisherClosed = errors.New("publisher closed")

func producerOptions(o PulsarOptions) pulsar.ProducerOptions {
	return pulsar.ProducerOptions{
		Topic:                   o.Topic,
		SendTimeout:             o.SendTimeout,
		BatchingMaxPublishDelay: time.Millisecond,
		BatchingMaxMessages:     1000,
		BatcherBuilderType:      pulsar.DefaultBatchBuilder,
		MaxPendingMessages:      20000,
		BackOffPolicyFunc:       pulsarbus.ReconnectBackoff(o.ReconnectMax),
	}
}

// NewPulsarPublisher creates the producer before it returns (blocking up to
// the client's operation timeout when the broker is unreachable), for tools
// and tests that need the broker anyway. sendTimeout should equal the
// relay's publish timeout. Servers use NewLazyPulsarPublisher.
func NewPulsarPublisher(client pulsar.Client, topic string, sendTimeout time.Duration) (*PulsarPublisher, error) {
	p := NewLazyPulsarPublisher(client, PulsarOptions{Topic: topic, SendTimeout: sendTimeout})
	prod, err := client.CreateProducer(p.options)
	if err != nil {
		return nil, fmt.Errorf("creating producer on %s: %w", topic, err)
	}
	p.producer = prod
	return p, nil
}

// NewLazyPulsarPublisher returns at once, without contacting the broker: the
// producer is created by the first Publish, in the background, and a
// Publish whose context ends first reports ErrNoProducer for its messages
// (the relay marks them FAILED and retries them, as during any broker
// outage) while the creation carries on for the next one. A failed creation
// is retried by a later Publish, at most once a second.
func NewLazyPulsarPublisher(client pulsar.Client, o PulsarOptions) *PulsarPublisher {
	return &PulsarPublisher{client: client, options: producerOptions(o)}
}

// Outcome is what the latest publish said about the broker.
type Outcome struct {
	// At is when the latest publish that reached a verdict ended; zero
	// before the first.
	At time.Time
	// Err is nil when that publish got at least one acknowledgment, and
	// the broker-side failure otherwise (no producer, no acknowledgment
	// before the deadline). Failures of single messages that say nothing
	// about the broker (a message too large) are not outcomes.
	Err error
}

// LastOutcome returns the latest publish outcome, for health probes: a
// broker that answers lookups but acknowledges nothing is not serving.
func (p *PulsarPublisher) LastOutcome() Outcome {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.outcome
}

// Connect waits until the producer exists, creating it if needed, or until
// ctx ends. Publish calls it; a server may call it to warm up.
func (p *PulsarPublisher) Connect(ctx context.Context) error {
	_, err := p.connect(ctx)
	return err
}

func (p *PulsarPublisher) connect(ctx context.Context) (pulsar.Producer, error) {
	p.mu.Lock()
	switch {
	case p.closed:
		p.mu.Unlock()
		return nil, ErrPublisherClosed
	case p.producer != nil:
		prod := p.producer
		p.mu.Unlock()
		return prod, nil
	case p.creating == nil && p.createErr != nil && time.Since(p.failedAt) < createRetryDelay:
		err := p.createErr
		p.mu.Unlock()
		return nil, err
	case p.creating == nil:
		p.creating = make(chan struct{})
		go p.create(p.creating)
	}
	creating := p.creating
	p.mu.Unlock()

	select {
	case <-creating:
	case <-ctx.Done():
		p.mu.Lock()
		last := p.createErr
		p.mu.Unlock()
		if last != nil {
			return nil, fmt.Errorf("still creating the producer (%w); the last attempt failed: %w", ctx.Err(), last)
		}
		return nil, fmt.Errorf("still creating the producer: %w", ctx.Err())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.producer != nil {
		return p.producer, nil
	}
	if p.closed {
		return nil, ErrPublisherClosed
	}
	return nil, p.createErr
}

// create runs one producer creation; it may outlive every caller.
func (p *PulsarPublisher) create(done chan struct{}) {
	prod, err := p.client.CreateProducer(p.options)
	p.mu.Lock()
	defer close(done)
	defer p.mu.Unlock()
	p.creating = nil
	switch {
	case err != nil:
		p.createErr = fmt.Errorf("creating producer on %s: %w", p.options.Topic, err)
		p.failedAt = time.Now()
	case p.closed:
		go prod.Close() // closed meanwhile: nobody will use it
	default:
		p.producer, p.createErr = prod, nil
	}
}

// Close closes the producer, waiting at most a few seconds for the client
// (the rest of the close carries on in the background). Messages still
// unacknowledged fail; the relay publishes them again.
func (p *PulsarPublisher) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	prod := p.producer
	p.mu.Unlock()
	if prod == nil {
		return
	}
	done := make(chan struct{})
	go func() {
		prod.Close()
		close(done)
	}()
	t := time.NewTimer(closeTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// ErrNoAck is reported for a message whose acknowledgment did not arrive
// before the deadline: the broker may or may not have it.
var ErrNoAck = errors.New("no broker acknowledgment before the publish deadline")

// Publish implements Publisher: it sends every message asynchronously and
// waits for each acknowledgment until ctx ends. While the producer does not
// exist yet, it waits for its creation until ctx ends and then reports
// ErrNoProducer for every message.
func (p *PulsarPublisher) Publish(ctx context.Context, msgs []Message) []error {
	errs := make([]error, len(msgs))
	prod, err := p.connect(ctx)
	if err != nil {
		if !errors.Is(err, ErrPublisherClosed) {
			err = fmt.Errorf("%w: %w", ErrNoProducer, err)
		}
		for i := range errs {
			errs[i] = err
		}
		p.record(errs)
		return errs
	}

	var mu sync.Mutex
	pending := len(msgs)
	done := make(chan struct{})
	closed := false
	for i := range errs {
		errs[i] = ErrNoAck
	}
	for i, m := range msgs {
		pm := &pulsar.ProducerMessage{
			Key:        m.Key,
			Payload:    m.Payload,
			EventTime:  m.CommitTime,
			Properties: map[string]string{"event_id": m.EventID, "shard_id": m.ShardID},
		}
		prod.SendAsync(ctx, pm, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			mu.Lock()
			defer mu.Unlock()
			if closed {
				return
			}
			errs[i] = err
			pending--
			if pending == 0 {
				close(done)
			}
		})
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
	mu.Lock()
	closed = true
	out := make([]error, len(errs))
	copy(out, errs)
	mu.Unlock()
	p.record(out)
	return out
}

// record keeps the outcome of a batch: success when any message was
// acknowledged, the broker failure when none was.
func (p *PulsarPublisher) record(errs []error) {
	var fail error
	for _, err := range errs {
		if err == nil {
			p.setOutcome(nil)
			return
		}
		if fail == nil && brokerFailure(err) {
			fail = err
		}
	}
	if fail != nil {
		p.setOutcome(fail)
	}
}

func (p *PulsarPublisher) setOutcome(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.outcome = Outcome{At: time.Now(), Err: err}
}

// brokerFailure reports a publish error that says the broker is not
// accepting messages, as opposed to one message being refused.
func brokerFailure(err error) bool {
	return errors.Is(err, ErrNoAck) || errors.Is(err, ErrNoProducer) || errors.Is(err, pulsar.ErrSendTimeout) ||
		errors.Is(err, pulsar.ErrContextExpired) || errors.Is(err, pulsar.ErrSendQueueIsFull) ||
		errors.Is(err, pulsar.ErrMemoryBufferIsFull) || errors.Is(err, pulsar.ErrProducerBlockedQuotaExceeded)
}
