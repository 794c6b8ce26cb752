package reconcile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// PurgeRuns removes ended reconciliation runs whose end is before cutoff,
// with their discrepancies, removing at most batch rows in all (runs and
// discrepancies), oldest run first, and returns how many of each table
// ("reconcile_run", "discrepancy").
//
// A run is kept, whatever its age, while:
//   - it has not ended (end_time NULL: PENDING, QUEUED, RUNNING, WAITING);
//   - a repair names it (repair.run_id): the repair's scope, items and
//     discrepancies stay readable as long as the repair is kept (the repair
//     retention is the longer one), and an active repair is never left
//     without its run;
//   - one of its discrepancies is unresolved: the unresolved signal tells
//     what the projection shows now, and no age makes a wrong record right.
//
// The candidates are read from the index on reconcile_run.end_time (control
// migration 0009); whether a run has an unresolved discrepancy is read from
// the campaign's unresolved discrepancies (idx_detect_unresolved: few), not
// from the run's discrepancies (idx_run: up to a million, read again at
// every call while a large run is purged); a run's discrepancies are removed by its run_id index in
// batches, the run row last, by a statement that checks again that no repair
// names it (a repair created meanwhile keeps the run; its discrepancies were
// all resolved, so such a repair has nothing of them to act on). A purge
// stopped half-way leaves a run with fewer discrepancies, which the next
// call finishes.
func (s *RunStore) PurgeRuns(ctx context.Context, cutoff time.Time, batch int) (map[string]int64, error) {
	removed := map[string]int64{"reconcile_run": 0, "discrepancy": 0}
	if batch < 1 {
		return removed, errors.New("purging runs: batch must be at least 1")
	}
	ids, err := s.purgeCandidates(ctx, cutoff, batch)
	if err != nil {
		return removed, err
	}
	budget := int64(batch)
	for _, id := range ids {
		if budget <= 0 {
			break
		}
		n, err := execCount(ctx, s.db, "DELETE FROM discrepancy WHERE run_id = ? ORDER BY data_id LIMIT ?", id, budget)
		removed["discrepancy"] += n
		budget -= n
		if err != nil {
			return removed, fmt.Errorf("purging the discrepancies of run %s: %w", id, err)
		}
		if budget <= 0 {
			break // the run may have more: the next call goes on
		}
		n, err = execCount(ctx, s.db, `DELETE FROM reconcile_run WHERE run_id = ? AND end_time < ?
			AND NOT EXISTS (SELECT 1 FROM repair p WHERE p.run_id = ?)`, id, cutoff.UTC(), id)
		removed["reconcile_run"] += n
		budget -= n
		if err != nil {
			return removed, fmt.Errorf("purging run %s: %w", id, err)
		}
	}
	return removed, nil
}

// execCount runs a statement and returns the rows it affected.
func execCount(ctx context.Context, db *sql.DB, q string, args ...any) (int64, error) {
	res, err := db.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// purgeCandidates are the ids of at most batch runs PurgeRuns may remove,
// oldest end first.
func (s *RunStore) purgeCandidates(ctx context.Context, cutoff time.Time, batch int) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT r.run_id FROM reconcile_run r
		WHERE r.end_time < ? AND r.state IN (?, ?, ?)
		  AND NOT EXISTS (SELECT 1 FROM repair p WHERE p.run_id = r.run_id)
		  AND NOT EXISTS (SELECT 1 FROM discrepancy d FORCE INDEX (idx_detect_unresolved)
		                  WHERE d.detect_id = r.detect_id AND d.resolved = 0 AND d.run_id = r.run_id)
		ORDER BY r.end_time, r.id LIMIT ?`, cutoff.UTC(), StateSucceeded, StateFailed, StateBoundaryNotReached, batch)
	if err != nil {
		return nil, fmt.Errorf("finding runs ended before %s: %w", cutoff.UTC().Format(time.RFC3339), err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("finding runs to purge: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("finding runs to purge: %w", err)
	}
	return ids, nil
}
