package chstore

import (
	"context"
	"fmt"
	"time"
)

// deadLetterSpan is the range of dead_unix_ms one PurgeDeadLetters call
// removes at most.
const deadLetterSpan = 24 * time.Hour

// PurgeDeadLetters removes dead letters recorded before cutoff, at most one
// day of them per call (the oldest day), and returns how many rows went.
// ClickHouse has no row-bounded DELETE: the bound is a range of the table's
// sort key (dead_unix_ms), removed by one `ALTER TABLE dead_letters DELETE`
// mutation, which rewrites only the parts holding that range, and waited for
// (WaitForMutations; on a cluster the replicated table's mutation reaches
// the other replicas through replication). Call it until it returns 0. The
// messages themselves stay on the dead-letter topic for its own retention.
func (p *Projection) PurgeDeadLetters(ctx context.Context, cutoff time.Time) (int64, error) {
	cut := cutoff.UnixMilli()
	var oldest int64
	var n uint64
	if err := p.conn.QueryRow(ctx, "SELECT min(dead_unix_ms), count() FROM dead_letters WHERE dead_unix_ms < ?", cut).Scan(&oldest, &n); err != nil {
		return 0, fmt.Errorf("finding dead letters older than %s: %w", cutoff.UTC().Format(time.RFC3339), err)
	}
	if n == 0 {
		return 0, nil
	}
	pred := fmt.Sprintf("dead_unix_ms >= %d AND dead_unix_ms < %d", oldest, min(oldest+deadLetterSpan.Milliseconds(), cut))
	count := func() (uint64, error) {
		var c uint64
		if err := p.conn.QueryRow(ctx, "SELECT count() FROM dead_letters WHERE "+pred).Scan(&c); err != nil {
			return 0, fmt.Errorf("counting dead letters: %w", err)
		}
		return c, nil
	}
	before, err := count()
	if err != nil {
		return 0, err
	}
	if err := p.conn.Exec(ctx, "ALTER TABLE dead_letters DELETE WHERE "+pred); err != nil {
		return 0, fmt.Errorf("purging dead letters (%s): %w", pred, err)
	}
	if err := WaitForMutations(ctx, p.conn, "dead_letters"); err != nil {
		return 0, fmt.Errorf("purging dead letters (%s): %w", pred, err)
	}
	after, err := count()
	if err != nil {
		return 0, err
	}
	return int64(before) - int64(min(after, before)), nil
}
