package resultstore

import (
	"context"
	"fmt"
)

// Ping checks that the shard answers a statement on a pooled connection
// (a new connection runs the session set-up, so a server that rejects it
// fails here too).
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("shard %s: %w", s.shardID, err)
	}
	return nil
}
