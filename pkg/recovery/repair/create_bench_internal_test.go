package repair

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// BenchmarkCreateRepairs stores a repair of 100,000 items (the bench/repair
// size) through CreateRepairs, DefaultCreateBatch items per transaction, and
// reports items/s and the longest transaction (one batch of items).
func BenchmarkCreateRepairs(b *testing.B) {
	s := NewStore(infratest.NewMySQLDatabase(b, schema.Control).DB)
	ctx := context.Background()
	const n = 100_000
	for k := range b.N {
		items := make([]Item, n)
		for i := range items {
			id := int64(k*n + i + 1)
			items[i] = Item{DiscrepancyID: fmt.Sprintf("%032x", id*7919), DataID: id, DetectID: 1, ShardID: "shard-0",
				Class: reconcile.MissingInTarget, Action: ActionReplay, SourceVersion: 1}
		}
		var longest time.Duration
		last := time.Now()
		s.afterBatch = func(int) error {
			longest = max(longest, time.Since(last))
			last = time.Now()
			return nil
		}
		start := time.Now()
		if _, err := s.CreateRepairs(ctx, CreateSpec{RequestID: fmt.Sprintf("r%d", k), RequestHash: "h", RunID: "run", Scope: reconcile.Scope{DetectID: 1},
			Reason: "bench", CreatedBy: "otto", Repairs: []NewRepair{{Action: ActionReplay, Items: items}}}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(n/time.Since(start).Seconds(), "items/s")
		b.ReportMetric(float64(longest.Milliseconds()), "ms/longest-batch")
	}
}
