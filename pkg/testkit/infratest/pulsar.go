package infratest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
)

// PulsarURL is the broker URL of the local Pulsar standalone.
func PulsarURL() string {
	return "pulsar://" + PulsarAddr()
}

// PulsarAddr is the broker's host:port, e.g. the target of a Proxy. The
// local broker answers lookups "proxy through the service URL", so a client
// given "pulsar://" + the proxy's address keeps every connection (lookups,
// producers, consumers) on the proxy.
func PulsarAddr() string {
	return "127.0.0.1:" + Env("RS_PULSAR_PORT", "16650")
}

// PulsarAdminURL is the admin REST base URL of the local Pulsar standalone.
func PulsarAdminURL() string {
	return "http://127.0.0.1:" + Env("RS_PULSAR_WEB_PORT", "18080")
}

// NewPulsarClient returns a client of the local broker, closed when the test
// ends, after checking that the broker answers its admin API.
func NewPulsarClient(t testing.TB) pulsar.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, PulsarAdminURL()+"/admin/v2/namespaces/public", nil)
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("admin API answered %s", resp.Status)
		}
	}
	if err != nil {
		Unavailable(t, "Pulsar", "pulsar.log", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := pulsarbus.NewClient(log, pulsarbus.Options{URL: PulsarURL()})
	if err != nil {
		t.Fatalf("pulsar client: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// Topic returns a topic name unique to this test in public/default.
func Topic(t testing.TB, base string) string {
	return pulsarbus.Topic("public", "default", base+"-"+Suffix())
}

// CreatePartitionedTopic creates topic (persistent://tenant/ns/name) with
// n partitions through the broker's admin API, as deploy/local/up.sh creates
// the platform's topic, and deletes it when the test ends.
func CreatePartitionedTopic(t testing.TB, topic string, n int) {
	t.Helper()
	path := PulsarAdminURL() + "/admin/v2/" + strings.Replace(topic, "://", "/", 1) + "/partitions"
	do := func(method, query, body string) (int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, path+query, strings.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	code, err := do(http.MethodPut, "", strconv.Itoa(n))
	if err != nil || code/100 != 2 {
		t.Fatalf("creating the partitioned topic %s (%d partitions): HTTP %d, %v", topic, n, code, err)
	}
	t.Cleanup(func() {
		_, _ = do(http.MethodDelete, "?force=true", "") // best effort: the broker may already be gone
	})
}

// Collector receives every message of a topic (from the earliest position),
// acknowledges it, and indexes the payloads by their event_id property.
type Collector struct {
	mu    sync.Mutex
	byID  map[string][][]byte
	total int
}

// Collect subscribes to topic and collects until the test ends. Subscribe
// before publishing, or rely on the earliest initial position.
func Collect(t testing.TB, client pulsar.Client, topic string) *Collector {
	t.Helper()
	cons, err := client.Subscribe(pulsar.ConsumerOptions{
		Topic:                       topic,
		SubscriptionName:            "collector-" + Suffix(),
		Type:                        pulsar.Shared,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
		ReceiverQueueSize:           2000,
	})
	if err != nil {
		t.Fatalf("subscribing to %s: %v", topic, err)
	}
	c := &Collector{byID: map[string][][]byte{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msg, err := cons.Receive(ctx)
			if err != nil {
				return
			}
			c.mu.Lock()
			id := msg.Properties()["event_id"]
			c.byID[id] = append(c.byID[id], msg.Payload())
			c.total++
			c.mu.Unlock()
			_ = cons.Ack(msg)
		}
	}()
	t.Cleanup(func() { cancel(); <-done; cons.Close() })
	return c
}

// Distinct is the number of distinct event ids received.
func (c *Collector) Distinct() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byID)
}

// Total is the number of messages received, duplicates included.
func (c *Collector) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Payloads returns the payloads received for eventID, in arrival order.
func (c *Collector) Payloads(eventID string) [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.byID[eventID]...)
}

// WaitDistinct waits until at least n distinct events arrived, or fails.
func (c *Collector) WaitDistinct(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for c.Distinct() < n {
		if time.Now().After(deadline) {
			t.Fatalf("received %d distinct events (%d messages) within %s, want %d", c.Distinct(), c.Total(), timeout, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
