// Package partition_test proves that one stalled topic partition is delay,
// not wrong data: reconciliation counts the stalled partition's records in
// flight (or the boundary not reached) and reports no discrepancy, and is
// clean once the partition flows again.
package partition_test

import (
	"fmt"
	"testing"
	"time"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/testkit/platformtest"
	"github.com/resultsync/resultsync/pkg/testkit/reconcileapitest"
)

const (
	detect     = 10001
	partitions = 4
	stalled    = 0 // the partition no consumer reads until it resumes
)

// consumePartition runs a consumer server of one partition of the
// platform's topic only (the fault: the stalled partition has no consumer,
// at the broker boundary; the consumer is the production server).
func consumePartition(t *testing.T, p *platformtest.Platform, i int) {
	t.Helper()
	p.RunConsumer(consumer.Hooks{}, "--batch-wait=20ms", fmt.Sprintf("--topic=%s-partition-%d", p.Topic, i))
}

// run reconciles the campaign at CONTENT depth to its end.
func run(t *testing.T, p *platformtest.Platform) *fitnessv1.ReconciliationRun {
	t.Helper()
	id := reconcileapitest.Start(t, p.Reconcile, platformtest.Operator, &fitnessv1.ReconcileScope{DetectId: detect},
		fitnessv1.ReconcileDepth_RECONCILE_DEPTH_CONTENT)
	return reconcileapitest.Wait(t, p.Reconcile, platformtest.Viewer, id, 2*time.Minute)
}

// TestStalledPartitionIsInFlightNotWrong: a 4-partition topic, two shards,
// consumers on partitions 1-3 only. The records routed to partition 0 are
// SENT (in the broker) but not applied while the other partitions' records,
// committed after them, are: the shards' newest applied commits are past
// every record, which before per-partition positions made the stalled ones
// MISSING_IN_TARGET. The run counts them in flight, reports no
// discrepancy; after a consumer of partition 0 starts, a run is clean.
func TestStalledPartitionIsInFlightNotWrong(t *testing.T) {
	p := platformtest.NewWith(t, platformtest.Options{Partitions: partitions, NoConsumer: true})
	for i := range partitions {
		if i != stalled {
			consumePartition(t, p, i)
		}
	}
	var stuck, flowing []int64
	for id := int64(900001); id <= 900060; id++ {
		p.Record(detect, id, 7, "2.31")
		if pulsarbus.DataIDPartition(id, partitions) == stalled {
			stuck = append(stuck, id)
		} else {
			flowing = append(flowing, id)
		}
	}
	// The last record must flow, so every stuck one is older than some
	// applied event of its shard.
	for id := int64(900061); pulsarbus.DataIDPartition(id-1, partitions) == stalled || len(flowing) < 2; id++ {
		p.Record(detect, id, 7, "2.31")
		if pulsarbus.DataIDPartition(id, partitions) == stalled {
			stuck = append(stuck, id)
		} else {
			flowing = append(flowing, id)
		}
	}
	if len(stuck) < 4 {
		t.Fatalf("only %d records routed to partition %d", len(stuck), stalled)
	}
	for _, id := range flowing {
		p.WaitVersion(detect, id, 1)
	}
	p.WaitFor("every outbox row SENT", time.Minute, func() bool {
		for _, db := range p.ShardDBs {
			var n int
			if err := db.QueryRow("SELECT COUNT(*) FROM outbox_event WHERE status <> 'SENT'").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				return false
			}
		}
		return true
	})
	for _, id := range stuck {
		if c := p.CurrentOf(detect, id); c.Version != 0 {
			t.Fatalf("record %d of the stalled partition is in ClickHouse (version %d): the stall did not hold", id, c.Version)
		}
	}

	r := run(t, p)
	t.Logf("stalled: state %s, %d discrepancies, %d in flight (%d records stuck, %d flowing); %s",
		r.GetState(), r.GetDiscrepancyCount(), r.GetInFlightCount(), len(stuck), len(flowing), r.GetMessage())
	if r.GetDiscrepancyCount() != 0 {
		t.Errorf("the stalled partition's records were reported as %d discrepancies", r.GetDiscrepancyCount())
	}
	if s := r.GetState(); s != fitnessv1.RunState_RUN_STATE_BOUNDARY_NOT_REACHED && s != fitnessv1.RunState_RUN_STATE_SUCCEEDED {
		t.Errorf("state %s: %s", s, r.GetErrorMessage())
	}
	if r.GetInFlightCount() != int64(len(stuck)) {
		t.Errorf("in flight %d, want the %d stuck records", r.GetInFlightCount(), len(stuck))
	}

	consumePartition(t, p, stalled)
	for _, id := range stuck {
		p.WaitVersion(detect, id, 1)
	}
	r = run(t, p)
	t.Logf("resumed: state %s, %d discrepancies, %d in flight", r.GetState(), r.GetDiscrepancyCount(), r.GetInFlightCount())
	if r.GetState() != fitnessv1.RunState_RUN_STATE_SUCCEEDED || r.GetDiscrepancyCount() != 0 || r.GetInFlightCount() != 0 {
		t.Errorf("after the partition resumed: state %s, %d discrepancies, %d in flight; want a clean run (%s)",
			r.GetState(), r.GetDiscrepancyCount(), r.GetInFlightCount(), r.GetMessage())
	}
}
