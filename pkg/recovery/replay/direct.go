package replay

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
	"github.com/resultsync/resultsync/pkg/model/shard"
)

// Publisher sends events to the broker topic the relay publishes to and
// reports, per message, nil once the broker acknowledged it
// (relay.PulsarPublisher).
type Publisher interface {
	Publish(ctx context.Context, msgs []relay.Message) []error
}

// Direct replays through the broker instead of the outbox: it reads a
// record's authoritative state on its owning shard and publishes the event
// of that state — the bytes, key and properties the relay would publish for
// its outbox row — to the relay's topic itself, waiting for the broker's
// acknowledgment. The consumer, its transformation and its insertion are the
// live path's; only the outbox round trip (re-arm, claim, SENT: three row
// writes per record on the shard) is skipped, so a large repair costs the
// shards one non-locking read per batch.
//
// It keeps Replay's promises: the version and event id are the record's
// existing ones (a replay never creates a version); a purged record is
// replayed as the tombstone its deletion record holds; an outbox row of the
// event id whose payload disagrees with the authoritative state is
// ErrPayloadMismatch and nothing is published for that record.
//
// No row lock is needed: the read is one committed state of the record. A
// change committed after the read has its own outbox row, which the relay
// delivers, and its higher version outranks the replayed one in the
// projection whatever the order of arrival; a change committed before the
// read is the version replayed. Publishing again (a retry, a resumed repair)
// delivers the same event id at the same version: a duplicate the
// projection folds.
type Direct struct {
	m       shard.Map
	dbs     []*sql.DB
	pub     Publisher
	timeout time.Duration
}

// NewDirect returns a Direct over the shards of m (dbs[i] reaches
// m.Shards[i]) publishing through pub; each batch waits at most timeout for
// the broker's acknowledgments (a record without one fails alone, with
// relay.ErrNoAck, and is retried by the caller).
func NewDirect(m shard.Map, dbs []*sql.DB, pub Publisher, timeout time.Duration) *Direct {
	return &Direct{m: m, dbs: dbs, pub: pub, timeout: timeout}
}

// Replay is ReplayBatch of one record.
func (d *Direct) Replay(ctx context.Context, dataID int64) (shardID string, version int64, eventID string, deleted bool, err error) {
	outs, err := d.ReplayBatch(ctx, []int64{dataID})
	if err != nil {
		return "", 0, "", false, err
	}
	o := outs[0]
	return o.ShardID, o.Version, o.EventID, o.Deleted, o.Err
}

// ReplayBatch reads the records of dataIDs on their owning shards (one
// non-locking read per shard and MaxBatch ids) and publishes their events,
// returning one Outcome per data id in the order given. An outcome's Err
// concerns that record alone (not found, payload mismatch, no broker
// acknowledgment); the error, a shard that could not be read (nothing of
// that part was published).
func (d *Direct) ReplayBatch(ctx context.Context, dataIDs []int64) ([]Outcome, error) {
	return inParts(d.m, d.dbs, dataIDs, func(db *sql.DB, shardID string, part []int64, done map[int64]Outcome) error {
		return d.publishPart(ctx, db, shardID, part, done)
	})
}

// publishPart reads ids (sorted, distinct, all owned by shardID), publishes
// the events of those it could read and records every outcome in done.
func (d *Direct) publishPart(ctx context.Context, db *sql.DB, shardID string, ids []int64, done map[int64]Outcome) error {
	outcomes, events, err := readStates(ctx, db, shardID, ids)
	if err != nil {
		return err
	}
	var msgs []relay.Message
	var sent []int64
	for _, id := range ids {
		ev, ok := events[id]
		if !ok {
			continue
		}
		payload, err := proto.MarshalOptions{Deterministic: true}.Marshal(ev)
		if err != nil {
			o := outcomes[id]
			o.Err = fmt.Errorf("encoding event %s: %w", ev.GetEventId(), err)
			o.Version, o.EventID, o.Deleted = 0, "", false
			outcomes[id] = o
			continue
		}
		msgs = append(msgs, relay.Message{Key: strconv.FormatInt(id, 10), Payload: payload, EventID: ev.GetEventId(),
			ShardID: shardID, CommitTime: ev.GetSourceCommitTime().AsTime()})
		sent = append(sent, id)
	}
	if len(msgs) > 0 {
		pctx, cancel := context.WithTimeout(ctx, d.timeout)
		errs := d.pub.Publish(pctx, msgs)
		cancel()
		for k, id := range sent {
			if errs[k] == nil {
				continue
			}
			o := outcomes[id]
			o.Err = fmt.Errorf("publishing %s: %w", msgs[k].EventID, errs[k])
			o.Version, o.EventID, o.Deleted = 0, "", false
			outcomes[id] = o
		}
	}
	for id, o := range outcomes {
		done[id] = o
	}
	return nil
}

// readStates reads the current state of ids on one shard without locks: the
// row, or the deletion record of a purged tombstone, checked against the
// outbox row of its event id when one exists. It returns every id's outcome
// and the events of those to deliver.
func readStates(ctx context.Context, db *sql.DB, shardID string, ids []int64) (map[int64]Outcome, map[int64]*fitnessv1.FitnessResultChanged, error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted, ReadOnly: true})
	if err != nil {
		return nil, nil, fmt.Errorf("reading %d records on %s: %w", len(ids), shardID, err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only

	outcomes, events, stored, err := readEvents(ctx, tx, shardID, ids, false)
	if err != nil {
		return nil, nil, err
	}
	for id, ev := range events {
		o := Outcome{DataID: id, ShardID: shardID, Version: ev.GetVersion(), EventID: ev.GetEventId(), Deleted: ev.GetIsDeleted()}
		if row, ok := stored[ev.GetEventId()]; ok {
			switch {
			case row.decodeErr != nil:
				o.Err = fmt.Errorf("outbox row %d: %w: %w", row.id, ErrPayloadMismatch, row.decodeErr)
			case !proto.Equal(row.event, ev):
				o.Err = fmt.Errorf("outbox row %d: %w", row.id, ErrPayloadMismatch)
			}
		}
		if o.Err != nil {
			o.Version, o.EventID, o.Deleted = 0, "", false
			delete(events, id)
		}
		outcomes[id] = o
	}
	return outcomes, events, nil
}
