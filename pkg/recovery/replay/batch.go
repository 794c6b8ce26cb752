package replay

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/model/shard"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
	"github.com/resultsync/resultsync/pkg/write/resultstore"
)

// MaxBatch bounds the data ids of one ReplayBatch transaction (its IN lists
// and the row locks it holds).
const MaxBatch = 1000

// Outcome is the replay of one data id of a ReplayBatch: what Replay returns
// for it. Err, when set, concerns that record alone (ErrNotFound,
// ErrPayloadMismatch, a deletion record that is no tombstone): nothing was
// written for it, while the others of its batch were replayed.
type Outcome struct {
	DataID  int64
	ShardID string
	Version int64
	EventID string
	Deleted bool
	Err     error
}

// ReplayBatch is Replay of many data ids with one transaction per owning
// shard instead of one per record: the same row locks (taken in data_id
// order, so two batches never wait on each other in a cycle), the same
// events, the same outbox rules (re-armed, left alone while PROCESSING, or
// written anew). It returns one Outcome per data id, in the order given
// (duplicates replay once and share the outcome).
//
// An error means a transaction failed and nothing of that shard's part was
// written; parts on other shards may have committed already. Replaying them
// again is harmless (idempotent), so the caller retries the whole batch.
func (r *Replayer) ReplayBatch(ctx context.Context, dataIDs []int64) ([]Outcome, error) {
	return inParts(r.m, r.dbs, dataIDs, func(db *sql.DB, shardID string, part []int64, done map[int64]Outcome) error {
		return r.replayPart(ctx, db, shardID, part, done)
	})
}

// inParts groups dataIDs by owning shard (m; dbs[i] reaches m.Shards[i]),
// sorted and distinct, in parts of at most MaxBatch, calls part for each
// (which records the outcomes of its ids in done) and returns one Outcome
// per data id in the order given. The first error of a part is returned.
func inParts(m shard.Map, dbs []*sql.DB, dataIDs []int64, part func(db *sql.DB, shardID string, ids []int64, done map[int64]Outcome) error) ([]Outcome, error) {
	if len(m.Shards) == 0 || len(dbs) != len(m.Shards) {
		return nil, fmt.Errorf("replaying a batch: %d databases for %d shards", len(dbs), len(m.Shards))
	}
	byShard := map[int][]int64{}
	for _, id := range dataIDs {
		if id <= 0 {
			return nil, fmt.Errorf("replaying a batch: data_id must be positive, got %d", id)
		}
		i := m.Owner(id)
		byShard[i] = append(byShard[i], id)
	}
	done := make(map[int64]Outcome, len(dataIDs))
	for i, ids := range byShard {
		slices.Sort(ids)
		ids = slices.Compact(ids)
		for start := 0; start < len(ids); start += MaxBatch {
			if err := part(dbs[i], m.Shards[i].ID, ids[start:min(start+MaxBatch, len(ids))], done); err != nil {
				return nil, err
			}
		}
	}
	out := make([]Outcome, len(dataIDs))
	for k, id := range dataIDs {
		out[k] = done[id]
	}
	return out, nil
}

