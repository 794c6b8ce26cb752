package replay_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/recovery/replay"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// TestRelayPublishesReplayedEvents: the rows a replay writes or re-arms are
// published by the real relay to the real broker, byte for byte the events
// the write path committed: a record whose outbox rows were delivered and
// purged (version 4), a tombstone whose row was purged too (version 3, from
// its deletion record), and a SENT row re-armed (version 2) — on both shards.
func TestRelayPublishesReplayedEvents(t *testing.T) {
	e := newEnv(t)
	want, sentRow := deliveredScenario(t, e)
	const missing, purged, sent = scenarioMissing, scenarioPurged, scenarioSent
	for _, id := range []int64{missing, purged, sent} {
		e.replay(t, id)
	}
	if r := e.row(t, sent, sentRow.EventID); r.ID != sentRow.ID || r.Status != outbox.StatusNew {
		t.Fatalf("the SENT row was not re-armed in place: %+v", r)
	}

	client := infratest.NewPulsarClient(t)
	topic := infratest.Topic(t, "replay")
	col := infratest.Collect(t, client, topic)
	pub, err := relay.NewPulsarPublisher(client, topic, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	cfg := relay.Config{BatchSize: 100, Lease: 10 * time.Second, PublishTimeout: 5 * time.Second, PollInterval: 20 * time.Millisecond,
		MaxAttempts: 10, Backoff: outbox.Backoff{Base: 50 * time.Millisecond, Max: time.Second}}
	rl, err := relay.New(slog.New(slog.NewTextHandler(io.Discard, nil)), cfg, pub, []relay.Store{e.repo[0], e.repo[1]}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = rl.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	col.WaitDistinct(t, len(want), 30*time.Second)
	for ev, payload := range want {
		got := col.Payloads(ev)
		if len(got) == 0 || !bytes.Equal(got[0], payload) {
			t.Errorf("%s: published %d messages, first %x; want the committed bytes %x", ev, len(got), got, payload)
		}
	}
	if col.Distinct() != len(want) {
		t.Errorf("published %d distinct events, want only the %d replayed", col.Distinct(), len(want))
	}
}

// The records of deliveredScenario.
const scenarioMissing, scenarioPurged, scenarioSent = 900001, 900002, 900010

// deliveredScenario writes the records a replay must deliver again, all
// delivered once already: scenarioMissing at version 4 with its outbox rows
// purged, scenarioPurged deleted at version 3 and purged from its table
// (only its deletion record is left) and scenarioSent at version 2, its row
// still SENT. It returns the committed bytes by event id, and the SENT row.
func deliveredScenario(t *testing.T, e *env) (map[string][]byte, outbox.Row) {
	t.Helper()
	const missing, purged, sent = scenarioMissing, scenarioPurged, scenarioSent
	e.record(t, missing, "2.21")
	for v, res := range []string{"2.31", "2.41", "2.51"} {
		e.correct(t, missing, int64(v+1), res)
	}
	e.record(t, purged, "1.75")
	e.correct(t, purged, 1, "1.85")
	e.delete(t, purged, 2)
	want := map[string][]byte{}
	for id, v := range map[int64]int64{missing: 4, purged: 3} {
		ev := canonical.EventID(id, v)
		want[ev] = e.row(t, id, ev).Payload
	}
	e.deliverAll(t)
	e.purgeSent(t)
	if n, err := replay.Purge(t.Context(), e.db(purged), time.Now().Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("Purge = %d, %v", n, err)
	}
	e.record(t, sent, "1.5")
	e.correct(t, sent, 1, "1.6")
	sentRow := e.row(t, sent, canonical.EventID(sent, 2))
	want[sentRow.EventID] = sentRow.Payload
	e.deliverAll(t)
	return want, sentRow
}
