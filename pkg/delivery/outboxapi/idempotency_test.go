package outboxapi_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/platform/audit"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// park claims n NEW rows of shard-0 and parks them.
func (f fixture) park(t *testing.T, ctx context.Context, n int) []int64 {
	t.Helper()
	c, err := f.repos[0].Claim(ctx, n, time.Minute)
	if err != nil || len(c.Rows) != n {
		t.Fatalf("claiming %d rows: %d, %v", n, len(c.Rows), err)
	}
	var ids []int64
	for _, r := range c.Rows {
		ids = append(ids, r.ID)
	}
	if _, p, err := f.repos[0].MarkFailed(ctx, c.Token, ids, "broker down", 1, outbox.Backoff{Base: time.Millisecond, Max: time.Millisecond}); err != nil || p != int64(n) {
		t.Fatalf("parking: %d, %v", p, err)
	}
	return ids
}

func (f fixture) parked(t *testing.T, ctx context.Context) int64 {
	t.Helper()
	st, err := f.svc.GetOutboxStats(ctx, &fitnessv1.GetOutboxStatsRequest{ShardId: "shard-0"})
	if err != nil {
		t.Fatal(err)
	}
	return st.GetShards()[0].GetParkedCount()
}

// ReplayParkedEvents with a request_id: a retry returns the first count and
// audit id and replays nothing (rows parked since stay parked); the same
// id with another request is REQUEST_ID_REUSED; duplicates together replay
// once; after a crash between replaying and storing the answer, the retry
// replays only what is still parked, never a row twice.
func TestIdempotentReplay(t *testing.T) {
	f := newFixture(t)
	t.Logf("engine %s", infratest.MySQLEngine())
	ctx := operator()
	f.park(t, ctx, 4)
	req := &fitnessv1.ReplayParkedEventsRequest{ShardId: "shard-0", Reason: "broker fixed, INC-42", RequestId: "p-1"}
	first, err := f.svc.ReplayParkedEvents(ctx, req)
	if err != nil || first.GetReplayedCount() != 4 {
		t.Fatalf("replay = %v, %v; want 4 rows", first, err)
	}
	later := f.park(t, ctx, 2)
	again, err := f.svc.ReplayParkedEvents(ctx, req)
	if err != nil || !proto.Equal(first, again) {
		t.Errorf("retry = %v, %v; want the first answer %v", again, err, first)
	}
	if n := f.parked(t, ctx); n != 2 {
		t.Errorf("%d rows PARKED after the retry, want the 2 parked since the first call", n)
	}
	if entries, err := audit.New(f.control.DB).List(ctx, "outbox.replay_parked", 10); err != nil || len(entries) != 1 {
		t.Errorf("audit entries = %v, %v; want the first call's alone", entries, err)
	}
	other := proto.Clone(req).(*fitnessv1.ReplayParkedEventsRequest)
	other.Ids = later
	_, err = f.svc.ReplayParkedEvents(ctx, other)
	if st := apierr.Status(err); status.Code(st) != codes.FailedPrecondition || reasonOf(st) != apierr.RequestIDReused {
		t.Errorf("p-1 reused for other ids: %v, want FAILED_PRECONDITION REQUEST_ID_REUSED", err)
	}

	// Duplicates together replay the two once.
	dup := &fitnessv1.ReplayParkedEventsRequest{ShardId: "shard-0", Ids: later, Reason: "broker fixed, INC-42", RequestId: "p-2"}
	var wg sync.WaitGroup
	answers := make([]*fitnessv1.ReplayParkedEventsResponse, 5)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if answers[i], err = f.svc.ReplayParkedEvents(ctx, dup); err != nil {
				t.Errorf("concurrent replay %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	for i := range answers {
		if answers[i].GetReplayedCount() != 2 || answers[i].GetAuditId() != answers[0].GetAuditId() {
			t.Errorf("concurrent replay %d = %v, want 2 rows and the one audit id %s", i, answers[i], answers[0].GetAuditId())
		}
	}

	// A crash after the replay, before its answer was stored.
	if _, err := f.control.DB.Exec(`UPDATE control_request SET state = 'IN_PROGRESS', response = NULL,
		lease_expire = DATE_SUB(UTC_TIMESTAMP(3), INTERVAL 1 SECOND) WHERE request_id = 'p-2'`); err != nil {
		t.Fatal(err)
	}
	f.park(t, ctx, 1) // parked since: not named by p-2, stays parked
	taken, err := f.svc.ReplayParkedEvents(ctx, dup)
	if err != nil || taken.GetReplayedCount() != 0 {
		t.Errorf("retry after a crash = %v, %v; want 0 rows: the crashed call replayed both", taken, err)
	}
	if n := f.parked(t, ctx); n != 1 {
		t.Errorf("%d rows PARKED after the retry over a crashed call, want 1", n)
	}
}

func reasonOf(err error) apierr.Reason {
	r, _ := apierr.ReasonOf(err)
	return r
}
