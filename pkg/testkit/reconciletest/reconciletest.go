// Package reconciletest runs stored reconciliations with a reconcile.Runner
// directly (no server, no queue), for tests: the one "start a
// reconciliation run and wait for its end" of the tests below the API.
package reconciletest

import (
	"testing"

	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
)

// Execute stores a run of scope at depth requested by createdBy and runs it
// to its end with rn in the caller's goroutine (Runner.Execute, under the
// test's context); it returns the ended run, whatever its state. A store
// error fails the test.
func Execute(t testing.TB, rn *reconcile.Runner, runs *reconcile.RunStore, scope reconcile.Scope, depth reconcile.Depth, createdBy string) reconcile.Run {
	t.Helper()
	r, err := runs.Create(t.Context(), scope, depth, 0, createdBy)
	if err != nil {
		t.Fatal(err)
	}
	return rn.Execute(t.Context(), r)
}

// Discrepancies returns a run's stored discrepancies (up to 10,000) by
// data_id. A store error fails the test.
func Discrepancies(t testing.TB, runs *reconcile.RunStore, runID string) map[int64]reconcile.StoredDiscrepancy {
	t.Helper()
	ds, err := runs.Discrepancies(t.Context(), runID, 0, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]reconcile.StoredDiscrepancy{}
	for _, d := range ds {
		out[d.DataID] = d
	}
	return out
}
