package migratesvc

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/testkit/consumersvctest"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// deleteTopic removes a partitioned topic when the test ends.
func deleteTopic(t *testing.T, topic string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		u := infratest.PulsarAdminURL() + "/admin/v2/" + strings.Replace(topic, "://", "/", 1) + "/partitions?force=true"
		req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, u, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
}

// publish sends n events keyed by data_id, as the relay does, and returns
// their event ids.
func publish(t *testing.T, client pulsar.Client, topic string, n int) []string {
	t.Helper()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var ids []string
	for i := range n {
		id := int64(930001 + i)
		ev := &fitnessv1.FitnessResultChanged{EventId: canonical.EventID(id, 1), DataId: id, DetectId: 10001, UserId: 4, ProjectId: 3,
			SchoolId: 7, Grade: 5, Version: 1, Result: "2.31", Unit: "m", SchemaVersion: 1,
			SourceCommitTime: timestamppb.Now(), ShardId: "shard-0"}
		b, err := proto.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Key: fmt.Sprint(id), Payload: b,
			Properties: map[string]string{"event_id": ev.GetEventId()}}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.GetEventId())
	}
	return ids
}

// The subscription exists before the first publish: migrate creates the
// partitioned topic, its retention and the consumer's subscription; events
// published before any consumer ever ran are all delivered when the
// consumer starts (count and ids); before it starts, the subscription's
// backlog holds every one of them (without the migration there is no
// subscription to hold them). The retention is read back from the admin API; a second migration changes
// nothing (idempotent).
func TestSubscriptionExistsBeforeFirstPublish(t *testing.T) {
	if infratest.ClickHouseIsInProcess() {
		t.Skip("the consumer server reaches ClickHouse over the network; runs on the ClickHouse server pass")
	}
	ctx := context.Background()
	ch := infratest.NewClickHouseDatabase(t, true)
	client := infratest.NewPulsarClient(t)
	topic := infratest.Topic(t, "migrate-sub")
	deleteTopic(t, topic)
	const sub = "clickhouse-projection"
	cfg := Config{PulsarAdminURL: infratest.PulsarAdminURL(), Topic: topic, TopicPartitions: 4, Subscription: sub,
		RetentionMinutes: 90, RetentionMB: 64}
	for range 2 {
		if err := migratePulsar(ctx, quiet, cfg); err != nil {
			t.Fatal(err)
		}
	}
	admin, err := pulsarbus.NewAdmin(infratest.PulsarAdminURL(), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := admin.Partitions(ctx, topic); err != nil || n != 4 {
		t.Fatalf("partitions of %s = %d, %v; want 4", topic, n, err)
	}
	if subs, err := admin.Subscriptions(ctx, topic); err != nil || !slices.Contains(subs, sub) {
		t.Fatalf("subscriptions of %s = %v, %v; want %s", topic, subs, err, sub)
	}
	r, ok, err := admin.TopicRetention(ctx, topic)
	if err != nil || !ok || r != (pulsarbus.Retention{Minutes: 90, SizeMB: 64}) {
		t.Fatalf("retention of %s = %+v (set: %v), %v; want 90 minutes, 64 MiB", topic, r, ok, err)
	}

	const n = 300
	want := publish(t, client, topic, n)

	// The subscription holds every event before any consumer connected.
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := admin.Backlog(ctx, topic, sub)
		if err == nil && b == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backlog of %s = %d, %v; want %d", sub, b, err, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The first consumer ever (the consumer server, on the subscription
	// migrate made): every event arrives.
	cc := consumersvctest.Config(topic, ch.Name, 200*time.Millisecond)
	cc.Subscription = sub
	consumersvctest.Start(t, cc)
	var got []string
	deadline = time.Now().Add(60 * time.Second)
	for {
		got = got[:0]
		rows, err := ch.Conn.Query(ctx, "SELECT DISTINCT event_id FROM fitness_result_versions ORDER BY event_id")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			got = append(got, id)
		}
		rows.Close()
		if len(got) >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events in ClickHouse (-published +stored):\n%s", diff)
	}
	t.Logf("%d events published before the first consumer ran: %d stored, ids identical", n, len(got))
}
