package consumer

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
)

// DLQ publishes dead letters to a topic (durably, with the reason as a
// property) and records them in the dead_letters table for listing.
type DLQ struct {
	producer pulsar.Producer
	proj     *chstore.Projection
}

// NewDLQ creates the dead-letter producer on topic (blocking up to the
// client's operation timeout while the broker is unreachable). After a
// broker outage it reconnects within about pulsarbus.DefaultReconnectMax of
// the broker's return.
func NewDLQ(client pulsar.Client, topic string, proj *chstore.Projection) (*DLQ, error) {
	// Dead letters are sent one at a time and waited for (Send): batching
	// would buy nothing, and a batching producer's flush ticker wakes every
	// 10 ms for as long as the consumer runs, idle or not.
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, SendTimeout: 10 * time.Second,
		DisableBatching: true, BackOffPolicyFunc: pulsarbus.ReconnectBackoff(0)})
	if err != nil {
		return nil, fmt.Errorf("creating dead-letter producer on %s: %w", topic, err)
	}
	return &DLQ{producer: p, proj: proj}, nil
}

// Close closes the producer.
func (d *DLQ) Close() { d.producer.Close() }

// DeadLetter implements DeadLetterer: the topic is the durable record; the
// table entry is for listing and is best effort once the topic has it.
func (d *DLQ) DeadLetter(ctx context.Context, msg pulsar.Message, reason string) error {
	props := map[string]string{"dead_letter_reason": reason, "original_message_id": msg.ID().String()}
	for k, v := range msg.Properties() {
		props[k] = v
	}
	if _, err := d.producer.Send(ctx, &pulsar.ProducerMessage{Key: msg.Key(), Payload: msg.Payload(), Properties: props}); err != nil {
		return fmt.Errorf("publishing dead letter: %w", err)
	}
	_ = d.proj.InsertDeadLetter(ctx, chstore.DeadLetter{Time: time.Now().UTC(), MessageID: msg.ID().String(),
		EventID: msg.Properties()["event_id"], Reason: reason, Payload: msg.Payload()})
	return nil
}
