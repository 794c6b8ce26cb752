package repair

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// PurgeRepairs removes ended repairs whose end is before cutoff, with what
// belongs to them only — their items, progress slots and transitions, and
// their request's idempotency row once no repair of the request is left —
// removing at most batch rows in all (a repair and its request row go
// together: a batch of 1 may remove both), oldest repair first, and returns
// how many of each table.
//
// A repair is kept, whatever its age, while it has not ended (PLANNING,
// AWAITING_APPROVAL, EXECUTING, AWAITING_VERIFICATION: end_time is NULL
// until VERIFIED, FAILED or CANCELLED). A repair that carries a controlled
// rebuild is kept for good with its rebuild: the rebuilds of a campaign hold
// the epochs a later rebuild must exceed (Store.MaxRebuildEpoch). The run a
// repair names is kept as long as the repair (reconcile.RunStore.PurgeRuns).
//
// The candidates are read from the index on repair.end_time (control
// migration 0009); the items by the primary key (repair_id, seq), the
// transitions by idx_subject, the repair row last (so a purge stopped
// half-way leaves an ended repair with fewer items, which the next call
// finishes, never items without their repair).
func (s *Store) PurgeRepairs(ctx context.Context, cutoff time.Time, batch int) (map[string]int64, error) {
	removed := map[string]int64{"repair": 0, "repair_item": 0, "repair_progress": 0, "repair_transition": 0, "repair_request": 0}
	if batch < 1 {
		return removed, errors.New("purging repairs: batch must be at least 1")
	}
	cands, err := s.purgeCandidates(ctx, cutoff, batch)
	if err != nil {
		return removed, err
	}
	budget := int64(batch)
	// del runs one bounded DELETE and charges it to table; done is false
	// when the budget ran out (the rest at the next call).
	del := func(table, q string, args ...any) (done bool, err error) {
		res, err := s.db.ExecContext(ctx, q+" LIMIT ?", append(args, budget)...)
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return false, err
		}
		removed[table] += n
		budget -= n
		return budget > 0, nil
	}
	for _, c := range cands {
		if budget <= 0 {
			break
		}
		for _, step := range []struct{ table, q string }{
			{"repair_item", "DELETE FROM repair_item WHERE repair_id = ? ORDER BY seq"},
			{"repair_progress", "DELETE FROM repair_progress WHERE repair_id = ? ORDER BY slot"},
			{"repair_transition", "DELETE FROM repair_transition WHERE subject_id = ? ORDER BY id"},
		} {
			done, err := del(step.table, step.q, c.id)
			if err != nil {
				return removed, fmt.Errorf("purging %s of repair %s: %w", step.table, c.id, err)
			}
			if !done {
				return removed, nil
			}
		}
		if budget < 2 && budget < int64(batch) {
			return removed, nil // the repair and its request row at the next call
		}
		n, err := s.purgeRepairRow(ctx, c.id, c.request, removed)
		if err != nil {
			return removed, err
		}
		budget -= n
	}
	return removed, nil
}

// purgeRepairRow removes the ended repair id and, when no other repair of
// its request is left, the request's idempotency row, in one transaction
// (so no request row outlives its last repair).
func (s *Store) purgeRepairRow(ctx context.Context, id, request string, removed map[string]int64) (int64, error) {
	var nRepair, nRequest int64
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM repair WHERE repair_id = ? AND state IN (?, ?, ?)", id, StateVerified, StateFailed, StateCancelled)
		if err != nil {
			return fmt.Errorf("purging repair %s: %w", id, err)
		}
		if nRepair, err = res.RowsAffected(); err != nil {
			return fmt.Errorf("purging repair %s: %w", id, err)
		}
		res, err = tx.ExecContext(ctx, "DELETE FROM repair_request WHERE request_id = ? AND NOT EXISTS (SELECT 1 FROM repair WHERE request_id = ?)", request, request)
		if err != nil {
			return fmt.Errorf("purging request %s of repair %s: %w", request, id, err)
		}
		if nRequest, err = res.RowsAffected(); err != nil {
			return fmt.Errorf("purging request %s of repair %s: %w", request, id, err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	removed["repair"] += nRepair
	removed["repair_request"] += nRequest
	return nRepair + nRequest, nil
}

// purgeCandidate is a repair PurgeRepairs may remove, with its request.
type purgeCandidate struct{ id, request string }

// purgeCandidates are at most batch repairs PurgeRepairs may remove, oldest
// end first.
func (s *Store) purgeCandidates(ctx context.Context, cutoff time.Time, batch int) ([]purgeCandidate, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT repair_id, request_id FROM repair
		WHERE end_time < ? AND state IN (?, ?, ?) AND rebuild_id = ''
		ORDER BY end_time, id LIMIT ?`, cutoff.UTC(), StateVerified, StateFailed, StateCancelled, batch)
	if err != nil {
		return nil, fmt.Errorf("finding repairs ended before %s: %w", cutoff.UTC().Format(time.RFC3339), err)
	}
	defer rows.Close()
	var out []purgeCandidate
	for rows.Next() {
		var c purgeCandidate
		if err := rows.Scan(&c.id, &c.request); err != nil {
			return nil, fmt.Errorf("finding repairs to purge: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("finding repairs to purge: %w", err)
	}
	return out, nil
}
