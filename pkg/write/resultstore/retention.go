package resultstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// RetryWindow is how long a client may retry a command with the same
// request_id and be sure to get its original outcome back (Replayed) rather
// than a second change: the idempotency keys of request_log are kept at
// least this long. The retention of request_log (the repair server's
// --request-log-retention) may not be shorter; a retry arriving after its
// key was purged is treated as a new command (a RecordResult then fails as
// ALREADY_EXISTS, a CorrectResult as a version conflict, never a second
// change at the same expected version).
const RetryWindow = 24 * time.Hour

// PurgeRequestLog removes at most batch idempotency keys recorded before
// cutoff on the shard behind db, oldest first, by a range on the index of
// request_log.create_time (shard migration 0008), and returns how many it
// removed.
func PurgeRequestLog(ctx context.Context, db *sql.DB, cutoff time.Time, batch int) (int64, error) {
	res, err := db.ExecContext(ctx, "DELETE FROM request_log WHERE create_time < ? ORDER BY create_time LIMIT ?", cutoff.UTC(), batch)
	if err != nil {
		return 0, fmt.Errorf("purging request_log rows older than %s: %w", cutoff.UTC().Format(time.RFC3339), err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("purging request_log rows: %w", err)
	}
	return n, nil
}
