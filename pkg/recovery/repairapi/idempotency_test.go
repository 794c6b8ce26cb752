package repairapi_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/recovery/repair"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/repairtest"
)

// reason returns err's code and ErrorInfo reason.
func reason(err error) (codes.Code, string) {
	r, _ := apierr.ReasonOf(err)
	return status.Code(err), string(r)
}

// transitions counts the recorded transitions of a repair or rebuild into state.
func (f *fixture) transitions(t *testing.T, id, state string) int {
	t.Helper()
	tr, err := f.Store.Transitions(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, x := range tr {
		if x.To == state && x.From != state {
			n++
		}
	}
	return n
}

// crash makes a stored answer look like a call that acted and crashed before
// storing it: IN_PROGRESS, no response, its lease expired.
func (f *fixture) crash(t *testing.T, method, requestID string) {
	t.Helper()
	res, err := f.Control.ExecContext(context.Background(), `UPDATE control_request SET state = 'IN_PROGRESS', response = NULL,
		lease_expire = DATE_SUB(UTC_TIMESTAMP(3), INTERVAL 1 SECOND) WHERE method = ? AND request_id = ?`, method, requestID)
	if n, _ := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("crashing request %s of %s: %d rows, %v", requestID, method, n, err)
	}
}

func sameRepair(t *testing.T, what string, want, got *fitnessv1.Repair) {
	t.Helper()
	if got.GetRepairId() != want.GetRepairId() || got.GetState() != want.GetState() || got.GetApprovedBy() != want.GetApprovedBy() {
		t.Errorf("%s: repair %s %s approved by %q, want %s %s approved by %q", what, got.GetRepairId(), got.GetState(), got.GetApprovedBy(),
			want.GetRepairId(), want.GetState(), want.GetApprovedBy())
	}
}

