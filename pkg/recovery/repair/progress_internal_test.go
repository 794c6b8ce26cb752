package repair

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// Workers recording batches of one repair at once: every outcome is stored
// as given (a version beyond 2^53, quotes and non-ASCII text come back
// exact), each item is counted once whichever progress slot took its batch,
// and the repair's update time follows the latest batch.
func TestFinishItemsFromConcurrentWorkers(t *testing.T) {
	s := NewStore(infratest.NewMySQLDatabase(t, schema.Control).DB)
	ctx := context.Background()
	const n = 1200
	items := make([]Item, n)
	for i := range items {
		items[i] = Item{DiscrepancyID: fmt.Sprintf("d%d", i+1), DataID: int64(i + 1), DetectID: 1, ShardID: "shard-0",
			Class: reconcile.MissingInTarget, Action: ActionReplay}
	}
	rs, err := s.CreateRepairs(ctx, CreateSpec{RequestID: "r", RequestHash: "h", RunID: "run", Scope: reconcile.Scope{DetectID: 1}, Reason: "x",
		CreatedBy: "otto", Repairs: []NewRepair{{Action: ActionReplay, Items: items}}})
	if err != nil {
		t.Fatal(err)
	}
	id := rs[0].ID
	if ok, err := s.claim(ctx, repairSubject, id, "a", time.Minute); err != nil || !ok {
		t.Fatalf("claim: %t, %v", ok, err)
	}
	before, err := s.GetRepair(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	const big = int64(math.MaxInt64 - 1) // beyond float64's exact integers
	result := func(seq int) ItemResult {
		if seq%10 == 0 {
			return ItemResult{Seq: seq, Outcome: OutcomeFailed, Attempts: 3, Message: fmt.Sprintf(`it's "bad" — Zoë %d`, seq)}
		}
		return ItemResult{Seq: seq, Outcome: OutcomeApplied, ShardID: "shard-1", AppliedVersion: big - int64(seq), EventID: fmt.Sprintf("%d-v4", seq), Attempts: 1}
	}
	var wg sync.WaitGroup
	errs := make(chan error, n/100)
	for w := range n / 100 {
		wg.Go(func() {
			batch := make([]ItemResult, 0, 100)
			for seq := w*100 + 1; seq <= (w+1)*100; seq++ {
				batch = append(batch, result(seq))
			}
			errs <- s.FinishItems(ctx, id, "a", batch)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Recorded again (a resumed repair): counted once.
	if err := s.FinishItems(ctx, id, "a", []ItemResult{result(1), result(10)}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRepair(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.ItemsDone != n-n/10 || got.ItemsFailed != n/10 {
		t.Fatalf("items done %d, failed %d; want %d, %d", got.ItemsDone, got.ItemsFailed, n-n/10, n/10)
	}
	if got.Updated.Before(before.Updated) {
		t.Fatalf("update time went back: %s -> %s", before.Updated, got.Updated)
	}
	stored, err := s.Items(ctx, id, 0, n, "", "")
	if err != nil || len(stored) != n {
		t.Fatalf("items: %d, %v", len(stored), err)
	}
	for _, it := range stored {
		want := result(it.Seq)
		shard := want.ShardID
		if shard == "" {
			shard = "shard-0" // kept as planned
		}
		if it.Outcome != want.Outcome || it.AppliedVersion != want.AppliedVersion || it.EventID != want.EventID || it.Attempts != want.Attempts ||
			it.Message != want.Message || it.ShardID != shard || it.Applied.IsZero() {
			t.Fatalf("item %d stored as %+v; want %+v", it.Seq, it, want)
		}
	}
}
