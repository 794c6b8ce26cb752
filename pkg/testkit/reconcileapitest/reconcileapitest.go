// Package reconcileapitest starts reconciliation runs through the
// ReconcileService API and follows them to their end, for tests: the one
// "start a run and wait for its end" of every test that drives a reconcile
// server over gRPC.
package reconcileapitest

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
)

// Caller returns the context of one call, with the caller's credentials. It
// is called for every call (a context may carry a deadline of its own).
type Caller func() context.Context

// Ended reports whether a run is in a final state: SUCCEEDED, FAILED or
// BOUNDARY_NOT_REACHED.
func Ended(r *fitnessv1.ReconciliationRun) bool {
	switch r.GetState() {
	case fitnessv1.RunState_RUN_STATE_SUCCEEDED, fitnessv1.RunState_RUN_STATE_FAILED, fitnessv1.RunState_RUN_STATE_BOUNDARY_NOT_REACHED:
		return true
	}
	return false
}

// Start starts a run of scope at depth and returns its id; a refusal fails
// the test.
func Start(t testing.TB, rc fitnessv1.ReconcileServiceClient, as Caller, scope *fitnessv1.ReconcileScope, depth fitnessv1.ReconcileDepth) string {
	t.Helper()
	resp, err := rc.StartReconciliationRun(as(), &fitnessv1.StartReconciliationRunRequest{Scope: scope, Depth: depth})
	if err != nil {
		t.Fatalf("start reconciliation of %v at %v: %v", scope, depth, err)
	}
	return resp.GetRun().GetRunId()
}

// Wait polls the run every 50ms until it ended (Ended) and returns it. An
// error of GetReconciliationRun fails the test, and so does a run that has
// not ended within timeout.
func Wait(t testing.TB, rc fitnessv1.ReconcileServiceClient, as Caller, id string, timeout time.Duration) *fitnessv1.ReconciliationRun {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := rc.GetReconciliationRun(as(), &fitnessv1.GetReconciliationRunRequest{RunId: id})
		if err != nil {
			t.Fatalf("get reconciliation run %s: %v", id, err)
		}
		if run := resp.GetRun(); Ended(run) {
			return run
		}
		if time.Now().After(deadline) {
			t.Fatalf("reconciliation run %s still %v after %s", id, resp.GetRun().GetState(), timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Run starts a run of scope at depth and waits for its end (Start, then
// Wait), the caller as for both.
func Run(t testing.TB, rc fitnessv1.ReconcileServiceClient, as Caller, scope *fitnessv1.ReconcileScope, depth fitnessv1.ReconcileDepth, timeout time.Duration) *fitnessv1.ReconciliationRun {
	t.Helper()
	return Wait(t, rc, as, Start(t, rc, as, scope, depth), timeout)
}

// Watch follows a run through WatchReconciliationRun until the server ends
// the stream (the run ended) and returns every update it sent, in order. A
// stream error, or limit passing first, fails the test.
func Watch(t testing.TB, ctx context.Context, rc fitnessv1.ReconcileServiceClient, id string, limit time.Duration) []*fitnessv1.ReconciliationRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	stream, err := rc.WatchReconciliationRun(ctx, &fitnessv1.WatchReconciliationRunRequest{RunId: id})
	if err != nil {
		t.Fatal(err)
	}
	var seen []*fitnessv1.ReconciliationRun
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return seen
		}
		if err != nil {
			t.Fatalf("watching: %v", err)
		}
		seen = append(seen, resp.GetRun())
	}
}

// Discrepancies lists every discrepancy of a run, page by page (100 a
// page), in the order the server lists them.
func Discrepancies(t testing.TB, rc fitnessv1.ReconcileServiceClient, as Caller, id string) []*fitnessv1.Discrepancy {
	t.Helper()
	var all []*fitnessv1.Discrepancy
	token := ""
	for {
		page, err := rc.ListDiscrepancies(as(), &fitnessv1.ListDiscrepanciesRequest{RunId: id, PageSize: 100, PageToken: token})
		if err != nil {
			t.Fatalf("list discrepancies of run %s: %v", id, err)
		}
		all = append(all, page.GetDiscrepancies()...)
		if token = page.GetNextPageToken(); token == "" {
			return all
		}
	}
}
