// Package audit records every mutating administrative call — who, what,
// which scope, why, and how it ended — in the control database's audit_log.
package audit

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"time"
)

// Entry is one audited action.
type Entry struct {
	Caller string // authenticated subject
	Action string // e.g. "outbox.replay_parked"
	Scope  string // what it touched, e.g. "shard=shard-0 ids=[1 2]"
	Reason string // the caller's stated reason
}

// Log writes audit entries.
type Log struct {
	db *sql.DB
}

// New returns a Log over the control database.
func New(db *sql.DB) *Log { return &Log{db: db} }

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Begin records e with outcome "started" before the action runs, so that an
// action is audited even if it fails half-way, and returns its audit id.
func (l *Log) Begin(ctx context.Context, e Entry) (string, error) {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	if _, err := l.db.ExecContext(ctx, `INSERT INTO audit_log (audit_id, caller, action, scope, reason, outcome, create_time)
		VALUES (?, ?, ?, ?, ?, 'started', ?)`, id, clip(e.Caller, 128), clip(e.Action, 64), clip(e.Scope, 512), clip(e.Reason, 1024),
		time.Now().UTC()); err != nil {
		return "", fmt.Errorf("writing audit entry for %s: %w", e.Action, err)
	}
	return id, nil
}

// Finish records the outcome of the action id.
func (l *Log) Finish(ctx context.Context, id, outcome string) error {
	if _, err := l.db.ExecContext(ctx, "UPDATE audit_log SET outcome = ? WHERE audit_id = ?", clip(outcome, 1024), id); err != nil {
		return fmt.Errorf("recording outcome of audit entry %s: %w", id, err)
	}
	return nil
}

// Record is one entry of the log as read back.
type Record struct {
	ID                                     string
	Caller, Action, Scope, Reason, Outcome string
	Time                                   time.Time
}

// List returns the newest entries of action (all actions when empty).
func (l *Log) List(ctx context.Context, action string, limit int) ([]Record, error) {
	q := "SELECT audit_id, caller, action, scope, reason, outcome, create_time FROM audit_log"
	var args []any
	if action != "" {
		q += " WHERE action = ?"
		args = append(args, action)
	}
	q += " ORDER BY id DESC LIMIT ?"
	args = append(args, limit)
	rows, err := l.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("reading audit log: %w", err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		if err := rows.Scan(&r.ID, &r.Caller, &r.Action, &r.Scope, &r.Reason, &r.Outcome, &r.Time); err != nil {
			return nil, fmt.Errorf("reading audit log: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Purge removes at most batch entries recorded before cutoff, oldest first,
// by a range on the index of audit_log.create_time (control migration
// 0009), and returns how many it removed. The audit log is kept the longest
// of the control tables (the repair server's --audit-retention).
func (l *Log) Purge(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	res, err := l.db.ExecContext(ctx, "DELETE FROM audit_log WHERE create_time < ? ORDER BY create_time LIMIT ?", cutoff.UTC(), batch)
	if err != nil {
		return 0, fmt.Errorf("purging audit entries older than %s: %w", cutoff.UTC().Format(time.RFC3339), err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("purging audit entries: %w", err)
	}
	return n, nil
}
