package repair

import (
	"context"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// TestBudgetIsPerShard: each shard has its own rate budget. With one row
// per second, shard-0's second row must wait about a second (refused at
// once under a 200 ms deadline, which the limiter sees it cannot meet),
// while shard-1's first row is taken at once: shard-0 did not spend it.
func TestBudgetIsPerShard(t *testing.T) {
	e := &Executor{cfg: ExecutorConfig{RowsPerSecond: 1}, limiters: map[string]*rate.Limiter{}}
	take := func(shard string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		return e.take(ctx, shard, 1)
	}
	if err := take("shard-0"); err != nil {
		t.Fatalf("shard-0's first row: %v", err)
	}
	if err := take("shard-0"); err == nil {
		t.Error("shard-0's second row was taken within 200 ms at 1 row/s")
	}
	if err := take("shard-1"); err != nil {
		t.Errorf("shard-1's first row: %v; shard-0 spent shard-1's budget", err)
	}
}