// replayPart replays ids (sorted, distinct, all owned by shardID) in one
// transaction and records their outcomes in done.
func (r *Replayer) replayPart(ctx context.Context, db *sql.DB, shardID string, ids []int64, done map[int64]Outcome) error {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return fmt.Errorf("replaying %d records on %s: %w", len(ids), shardID, err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit

	outcomes, events, stored, err := readEvents(ctx, tx, shardID, ids, true)
	if err != nil {
		return err
	}
	now := r.clock()
	var rearm []int64
	for _, id := range ids {
		ev, ok := events[id]
		if !ok {
			continue
		}
		o := Outcome{DataID: id, ShardID: shardID, Version: ev.GetVersion(), EventID: ev.GetEventId(), Deleted: ev.GetIsDeleted()}
		row, exists := stored[ev.GetEventId()]
		switch {
		case !exists:
			// Purged after its retention: the write path's own statement
			// and encoding, the same bytes.
			q, args, err := outbox.Insert(ev, now)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return fmt.Errorf("replaying %s on %s: writing the outbox row: %w", ev.GetEventId(), shardID, err)
			}
		case row.decodeErr != nil:
			o.Err = fmt.Errorf("outbox row %d: %w: %w", row.id, ErrPayloadMismatch, row.decodeErr)
		case !proto.Equal(row.event, ev):
			o.Err = fmt.Errorf("outbox row %d: %w", row.id, ErrPayloadMismatch)
		case row.status == outbox.StatusProcessing:
			// Being delivered: its claim token is its claimant's.
		default:
			rearm = append(rearm, row.id)
		}
		if o.Err != nil {
			o.Version, o.EventID, o.Deleted = 0, "", false
		}
		outcomes[id] = o
	}
	// What rearm does for one row, for all of them.
	if err := outbox.Rearm(ctx, tx, rearm, now); err != nil {
		return fmt.Errorf("replaying %d records on %s: %w", len(ids), shardID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing the replay of %d records on %s: %w", len(ids), shardID, err)
	}
	for id, o := range outcomes {
		done[id] = o
	}
	return nil
}

// readEvents reads the current state of ids (sorted, distinct, owned by
// shardID) through tx, with lock under the write path's row locks: the
// event of each record's row, or of its deletion record once purged, and
// the outbox rows of those events' ids. A record without either, or whose
// deletion record is no tombstone, gets its failed outcome and no event.
func readEvents(ctx context.Context, tx *sql.Tx, shardID string, ids []int64, lock bool) (map[int64]Outcome, map[int64]*fitnessv1.FitnessResultChanged, map[string]outboxRow, error) {
	cur, err := readRows(ctx, tx, shardID, "fitness_result", ids, lock)
	if err != nil {
		return nil, nil, nil, err
	}
	var purged []int64
	for _, id := range ids {
		if _, ok := cur[id]; !ok {
			purged = append(purged, id)
		}
	}
	outcomes := make(map[int64]Outcome, len(ids))
	if len(purged) > 0 {
		logged, err := readRows(ctx, tx, shardID, "deletion_log", purged, lock)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, id := range purged {
			switch rec, ok := logged[id]; {
			case !ok:
				outcomes[id] = Outcome{DataID: id, ShardID: shardID, Err: fmt.Errorf("replaying %d on %s: %w", id, shardID, ErrNotFound)}
			case !rec.GetIsDeleted():
				outcomes[id] = Outcome{DataID: id, ShardID: shardID, Err: fmt.Errorf("the deletion record of %d on %s is not a tombstone", id, shardID)}
			default:
				cur[id] = rec
			}
		}
	}
	events := make(map[int64]*fitnessv1.FitnessResultChanged, len(cur))
	eventIDs := make([]string, 0, len(cur))
	for _, id := range ids {
		if rec, ok := cur[id]; ok {
			ev := resultstore.Event(rec)
			events[id] = ev
			eventIDs = append(eventIDs, ev.GetEventId())
		}
	}
	stored, err := outboxRows(ctx, tx, eventIDs, lock)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading %d records on %s: %w", len(ids), shardID, err)
	}
	return outcomes, events, stored, nil
}

// readRows reads the rows of ids from table (fitness_result or
// deletion_log), in data_id order; with lock, under the row locks the write
// path takes.
func readRows(ctx context.Context, tx *sql.Tx, shardID, table string, ids []int64, lock bool) (map[int64]*fitnessv1.FitnessResult, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := tx.QueryContext(ctx, "SELECT "+resultstore.ResultColumns+" FROM "+table+" WHERE data_id IN ("+mysqldb.Placeholders(len(ids))+
		") ORDER BY data_id"+forUpdate(lock), args...)
	if err != nil {
		return nil, fmt.Errorf("reading %d records in %s on %s: %w", len(ids), table, shardID, err)
	}
	defer rows.Close()
	out := make(map[int64]*fitnessv1.FitnessResult, len(ids))
	for rows.Next() {
		rec, err := resultstore.ScanResult(rows, shardID)
		if err != nil {
			return nil, fmt.Errorf("reading %s on %s: %w", table, shardID, err)
		}
		out[rec.GetDataId()] = rec
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading %s on %s: %w", table, shardID, err)
	}
	return out, nil
}

// forUpdate is the locking clause of a read, or nothing.
func forUpdate(lock bool) string {
	if lock {
		return " FOR UPDATE"
	}
	return ""
}

// outboxRow is an outbox row of an event id.
type outboxRow struct {
	id        int64
	status    string
	event     *fitnessv1.FitnessResultChanged
	decodeErr error
}

// outboxRows reads (with lock, locks) the outbox rows of the event ids, by
// event id, their payloads decoded.
func outboxRows(ctx context.Context, tx *sql.Tx, eventIDs []string, lock bool) (map[string]outboxRow, error) {
	stored, err := outbox.StoredByEventID(ctx, tx, eventIDs, lock)
	if err != nil {
		return nil, err
	}
	out := make(map[string]outboxRow, len(stored))
	for eventID, st := range stored {
		row := outboxRow{id: st.ID, status: st.Status}
		row.event, row.decodeErr = outbox.Decode(st.Payload)
		out[eventID] = row
	}
	return out, nil
}
