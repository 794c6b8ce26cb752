package reconcileapi_test

import (
	"testing"
	"time"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/platformtest"
	"github.com/resultsync/resultsync/pkg/testkit/reconcileapitest"
)

// runOnPlatform starts a CONTENT run of the campaign on the platform's
// reconcile server and follows it to its end.
func runOnPlatform(t *testing.T, p *platformtest.Platform, detect int64) *fitnessv1.ReconciliationRun {
	t.Helper()
	id := reconcileapitest.Start(t, p.Reconcile, platformtest.Operator, &fitnessv1.ReconcileScope{DetectId: detect},
		fitnessv1.ReconcileDepth_RECONCILE_DEPTH_CONTENT)
	seen := reconcileapitest.Watch(t, platformtest.Viewer(), p.Reconcile, id, 60*time.Second)
	if len(seen) == 0 {
		return nil
	}
	return seen[len(seen)-1]
}

// TestStoppedConsumerIsInFlightNotMissing is the experiment on the
// whole platform (results, relay, Pulsar, consumer, reconcile server): with
// the consumer stopped, four results recorded and one corrected, all SENT
// by the relay, a CONTENT run reports the five in flight on the shards that
// hold them, no MISSING_IN_TARGET or STALE_TARGET_VERSION, and ends
// BOUNDARY_NOT_REACHED naming those shards. With the consumer running
// again, a run after catch-up clears them: SUCCEEDED, nothing reported.
func TestStoppedConsumerIsInFlightNotMissing(t *testing.T) {
	if infratest.ClickHouseIsInProcess() {
		t.Skip("the platform's servers reach ClickHouse over the network; the in-process ClickHouse 26 runs this through pkg/reconciliation/reconcile TestInFlightIsNotWrongData")
	}
	p := platformtest.New(t)
	const detect = 10001
	p.Record(detect, 900000, 7, "2.00")
	p.WaitVersion(detect, 900000, 1)
	p.StopConsumer()
	want := map[string]int64{}
	for i := range int64(4) {
		id := 900001 + i
		p.Record(detect, id, 7, "2.21")
		want[p.Shards.Shards[p.Shards.Owner(id)].ID]++
	}
	p.Correct(900000, 7, 1, "2.31")
	want[p.Shards.Shards[p.Shards.Owner(900000)].ID]++
	p.WaitFor("every outbox row SENT", 30*time.Second, func() bool {
		for _, db := range p.ShardDBs {
			var n int
			if err := db.QueryRow("SELECT COUNT(*) FROM outbox_event WHERE status <> 'SENT'").Scan(&n); err != nil || n > 0 {
				return false
			}
		}
		return true
	})

	run := runOnPlatform(t, p, detect)
	got := map[string]int64{}
	for _, s := range run.GetShards() {
		if s.GetInFlightCount() > 0 {
			got[s.GetShardId()] = s.GetInFlightCount()
			if !s.GetBehind() {
				t.Errorf("shard %s holds records in flight and is not named behind: %v", s.GetShardId(), s)
			}
		}
	}
	if run.GetState() != fitnessv1.RunState_RUN_STATE_BOUNDARY_NOT_REACHED || run.GetInFlightCount() != 5 || run.GetDiscrepancyCount() != 0 {
		t.Fatalf("run with the consumer stopped = %v; want BOUNDARY_NOT_REACHED, 5 in flight, no discrepancy", run)
	}
	if len(got) != len(want) {
		t.Errorf("in flight per shard = %v, want %v", got, want)
	}
	for id, n := range want {
		if got[id] != n {
			t.Errorf("in flight on %s = %d, want %d", id, got[id], n)
		}
	}
	t.Logf("consumer stopped: %s, %d in flight: %s", run.GetState(), run.GetInFlightCount(), run.GetMessage())

	p.StartConsumer(0)
	p.WaitVersion(detect, 900000, 2)
	for i := range int64(4) {
		p.WaitVersion(detect, 900001+i, 1)
	}
	run = runOnPlatform(t, p, detect)
	if run.GetState() != fitnessv1.RunState_RUN_STATE_SUCCEEDED || run.GetInFlightCount() != 0 || run.GetDiscrepancyCount() != 0 {
		t.Errorf("run after catch-up = %v; want SUCCEEDED, nothing in flight or reported", run)
	}
}