// Approvals and cancellations of repairs and rebuilds with a request_id: a
// retry returns the first answer and acts no more (one transition), also
// when the call crashed between acting and storing its answer; the same id
// for another request, or by another caller, is REQUEST_ID_REUSED;
// concurrent duplicates act once.
func TestIdempotentApprovalsAndCancellations(t *testing.T) {
	f := newFixture(t, options{})
	t.Logf("engine %s", infratest.MySQLEngine())
	run := f.scenario(t)
	rs := f.create(t, "otto", run.ID, "c-1")
	removal, replay, rebuildRepair := rs[fitnessv1.RepairAction_REPAIR_ACTION_REMOVE], rs[fitnessv1.RepairAction_REPAIR_ACTION_REPLAY],
		rs[fitnessv1.RepairAction_REPAIR_ACTION_REBUILD]

	// ApproveRepair.
	approve := &fitnessv1.ApproveRepairRequest{RepairId: removal.GetRepairId(), Reason: "origins checked", RequestId: "a-1"}
	first, err := f.client.ApproveRepair(as("bob"), approve)
	if err != nil || first.GetRepair().GetState() != fitnessv1.RepairState_REPAIR_STATE_EXECUTING {
		t.Fatalf("ApproveRepair = %v, %v", first, err)
	}
	again, err := f.client.ApproveRepair(as("bob"), approve)
	if err != nil || !proto.Equal(first, again) {
		t.Errorf("ApproveRepair retried = %v, %v; want the first answer %v", again, err, first)
	}
	if _, err := f.client.ApproveRepair(as("bob"), &fitnessv1.ApproveRepairRequest{RepairId: removal.GetRepairId(), Reason: "origins checked"}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("ApproveRepair without the request_id after the approval: %v, want FAILED_PRECONDITION", err)
	}
	f.crash(t, "ApproveRepair", "a-1")
	taken, err := f.client.ApproveRepair(as("bob"), approve)
	if err != nil {
		t.Fatalf("ApproveRepair retried after a crash between approving and storing the answer: %v", err)
	}
	sameRepair(t, "ApproveRepair after a crash", first.GetRepair(), taken.GetRepair())
	if n := f.transitions(t, removal.GetRepairId(), repair.StateExecuting); n != 1 {
		t.Errorf("the removal was approved %d times, want once", n)
	}
	for who, req := range map[string]*fitnessv1.ApproveRepairRequest{
		"bob":   {RepairId: removal.GetRepairId(), Reason: "another reason", RequestId: "a-1"},
		"alice": approve,
	} {
		if code, r := reason(func() error { _, err := f.client.ApproveRepair(as(who), req); return err }()); code != codes.FailedPrecondition || r != string(apierr.RequestIDReused) {
			t.Errorf("a-1 reused by %s (%q): %s %s, want FAILED_PRECONDITION REQUEST_ID_REUSED", who, req.GetReason(), code, r)
		}
	}
	if _, err := f.client.ApproveRepair(as("bob"), &fitnessv1.ApproveRepairRequest{RepairId: removal.GetRepairId(), Reason: "x",
		RequestId: strings.Repeat("k", 65)}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a 65-character request_id: %v, want INVALID_ARGUMENT", err)
	}

	// CancelRepair: concurrent duplicates, a retry, a crash.
	cancelReq := &fitnessv1.CancelRepairRequest{RepairId: replay.GetRepairId(), Reason: "INC-9 closed", RequestId: "x-1"}
	var wg sync.WaitGroup
	answers := make([]*fitnessv1.CancelRepairResponse, 5)
	errs := make([]error, 5)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], errs[i] = f.client.CancelRepair(as("otto"), cancelReq)
		}()
	}
	wg.Wait()
	var cancelled *fitnessv1.CancelRepairResponse
	for i := range answers {
		if errs[i] != nil {
			if code, r := reason(errs[i]); code != codes.Aborted || r != string(apierr.RequestInProgress) {
				t.Errorf("concurrent CancelRepair %d: %v", i, errs[i])
			}
			continue
		}
		if cancelled == nil {
			cancelled = answers[i]
		} else if !proto.Equal(cancelled, answers[i]) {
			t.Errorf("concurrent CancelRepair %d = %v, want the one answer %v", i, answers[i], cancelled)
		}
	}
	if cancelled.GetRepair().GetState() != fitnessv1.RepairState_REPAIR_STATE_CANCELLED {
		t.Fatalf("CancelRepair = %v", cancelled)
	}
	if again, err := f.client.CancelRepair(as("otto"), cancelReq); err != nil || !proto.Equal(cancelled, again) {
		t.Errorf("CancelRepair retried after the cancellation = %v, %v; want the first answer", again, err)
	}
	f.crash(t, "CancelRepair", "x-1")
	if taken, err := f.client.CancelRepair(as("otto"), cancelReq); err != nil {
		t.Errorf("CancelRepair retried after a crash: %v", err)
	} else {
		sameRepair(t, "CancelRepair after a crash", cancelled.GetRepair(), taken.GetRepair())
	}
	if n := f.transitions(t, replay.GetRepairId(), repair.StateCancelled); n != 1 {
		t.Errorf("the replay was cancelled %d times, want once", n)
	}
	if code, r := reason(func() error {
		_, err := f.client.CancelRepair(as("otto"), &fitnessv1.CancelRepairRequest{RepairId: rebuildRepair.GetRepairId(), Reason: "INC-9 closed", RequestId: "x-1"})
		return err
	}()); code != codes.FailedPrecondition || r != string(apierr.RequestIDReused) {
		t.Errorf("x-1 reused for another repair: %s %s, want FAILED_PRECONDITION REQUEST_ID_REUSED", code, r)
	}
	// The repair's own rebuild holds the campaign: cancel it to start one directly.
	if _, err := f.client.CancelRepair(as("otto"), &fitnessv1.CancelRepairRequest{RepairId: rebuildRepair.GetRepairId(), Reason: "direct rebuild", RequestId: "x-2"}); err != nil {
		t.Fatal(err)
	}

	// ApproveRebuild and CancelRebuild.
	start, err := f.client.StartRebuild(as("alice"), &fitnessv1.StartRebuildRequest{RequestId: "b-1", Scope: &fitnessv1.ReconcileScope{DetectId: repairtest.DetectID},
		Epoch: 1, Reason: "mapping fixed"})
	if err != nil {
		t.Fatal(err)
	}
	rbID := start.GetRebuild().GetRebuildId()
	approveRb := &fitnessv1.ApproveRebuildRequest{RebuildId: rbID, Reason: "reviewed", RequestId: "ab-1"}
	rbFirst, err := f.client.ApproveRebuild(as("bob"), approveRb)
	if err != nil || rbFirst.GetRebuild().GetApprovedBy() != "bob" {
		t.Fatalf("ApproveRebuild = %v, %v", rbFirst, err)
	}
	if again, err := f.client.ApproveRebuild(as("bob"), approveRb); err != nil || !proto.Equal(rbFirst, again) {
		t.Errorf("ApproveRebuild retried = %v, %v; want the first answer", again, err)
	}
	f.crash(t, "ApproveRebuild", "ab-1")
	if taken, err := f.client.ApproveRebuild(as("bob"), approveRb); err != nil || taken.GetRebuild().GetApprovedBy() != "bob" || taken.GetRebuild().GetRebuildId() != rbID {
		t.Errorf("ApproveRebuild retried after a crash = %v, %v", taken, err)
	}
	if n := f.transitions(t, rbID, repair.StateExecuting); n != 1 {
		t.Errorf("the rebuild was approved %d times, want once", n)
	}
	cancelRb := &fitnessv1.CancelRebuildRequest{RebuildId: rbID, Reason: "wrong epoch", RequestId: "cb-1"}
	cbFirst, err := f.client.CancelRebuild(as("alice"), cancelRb)
	if err != nil || cbFirst.GetRebuild().GetState() != fitnessv1.RepairState_REPAIR_STATE_CANCELLED {
		t.Fatalf("CancelRebuild = %v, %v", cbFirst, err)
	}
	if again, err := f.client.CancelRebuild(as("alice"), cancelRb); err != nil || !proto.Equal(cbFirst, again) {
		t.Errorf("CancelRebuild retried = %v, %v; want the first answer", again, err)
	}
	f.crash(t, "CancelRebuild", "cb-1")
	if taken, err := f.client.CancelRebuild(as("alice"), cancelRb); err != nil || taken.GetRebuild().GetState() != fitnessv1.RepairState_REPAIR_STATE_CANCELLED {
		t.Errorf("CancelRebuild retried after a crash = %v, %v", taken, err)
	}
	if n := f.transitions(t, rbID, repair.StateCancelled); n != 1 {
		t.Errorf("the rebuild was cancelled %d times, want once", n)
	}
	if code, r := reason(func() error {
		_, err := f.client.CancelRebuild(as("bob"), cancelRb)
		return err
	}()); code != codes.FailedPrecondition || r != string(apierr.RequestIDReused) {
		t.Errorf("cb-1 reused by another caller: %s %s, want FAILED_PRECONDITION REQUEST_ID_REUSED", code, r)
	}
}

