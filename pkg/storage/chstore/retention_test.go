package chstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// TestPurgeDeadLetters: dead letters older than the cutoff go, one day of
// them per call (5 over two days: 3, then 2, then 0), the newer ones stay.
func TestPurgeDeadLetters(t *testing.T) {
	ctx := context.Background()
	ch := infratest.NewClickHouseDatabase(t, true)
	p := chstore.NewProjection(ch.Conn)
	now := time.Now().UTC()
	cutoff := now.Add(-30 * 24 * time.Hour)
	at := map[string]time.Time{
		"old-1": cutoff.Add(-50 * time.Hour), "old-2": cutoff.Add(-49 * time.Hour), "old-3": cutoff.Add(-40 * time.Hour),
		"old-4": cutoff.Add(-20 * time.Hour), "old-5": cutoff.Add(-time.Minute),
		"new-1": cutoff.Add(time.Minute), "new-2": now,
	}
	for id, ts := range at {
		if err := p.InsertDeadLetter(ctx, chstore.DeadLetter{Time: ts, MessageID: "m-" + id, EventID: id, Reason: "r", Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	var calls []int64
	for range 10 {
		n, err := p.PurgeDeadLetters(ctx, cutoff)
		if err != nil {
			t.Fatalf("purge: %v", err)
		}
		calls = append(calls, n)
		if n == 0 {
			break
		}
	}
	if diff := cmp.Diff([]int64{3, 2, 0}, calls); diff != "" {
		t.Errorf("rows removed per call, a day each (-want +got):\n%s", diff)
	}
	left, err := p.DeadLetters(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range left {
		ids = append(ids, d.EventID)
	}
	if diff := cmp.Diff([]string{"new-2", "new-1"}, ids); diff != "" {
		t.Errorf("dead letters kept (-want +got):\n%s", diff)
	}
	t.Logf("engine %s: %s", infratest.ClickHouseEngine(), fmt.Sprint(calls))
}
