package repair

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// One executor at a time holds a repair: a held lease excludes the others
// until it is released or expires, and a non-holder cannot record items.
func TestLeaseIsExclusive(t *testing.T) {
	s := NewStore(infratest.NewMySQLDatabase(t, schema.Control).DB)
	ctx := context.Background()
	rs, err := s.CreateRepairs(ctx, CreateSpec{RequestID: "r", RequestHash: "h", RunID: "run", Scope: reconcile.Scope{DetectID: 1}, Reason: "x", CreatedBy: "otto",
		Repairs: []NewRepair{{Action: ActionReplay, Items: []Item{{DiscrepancyID: "d1", DataID: 1, DetectID: 1, ShardID: "shard-0",
			Class: reconcile.MissingInTarget, Action: ActionReplay}}}}})
	if err != nil {
		t.Fatal(err)
	}
	id := rs[0].ID
	lease := time.Minute
	steps := []struct {
		name string
		do   func() (bool, error)
		want bool
	}{
		{"a claims", func() (bool, error) { return s.claim(ctx, repairSubject, id, "a", lease) }, true},
		{"b cannot claim a's lease", func() (bool, error) { return s.claim(ctx, repairSubject, id, "b", lease) }, false},
		{"nothing runnable for b", func() (bool, error) { ids, err := s.runnable(ctx, repairSubject, "b", 10); return len(ids) > 0, err }, false},
		{"a renews", func() (bool, error) {
			held, err := s.renew(ctx, repairSubject, []string{id}, "a", lease)
			return held[id], err
		}, true},
		{"b cannot record an item", func() (bool, error) {
			err := s.FinishItem(ctx, id, "b", ItemResult{Seq: 1, Outcome: OutcomeApplied})
			return errors.Is(err, errLeaseLost), nil
		}, true},
		{"a releases, b claims", func() (bool, error) {
			if err := s.release(ctx, repairSubject, id, "a"); err != nil {
				return false, err
			}
			return s.claim(ctx, repairSubject, id, "b", 50*time.Millisecond)
		}, true},
		{"b's lease expires, a claims", func() (bool, error) {
			time.Sleep(150 * time.Millisecond)
			return s.claim(ctx, repairSubject, id, "a", lease)
		}, true},
		{"b no longer holds it", func() (bool, error) {
			held, err := s.renew(ctx, repairSubject, []string{id}, "b", lease)
			return held[id], err
		}, false},
		{"a records the item", func() (bool, error) {
			err := s.FinishItem(ctx, id, "a", ItemResult{Seq: 1, Outcome: OutcomeApplied})
			r, _ := s.GetRepair(ctx, id)
			return r.ItemsDone == 1, err
		}, true},
		{"a records it once", func() (bool, error) {
			err := s.FinishItem(ctx, id, "a", ItemResult{Seq: 1, Outcome: OutcomeApplied})
			r, _ := s.GetRepair(ctx, id)
			return r.ItemsDone == 1, err
		}, true},
		{"a cancelled repair is not claimable", func() (bool, error) {
			if err := s.Cancel(ctx, id, "otto", "stop"); err != nil {
				return false, err
			}
			return s.claim(ctx, repairSubject, id, "c", lease)
		}, false},
	}
	for _, st := range steps {
		got, err := st.do()
		if err != nil || got != st.want {
			t.Fatalf("%s: got %t, %v; want %t", st.name, got, err, st.want)
		}
	}
}
