package replay_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/recovery/replay"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// TestDirectReplayPublishesTheCommittedEvents: the replay through the
// broker publishes, to the real broker, byte for byte the events the write
// path committed — a record whose outbox rows were delivered and purged
// (version 4), a tombstone purged from its table (version 3, from its
// deletion record) and a record whose row is still SENT (version 2) — and
// writes nothing to the outbox: no row added, none re-armed. A record
// whose outbox row carries other content is refused (ErrPayloadMismatch),
// one the shard has no trace of is ErrNotFound; neither is published.
func TestDirectReplayPublishesTheCommittedEvents(t *testing.T) {
	e := newEnv(t)
	const missing, purged, sent, defective, unknown = scenarioMissing, scenarioPurged, scenarioSent, 900011, 900099
	want, _ := deliveredScenario(t, e)
	e.record(t, defective, "3.0")
	e.deliverAll(t)
	bad := decode(t, e.row(t, defective, canonical.EventID(defective, 1)).Payload)
	bad.SchoolId = 8 // a mapping defect: same id and version, other content
	badPayload, err := proto.MarshalOptions{Deterministic: true}.Marshal(bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db(defective).ExecContext(t.Context(), "UPDATE outbox_event SET payload = ? WHERE event_id = ?",
		badPayload, canonical.EventID(defective, 1)); err != nil {
		t.Fatal(err)
	}
	before := map[int64][]outbox.Row{}
	for _, id := range []int64{missing, purged, sent, defective} {
		before[id] = e.rows(t, id)
	}

	client := infratest.NewPulsarClient(t)
	topic := infratest.Topic(t, "direct-replay")
	col := infratest.Collect(t, client, topic)
	pub, err := relay.NewPulsarPublisher(client, topic, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	d := replay.NewDirect(e.m, []*sql.DB{e.dbs[0].DB, e.dbs[1].DB}, pub, 10*time.Second)
	ids := []int64{unknown, sent, defective, purged, missing}
	outs, err := d.ReplayBatch(t.Context(), ids)
	if err != nil {
		t.Fatalf("ReplayBatch: %v", err)
	}
	for i, o := range outs {
		if o.DataID != ids[i] {
			t.Fatalf("outcome %d is of %d, want %d (the order given)", i, o.DataID, ids[i])
		}
		wantV := map[int64]int64{missing: 4, purged: 3, sent: 2}[o.DataID]
		switch o.DataID {
		case unknown:
			if !errors.Is(o.Err, replay.ErrNotFound) {
				t.Errorf("unknown record: %v; want ErrNotFound", o.Err)
			}
		case defective:
			if !errors.Is(o.Err, replay.ErrPayloadMismatch) {
				t.Errorf("defective outbox row: %v; want ErrPayloadMismatch", o.Err)
			}
		default:
			if o.Err != nil || o.Version != wantV || o.EventID != canonical.EventID(o.DataID, wantV) || o.Deleted != (o.DataID == purged) ||
				o.ShardID != e.m.Shards[e.owner(o.DataID)].ID {
				t.Errorf("outcome of %d = %+v; want version %d on its shard", o.DataID, o, wantV)
			}
		}
	}
	col.WaitDistinct(t, len(want), 30*time.Second)
	for ev, payload := range want {
		got := col.Payloads(ev)
		if len(got) != 1 || !bytes.Equal(got[0], payload) {
			t.Errorf("%s: published %d messages %x; want once the committed bytes %x", ev, len(got), got, payload)
		}
	}
	// Nothing else is published: wait a little for a stray message.
	time.Sleep(500 * time.Millisecond)
	if col.Distinct() != len(want) {
		t.Errorf("published %d distinct events, want only the %d replayed", col.Distinct(), len(want))
	}
	for id, rows := range before {
		if after := e.rows(t, id); !sameRows(rows, after) {
			t.Errorf("outbox rows of %d changed: before %+v, after %+v", id, rows, after)
		}
	}
	// Again: the same events once more (a resumed repair), still no outbox write.
	if _, err := d.ReplayBatch(t.Context(), ids); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); col.Total() < 2*len(want); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d messages after two batches, want %d", col.Total(), 2*len(want))
		}
	}
}

func sameRows(a, b []outbox.Row) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Status != b[i].Status || a[i].Attempts != b[i].Attempts || !bytes.Equal(a[i].Payload, b[i].Payload) {
			return false
		}
	}
	return true
}

// refusingPublisher is a broker that acknowledges nothing.
type refusingPublisher struct{ calls int }

func (p *refusingPublisher) Publish(_ context.Context, msgs []relay.Message) []error {
	p.calls++
	errs := make([]error, len(msgs))
	for i := range errs {
		errs[i] = relay.ErrNoAck
	}
	return errs
}

// TestDirectReplayWithoutAckFailsEachRecord: a broker that acknowledges
// nothing fails every record of the batch on its own (the executor retries
// them), with the broker's reason; none is reported as replayed.
func TestDirectReplayWithoutAckFailsEachRecord(t *testing.T) {
	e := newEnv(t)
	e.record(t, 900001, "2.21")
	e.record(t, 900002, "2.22")
	pub := &refusingPublisher{}
	d := replay.NewDirect(e.m, []*sql.DB{e.dbs[0].DB, e.dbs[1].DB}, pub, 10*time.Second)
	outs, err := d.ReplayBatch(t.Context(), []int64{900001, 900002})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range outs {
		if !errors.Is(o.Err, relay.ErrNoAck) || o.Version != 0 || o.EventID != "" {
			t.Errorf("outcome of %d = %+v; want the broker's ErrNoAck and no version", o.DataID, o)
		}
	}
	if pub.calls == 0 {
		t.Fatal("nothing was published")
	}
}