// VerifyRepair with a request_id: a retry returns the stored verdict even
// after the repair moved on (a new verification would be refused), and
// after a crash between verifying and storing the verdict the retry
// recognises the verified repair.
func TestIdempotentVerify(t *testing.T) {
	f := newFixture(t, options{executor: true})
	t.Logf("engine %s", infratest.MySQLEngine())
	f.rep.Delay = 2 * time.Second // the replays reach the projection late: the first verification finds them missing
	run := f.scenario(t)
	rs := f.create(t, "otto", run.ID, "c-1")
	replay := rs[fitnessv1.RepairAction_REPAIR_ACTION_REPLAY]
	f.WaitState(t, replay.GetRepairId(), repair.StateAwaitingVerification, 30*time.Second)
	verify := &fitnessv1.VerifyRepairRequest{RepairId: replay.GetRepairId(), Reason: "check now", RequestId: "v-1"}
	first, err := f.client.VerifyRepair(as("otto"), verify)
	if err != nil {
		t.Fatal(err)
	}
	f.WaitState(t, replay.GetRepairId(), repair.StateVerified, 60*time.Second)
	again, err := f.client.VerifyRepair(as("otto"), verify)
	if err != nil || !proto.Equal(first, again) {
		t.Errorf("VerifyRepair retried = %v, %v; want the stored verdict %v", again, err, first)
	}
	if _, err := f.client.VerifyRepair(as("otto"), &fitnessv1.VerifyRepairRequest{RepairId: replay.GetRepairId(), Reason: "check now"}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("a new verification of the verified repair: %v, want FAILED_PRECONDITION", err)
	}
	f.crash(t, "VerifyRepair", "v-1")
	taken, err := f.client.VerifyRepair(as("otto"), verify)
	if err != nil || taken.GetRepair().GetState() != fitnessv1.RepairState_REPAIR_STATE_VERIFIED || taken.GetItemsMismatched() != 0 ||
		taken.GetItemsPassed() != taken.GetRepair().GetItemsTotal() {
		t.Errorf("VerifyRepair retried after a crash = %v, %v; want the verified repair", taken, err)
	}
	if code, r := reason(func() error {
		_, err := f.client.VerifyRepair(as("otto"), &fitnessv1.VerifyRepairRequest{RepairId: replay.GetRepairId(), Reason: "other", RequestId: "v-1"})
		return err
	}()); code != codes.FailedPrecondition || r != string(apierr.RequestIDReused) {
		t.Errorf("v-1 reused for another request: %s %s, want FAILED_PRECONDITION REQUEST_ID_REUSED", code, r)
	}
}
