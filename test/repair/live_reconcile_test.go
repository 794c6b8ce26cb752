package repair_test

import (
	"testing"
	"time"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/testkit/reconcileapitest"
)

// A reconciliation run ends while the campaign it compares keeps being
// corrected (~100/s): its boundary moves with every commit, yet the run
// must not wait for a quiet moment that never comes, and what is merely in
// flight must not be reported (0 discrepancies, whatever the run's end). Every run of the scheduler meets this on a
// campaign in use.
func TestReconcileRunEndsUnderLiveCorrections(t *testing.T) {
	const (
		detect  = 20011
		records = 120
		rate    = 100
	)
	p := newPlatform(t)
	first := int64(940001)
	latest := map[int64]int64{}
	var ids []int64
	for i := range int64(records) {
		p.Record(detect, first+i, school, "2.21")
		latest[first+i] = 1
		ids = append(ids, first+i)
	}
	p.WaitFor("every record in ClickHouse", 60*time.Second, func() bool { return p.projected(detect, latest) == "" })

	writers := p.startWriters(ids, latest, 8, rate)
	p.WaitFor("live corrections flowing", 30*time.Second, func() bool { sent, _ := writers.Counts(); return sent >= 50 })
	for _, depth := range []fitnessv1.ReconcileDepth{fitnessv1.ReconcileDepth_RECONCILE_DEPTH_VERSIONS, fitnessv1.ReconcileDepth_RECONCILE_DEPTH_CONTENT} {
		start := time.Now()
		run := reconcileapitest.Run(t, p.Reconcile, operator, &fitnessv1.ReconcileScope{DetectId: detect}, depth, 120*time.Second)
		id := run.GetRunId()
		sent, failed := writers.Counts()
		t.Logf("%s run under live corrections: %s in %s, %d discrepancies, %d in flight; %d corrections so far (%d failed); %s",
			depth, run.GetState(), time.Since(start).Round(time.Millisecond), run.GetDiscrepancyCount(), run.GetInFlightCount(), sent, failed, run.GetMessage())
		// SUCCEEDED, or BOUNDARY_NOT_REACHED when the projection did not
		// apply what the shards committed before the scan within the
		// harness's catch-up wait (300 ms; a loaded machine misses it):
		// either way the run ended and called nothing in flight wrong.
		switch run.GetState() {
		case fitnessv1.RunState_RUN_STATE_SUCCEEDED, fitnessv1.RunState_RUN_STATE_BOUNDARY_NOT_REACHED:
		default:
			t.Errorf("%s run under live corrections ended %s (%s), want SUCCEEDED or BOUNDARY_NOT_REACHED", depth, run.GetState(), run.GetErrorMessage())
		}
		if _, found := p.discrepancies(id); len(found) != 0 {
			t.Errorf("%s run under live corrections reported %d discrepancies (delay called wrong data): %v", depth, len(found), classes(found))
		}
	}
}
