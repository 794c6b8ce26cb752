package replay

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"

	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
)

// purgeBatch bounds the rows one purge statement removes (and locks).
const purgeBatch = 1000

// Purge is the retention job of one shard: it physically removes the
// tombstones (is_deleted = 1) whose tombstone version committed before
// olderThan, and returns how many it removed. Live rows are never touched.
//
// The shard's triggers (migration 0004) write each removed tombstone's
// deletion record (deletion_log) in the same transaction, so Replay still
// delivers it and reconciliation still sees a deleted record at its version;
// the campaign's bucket aggregates and revision stay as they are (a purge
// changes no business state). Candidates are found by a non-locking read in
// primary-key order, then removed by primary key in batches of purgeBatch,
// each its own short statement: a purge locks only the rows it removes and
// can be stopped (ctx) between batches, keeping what it removed.
func Purge(ctx context.Context, db *sql.DB, olderThan time.Time) (int64, error) {
	cutoff := olderThan.UTC()
	var total int64
	after := int64(math.MinInt64)
	for {
		ids, err := purgeCandidates(ctx, db, after, cutoff)
		if err != nil {
			return total, err
		}
		if len(ids) == 0 {
			return total, nil
		}
		args := make([]any, 0, len(ids)+1)
		args = append(args, cutoff)
		for _, id := range ids {
			args = append(args, id)
		}
		// The predicate is checked again on the locked row.
		res, err := db.ExecContext(ctx, "DELETE FROM fitness_result WHERE is_deleted = 1 AND update_time < ? AND data_id IN ("+
			mysqldb.Placeholders(len(ids))+")", args...)
		if err != nil {
			return total, fmt.Errorf("purging %d tombstones after data_id %d: %w", len(ids), after, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("purging tombstones: %w", err)
		}
		total += n
		if len(ids) < purgeBatch {
			return total, nil
		}
		after = ids[len(ids)-1]
	}
}

func purgeCandidates(ctx context.Context, db *sql.DB, after int64, cutoff time.Time) ([]int64, error) {
	rows, err := db.QueryContext(ctx, "SELECT data_id FROM fitness_result WHERE data_id > ? AND is_deleted = 1 AND update_time < ? "+
		"ORDER BY data_id LIMIT ?", after, cutoff, purgeBatch)
	if err != nil {
		return nil, fmt.Errorf("finding tombstones to purge: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("finding tombstones to purge: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("finding tombstones to purge: %w", err)
	}
	return ids, nil
}
