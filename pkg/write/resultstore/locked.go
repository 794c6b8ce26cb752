package resultstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
)

// ResultColumns is the column list ScanResult decodes, in order. The shard's
// deletion_log (migration 0004) has the same columns, so its rows decode the
// same way.
const ResultColumns = selectColumns

// ScanResult decodes one row of ResultColumns into the result the store's
// own reads return (canonical decimal, update time, shardID), so that Event
// of it is exactly the event the write path built for that version. It is
// the store's decoder itself, not a copy.
func ScanResult(sc interface{ Scan(dest ...any) error }, shardID string) (*fitnessv1.FitnessResult, error) {
	s := &Store{shardID: shardID, known: newIdentityCache(1)}
	return s.scanResult(sc)
}

// LockResult reads the current state of dataID through tx under the row lock
// the write path takes (SELECT ... FOR UPDATE), tombstones included: a change
// of the record either committed before (and is read) or waits for tx to end.
// A record that is not in fitness_result is ErrNotFound.
func LockResult(ctx context.Context, tx *sql.Tx, shardID string, dataID int64) (*fitnessv1.FitnessResult, error) {
	r, err := ScanResult(tx.QueryRowContext(ctx, "SELECT "+ResultColumns+" FROM fitness_result WHERE data_id = ? FOR UPDATE", dataID), shardID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("locking result %d on %s: %w", dataID, shardID, err)
	}
	return r, nil
}
