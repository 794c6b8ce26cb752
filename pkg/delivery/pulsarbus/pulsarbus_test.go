package pulsarbus_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// TestProduceConsumeRealBroker sends keyed messages through the real local
// Pulsar broker and reads every one back, with its key, in order per key.
func TestProduceConsumeRealBroker(t *testing.T) {
	client := infratest.NewPulsarClient(t)
	topic := infratest.Topic(t, "infra-check")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	cons, err := client.Subscribe(pulsar.ConsumerOptions{
		Topic:            topic,
		SubscriptionName: "infra-check",
		Type:             pulsar.KeyShared,
		AckWithResponse:  true,
	})
	if err != nil {
		t.Fatalf("subscribing to %s: %v", topic, err)
	}
	defer cons.Close()
	prod, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatalf("creating producer on %s: %v", topic, err)
	}
	defer prod.Close()

	var want []string
	for i := range 10 {
		key := fmt.Sprint(900000 + i%3)
		payload := fmt.Sprintf("%s-v%d", key, i)
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Key: key, Payload: []byte(payload)}); err != nil {
			t.Fatalf("sending %s: %v", payload, err)
		}
		want = append(want, key+"="+payload)
	}
	var got []string
	for range want {
		msg, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("receiving after %d messages: %v", len(got), err)
		}
		got = append(got, msg.Key()+"="+string(msg.Payload()))
		if err := cons.Ack(msg); err != nil {
			t.Fatalf("acknowledging: %v", err)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

func TestTopic(t *testing.T) {
	if got, want := pulsarbus.Topic("public", "default", "fitness-results"), "persistent://public/default/fitness-results"; got != want {
		t.Errorf("Topic = %q, want %q", got, want)
	}
}

// Options.Token reaches the broker: the local broker authenticates tokens
// (AuthenticationProviderToken, still admitting anonymous clients), so a
// client with a token it signed publishes, and a client with a token signed
// by another key is refused.
func TestTokenAuthentication(t *testing.T) {
	key := infratest.PulsarTokenKey(t)
	topic := infratest.Topic(t, "token-auth")
	send := func(token string) error {
		client, err := pulsarbus.NewClient(slog.New(slog.NewTextHandler(io.Discard, nil)), pulsarbus.Options{URL: infratest.PulsarURL(), Token: token,
			OperationTimeout: 5 * time.Second, ConnectionTimeout: 5 * time.Second})
		if err != nil {
			return err
		}
		defer client.Close()
		prod, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		if err != nil {
			return err
		}
		defer prod.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("x")})
		return err
	}
	if err := send(infratest.SignPulsarToken(t, key, "resultsync-relay")); err != nil {
		t.Fatalf("with a token the broker signed: %v", err)
	}
	forged := infratest.SignPulsarToken(t, []byte("another key, 32 bytes long......"), "resultsync-relay")
	err := send(forged)
	if err == nil {
		t.Fatal("a token signed by another key was accepted")
	}
	t.Logf("forged token: %v", err)
}
