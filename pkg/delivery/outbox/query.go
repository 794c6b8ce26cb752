package outbox

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
)

// The statements other packages run on a shard's outbox_event table (the
// replay, the lag watcher, the reconciliation's in-flight evidence): the
// table's SQL stays here, with the relay's (Repo) and the write path's
// (Insert).

// Querier runs statements: a *sql.DB, or a *sql.Tx for statements that
// belong to a caller's transaction.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Rearm makes the rows ids deliverable again as of now: what Claim selects
// (NEW, due now) and what a fresh row holds (no claim, no attempts, not
// sent); last_error is kept, as Repo.ReplayParked keeps it. A PROCESSING row
// is left alone: its claim token is its claimant's, and it is being
// delivered. Idempotent.
func Rearm(ctx context.Context, q Querier, ids []int64, now time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	args := make([]any, 0, len(ids)+1)
	args = append(args, now)
	for _, id := range ids {
		args = append(args, id)
	}
	if _, err := q.ExecContext(ctx, "UPDATE outbox_event SET status = 'NEW', attempts = 0, due_time = ?, claim_token = NULL, sent_time = NULL "+
		"WHERE id IN ("+mysqldb.Placeholders(len(ids))+") AND status <> 'PROCESSING'", args...); err != nil {
		return fmt.Errorf("re-arming %d outbox rows: %w", len(ids), err)
	}
	return nil
}

// Stored is an outbox row as a replay compares it with the record's event.
type Stored struct {
	ID      int64
	Status  string
	Payload []byte // the encoded event (Decode)
}

// StoredByEventID reads the rows of eventIDs by event id (an event id has
// at most one row); with lock, under exclusive row locks taken in event-id
// order (FOR UPDATE), so concurrent replays serialize without deadlock.
func StoredByEventID(ctx context.Context, q Querier, eventIDs []string, lock bool) (map[string]Stored, error) {
	out := make(map[string]Stored, len(eventIDs))
	if len(eventIDs) == 0 {
		return out, nil
	}
	query := "SELECT id, event_id, status, payload FROM outbox_event WHERE event_id IN (" + mysqldb.Placeholders(len(eventIDs)) + ") ORDER BY event_id"
	if lock {
		query += " FOR UPDATE"
	}
	rows, err := q.QueryContext(ctx, query, anys(eventIDs)...)
	if err != nil {
		return nil, fmt.Errorf("reading the outbox rows: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var s Stored
		var eventID string
		if err := rows.Scan(&s.ID, &eventID, &s.Status, &s.Payload); err != nil {
			return nil, fmt.Errorf("reading the outbox rows: %w", err)
		}
		out[eventID] = s
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the outbox rows: %w", err)
	}
	return out, nil
}

// Delivery is where an event stands on its way out of the shard.
type Delivery struct {
	DataID  int64
	Status  string    // StatusNew ... StatusParked
	Created time.Time // the commit time of the event's write
}

// DeliveriesByEventID reads the status and commit time of the rows of
// eventIDs (rows of events the shard does not hold are absent), by the
// unique event-id index, without locks.
func DeliveriesByEventID(ctx context.Context, q Querier, eventIDs []string) ([]Delivery, error) {
	if len(eventIDs) == 0 {
		return nil, nil
	}
	rows, err := q.QueryContext(ctx, "SELECT data_id, status, create_time FROM outbox_event WHERE event_id IN ("+
		mysqldb.Placeholders(len(eventIDs))+")", anys(eventIDs)...)
	if err != nil {
		return nil, fmt.Errorf("reading outbox deliveries: %w", err)
	}
	defer rows.Close()
	var out []Delivery
	for rows.Next() {
		var d Delivery
		if err := rows.Scan(&d.DataID, &d.Status, &d.Created); err != nil {
			return nil, fmt.Errorf("reading outbox deliveries: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading outbox deliveries: %w", err)
	}
	return out, nil
}

// NewestCommit returns the commit time of the shard's newest outbox row
// (zero when the outbox is empty): the boundary of a scan starting now.
func NewestCommit(ctx context.Context, q Querier) (time.Time, error) {
	var t sql.NullTime
	if err := q.QueryRowContext(ctx, "SELECT MAX(create_time) FROM outbox_event").Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("reading the newest outbox commit: %w", err)
	}
	if !t.Valid {
		return time.Time{}, nil
	}
	return t.Time.UTC(), nil
}

// Pending returns the commit time of the oldest of the rows committed after
// after (zero when none) and how many there are, counting at most limit (a
// walk of the create_time index, in commit order).
func Pending(ctx context.Context, q Querier, after time.Time, limit int) (oldest time.Time, n int64, err error) {
	var t sql.NullTime
	if err := q.QueryRowContext(ctx, `SELECT MIN(create_time), COUNT(*) FROM
		(SELECT create_time FROM outbox_event WHERE create_time > ? ORDER BY create_time LIMIT ?) pending`,
		after, limit).Scan(&t, &n); err != nil {
		return time.Time{}, 0, fmt.Errorf("reading the outbox after %s: %w", after.Format(time.RFC3339Nano), err)
	}
	if t.Valid {
		oldest = t.Time.UTC()
	}
	return oldest, n, nil
}

// CommitsAfter calls each, in commit order, with the rows committed after
// after (at most limit), until each returns false; it returns how many rows
// it passed to each.
func CommitsAfter(ctx context.Context, q Querier, after time.Time, limit int, each func(Delivery) bool) (int, error) {
	rows, err := q.QueryContext(ctx, `SELECT create_time, data_id, status FROM outbox_event
		WHERE create_time > ? ORDER BY create_time LIMIT ?`, after, limit)
	if err != nil {
		return 0, fmt.Errorf("reading the outbox after %s: %w", after.Format(time.RFC3339Nano), err)
	}
	defer rows.Close()
	read := 0
	for rows.Next() {
		var d Delivery
		if err := rows.Scan(&d.Created, &d.DataID, &d.Status); err != nil {
			return read, fmt.Errorf("reading the outbox: %w", err)
		}
		d.Created = d.Created.UTC()
		read++
		if !each(d) {
			return read, rows.Close()
		}
	}
	if err := rows.Err(); err != nil {
		return read, fmt.Errorf("reading the outbox: %w", err)
	}
	return read, nil
}

// anys returns ss as statement arguments.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// OldestUnsentCommit returns the commit time of the shard's oldest event a
// relay is still to send (NEW, PROCESSING or FAILED; zero when none). A
// PARKED event is left out: nothing sends it until an operator replays it.
// Each status is probed by its own index range (status, due_time).
func OldestUnsentCommit(ctx context.Context, q Querier) (time.Time, error) {
	var oldest time.Time
	for _, st := range []string{StatusNew, StatusProcessing, StatusFailed} {
		var t sql.NullTime
		if err := q.QueryRowContext(ctx, "SELECT MIN(create_time) FROM outbox_event WHERE status = ?", st).Scan(&t); err != nil {
			return time.Time{}, fmt.Errorf("reading the oldest %s outbox commit: %w", st, err)
		}
		if t.Valid && (oldest.IsZero() || t.Time.Before(oldest)) {
			oldest = t.Time.UTC()
		}
	}
	return oldest, nil
}
