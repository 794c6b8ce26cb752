package reconcileapi_test

import (
	"context"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

func (f *fixture) runCount(t *testing.T) int {
	t.Helper()
	var n int
	if err := f.control.DB.QueryRow("SELECT COUNT(*) FROM reconcile_run").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// StartReconciliationRun with a request_id: a retry returns the same run
// and starts no other, also after a crash between storing the run and its
// answer and when duplicates arrive together; the same id for another
// request is REQUEST_ID_REUSED.
func TestIdempotentStart(t *testing.T) {
	f := newFixture(t, fastConfig())
	t.Logf("engine %s", infratest.MySQLEngine())
	ctx := context.Background()
	for i := range int64(5) {
		f.put(t, 100+i, 1, 10+i, "2.21", true)
	}
	req := &fitnessv1.StartReconciliationRunRequest{Scope: &fitnessv1.ReconcileScope{DetectId: 10001}, Depth: fitnessv1.ReconcileDepth_RECONCILE_DEPTH_CONTENT,
		RequestId: "s-1"}
	first, err := f.client.StartReconciliationRun(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.client.StartReconciliationRun(ctx, req)
	if err != nil || !proto.Equal(first, again) {
		t.Errorf("retry = %v, %v; want the first answer %v", again, err, first)
	}
	if n := f.runCount(t); n != 1 {
		t.Errorf("%d runs after a retry, want 1", n)
	}

	// A crash after the run was stored, before the answer was: the retry
	// takes the reservation over and finds the run by its id.
	if _, err := f.control.DB.Exec(`UPDATE control_request SET state = 'IN_PROGRESS', response = NULL,
		lease_expire = DATE_SUB(UTC_TIMESTAMP(3), INTERVAL 1 SECOND) WHERE request_id = 's-1'`); err != nil {
		t.Fatal(err)
	}
	taken, err := f.client.StartReconciliationRun(ctx, req)
	if err != nil || taken.GetRun().GetRunId() != first.GetRun().GetRunId() {
		t.Errorf("retry after a crash = %v, %v; want run %s", taken, err, first.GetRun().GetRunId())
	}
	if n := f.runCount(t); n != 1 {
		t.Errorf("%d runs after a retry over a crashed call, want 1", n)
	}

	other := proto.Clone(req).(*fitnessv1.StartReconciliationRunRequest)
	other.Depth = fitnessv1.ReconcileDepth_RECONCILE_DEPTH_COUNTS
	_, err = f.client.StartReconciliationRun(ctx, other)
	if reason, _ := apierr.ReasonOf(err); status.Code(err) != codes.FailedPrecondition || reason != apierr.RequestIDReused {
		t.Errorf("s-1 reused for a COUNTS run: %v, want FAILED_PRECONDITION REQUEST_ID_REUSED", err)
	}

	// Duplicates together: one run.
	dup := proto.Clone(req).(*fitnessv1.StartReconciliationRunRequest)
	dup.RequestId = "s-2"
	var wg sync.WaitGroup
	ids := make([]string, 6)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := f.client.StartReconciliationRun(ctx, dup)
			if err != nil {
				t.Errorf("concurrent start %d: %v", i, err)
				return
			}
			ids[i] = resp.GetRun().GetRunId()
		}()
	}
	wg.Wait()
	for i := range ids {
		if ids[i] != ids[0] || ids[i] == first.GetRun().GetRunId() {
			t.Errorf("concurrent starts answered runs %v, want one new run", ids)
			break
		}
	}
	if n := f.runCount(t); n != 2 {
		t.Errorf("%d runs after six concurrent starts with one request_id, want 2", n)
	}
	for _, id := range []string{first.GetRun().GetRunId(), ids[0]} {
		f.watch(t, id)
	}
}
