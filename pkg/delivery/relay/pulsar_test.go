package relay_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
)

// With the broker unreachable, the lazy publisher neither blocks its
// construction nor a publish past the publish's context, although the
// client's own producer creation waits for its 30s operation timeout; the
// outcome tells health why nothing was published, and Close is immediate.
// (Nothing listens on 127.0.0.1:9: no broker is needed.)
func TestLazyPublisherIsBoundedByItsContext(t *testing.T) {
	client, err := pulsarbus.NewClient(quiet, pulsarbus.Options{URL: "pulsar://127.0.0.1:9", OperationTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	start := time.Now()
	pub := relay.NewLazyPulsarPublisher(client, relay.PulsarOptions{Topic: "persistent://public/default/unreachable", SendTimeout: time.Second})
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("constructing the publisher took %s; it must not contact the broker", took)
	}
	if o := pub.LastOutcome(); !o.At.IsZero() || o.Err != nil {
		t.Errorf("outcome before any publish = %+v, want none", o)
	}
	msgs := []relay.Message{{Key: "1", Payload: []byte("a"), EventID: "fitness-result-1-v1"}, {Key: "2", Payload: []byte("b"), EventID: "fitness-result-2-v1"}}
	for round := range 2 { // the second joins the creation still in flight
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		start := time.Now()
		errs := pub.Publish(ctx, msgs)
		took := time.Since(start)
		cancel()
		if took > time.Second {
			t.Errorf("round %d: Publish took %s with a 300ms context", round, took)
		}
		for i, err := range errs {
			if !errors.Is(err, relay.ErrNoProducer) {
				t.Errorf("round %d: message %d: %v, want ErrNoProducer", round, i, err)
			}
		}
		if o := pub.LastOutcome(); !errors.Is(o.Err, relay.ErrNoProducer) || time.Since(o.At) > time.Second {
			t.Errorf("round %d: outcome %+v, want a fresh ErrNoProducer", round, o)
		}
	}
	start = time.Now()
	pub.Close()
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("Close took %s", took)
	}
	errs := pub.Publish(context.Background(), msgs)
	if !errors.Is(errs[0], relay.ErrPublisherClosed) {
		t.Errorf("Publish after Close: %v, want ErrPublisherClosed", errs[0])
	}
}
