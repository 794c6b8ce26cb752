// Package replay delivers a record's authoritative state again through the
// normal event path — the owning shard's outbox, drained by the relay — with
// its existing version and its deterministic event id. It is the repair of a
// record missing from the projection, a stale projected version, and a
// deletion not applied (the tombstone, also after its row was purged: see
// Purge and the shard's deletion_log). A replay never creates a version.
package replay

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/model/shard"
	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/write/resultstore"
)

// Errors of Replay, checked with errors.Is (and marked for the RPC edge,
// pkg/platform/apierr).
var (
	// ErrNotFound: the owning shard has neither a row nor a deletion record
	// of the data_id. Nothing was written.
	ErrNotFound = apierr.NewReason(apierr.NotFound, apierr.RecordNotFound, "record not found on its shard (no row, no deletion record)")
	// ErrPayloadMismatch: the outbox row of the event id carries other
	// content than the authoritative state of that version (a defective
	// event; the repair is a controlled rebuild, not a replay). Nothing was
	// written.
	ErrPayloadMismatch = apierr.NewReason(apierr.FailedPrecondition, apierr.PayloadMismatch, "the outbox row of this event carries other content than the authoritative state")
)

// Replayer replays records on the shards of a shard map.
type Replayer struct {
	m   shard.Map
	dbs []*sql.DB
	now func() time.Time
}

// New returns a Replayer over the shards of m; dbs[i] reaches m.Shards[i].
func New(m shard.Map, dbs []*sql.DB) *Replayer {
	return &Replayer{m: m, dbs: dbs, now: time.Now}
}

func (r *Replayer) clock() time.Time { return r.now().UTC().Truncate(time.Millisecond) }

// Replay makes the relay deliver the current authoritative state of dataID
// again, and returns the owning shard, the version and event id delivered,
// and whether that state is a tombstone.
//
// In one short transaction on the owning shard (shard.Map.Owner) it reads the
// record under the row lock the write path takes (SELECT ... FOR UPDATE): a
// concurrent change either committed before, and its newer version is the one
// replayed, or waits until the replay committed and then commits its own
// version with its own outbox row. A record whose row was purged is read from
// its deletion record (locked the same way) and replayed as the tombstone it
// was. The event is resultstore.Event of that state — the bytes the write
// path stored for the version, its commit time the row's update_time. Then:
//
//   - the outbox row of the event id exists and is being delivered
//     (PROCESSING): it is left alone; its claimant completes it, or its lease
//     expires and another relay reclaims it;
//   - it exists otherwise (NEW, SENT, FAILED, PARKED): it is re-armed — NEW,
//     due now, attempts 0, no claim token — so the next claim publishes it;
//   - it was purged (SENT rows are purged after their retention): a new NEW
//     row is written with the same event id and payload.
//
// Replaying twice re-arms the same row (idempotent). A data_id the shard has
// no trace of is ErrNotFound; an outbox row whose payload disagrees with the
// authoritative state is ErrPayloadMismatch; in both cases nothing is
// written.
func (r *Replayer) Replay(ctx context.Context, dataID int64) (shardID string, version int64, eventID string, deleted bool, err error) {
	if len(r.m.Shards) == 0 || len(r.dbs) != len(r.m.Shards) {
		return "", 0, "", false, fmt.Errorf("replaying %d: %d databases for %d shards", dataID, len(r.dbs), len(r.m.Shards))
	}
	if dataID <= 0 {
		return "", 0, "", false, fmt.Errorf("replaying %d: data_id must be positive", dataID)
	}
	i := r.m.Owner(dataID)
	shardID = r.m.Shards[i].ID
	ev, err := r.replay(ctx, r.dbs[i], shardID, dataID)
	if err != nil {
		return shardID, 0, "", false, err
	}
	return shardID, ev.GetVersion(), ev.GetEventId(), ev.GetIsDeleted(), nil
}

func (r *Replayer) replay(ctx context.Context, db *sql.DB, shardID string, dataID int64) (*fitnessv1.FitnessResultChanged, error) {
	// READ COMMITTED: a locking read of an absent row takes no gap lock, so
	// a replay of a purged record never blocks inserts next to it.
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return nil, fmt.Errorf("replaying %d on %s: %w", dataID, shardID, err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit

	cur, err := resultstore.LockResult(ctx, tx, shardID, dataID)
	if errors.Is(err, resultstore.ErrNotFound) {
		cur, err = lockDeletionRecord(ctx, tx, shardID, dataID)
	}
	if err != nil {
		return nil, err
	}
	ev := resultstore.Event(cur)
	if err := rearm(ctx, tx, ev, r.clock()); err != nil {
		return nil, fmt.Errorf("replaying %s on %s: %w", ev.GetEventId(), shardID, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("committing replay of %s on %s: %w", ev.GetEventId(), shardID, err)
	}
	return ev, nil
}

// lockDeletionRecord reads the deletion record of a purged tombstone under a
// row lock (so concurrent replays of it serialize like those of a live row).
func lockDeletionRecord(ctx context.Context, tx *sql.Tx, shardID string, dataID int64) (*fitnessv1.FitnessResult, error) {
	cur, err := resultstore.ScanResult(tx.QueryRowContext(ctx,
		"SELECT "+resultstore.ResultColumns+" FROM deletion_log WHERE data_id = ? FOR UPDATE", dataID), shardID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("replaying %d on %s: %w", dataID, shardID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the deletion record of %d on %s: %w", dataID, shardID, err)
	}
	if !cur.GetIsDeleted() {
		return nil, fmt.Errorf("the deletion record of %d on %s is not a tombstone", dataID, shardID)
	}
	return cur, nil
}

// rearm makes the outbox row of ev deliverable again, or writes it anew.
func rearm(ctx context.Context, tx *sql.Tx, ev *fitnessv1.FitnessResultChanged, now time.Time) error {
	rows, err := outbox.StoredByEventID(ctx, tx, []string{ev.GetEventId()}, true)
	if err != nil {
		return err
	}
	row, ok := rows[ev.GetEventId()]
	if !ok {
		// The write path's own statement and encoding: the same bytes.
		q, args, err := outbox.Insert(ev, now)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("writing the outbox row: %w", err)
		}
		return nil
	}
	id, status := row.ID, row.Status
	stored, err := outbox.Decode(row.Payload)
	if err != nil {
		return fmt.Errorf("outbox row %d: %w: %w", id, ErrPayloadMismatch, err)
	}
	if !proto.Equal(stored, ev) {
		return fmt.Errorf("outbox row %d: %w", id, ErrPayloadMismatch)
	}
	if status == outbox.StatusProcessing {
		return nil // being delivered: its claim token is its claimant's
	}
	return outbox.Rearm(ctx, tx, []int64{id}, now)
}
