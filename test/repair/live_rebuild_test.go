package repair_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
)

// The documented rebuild flow under live writes (docs/design.md,
// "Controlled rebuild under live writes"): a campaign whose projection holds
// a defective mapping's output is reconciled, the rebuild planned and created
// at the next epoch E, the fixed consumer deployed at E, the rebuild
// approved, executed and VERIFIED through the repair server, while teachers'
// corrections flow into the same campaign at ~100/s the whole time. The live
// path writes the campaign at E before the approval (checked): the approval
// used to be refused then ("epoch 1 no longer exceeds the epoch floor 1 of
// campaign 20010"). Afterwards every correction's latest version is the
// projection's, the defective records hold their right values, and a
// CONTENT reconciliation of the campaign is clean.
func TestRebuildUnderLiveCorrections(t *testing.T) {
	const (
		detect      = 20010
		records     = 120
		rate        = 100 // corrections per second, all writers together
		writerCount = 8
	)
	p := newPlatform(t)
	ctx := context.Background()
	first := int64(930001)
	for i := range int64(records) {
		p.Record(detect, first+i, school, "2.21")
	}
	latest := map[int64]int64{} // data_id -> last acknowledged version
	for i := range int64(records) {
		latest[first+i] = 1
	}
	p.WaitFor("every record in ClickHouse", 60*time.Second, func() bool { return p.projected(detect, latest) == "" })

	// The defective mapping's output: a wrong value at the right version and
	// epoch for five records, which the writers leave alone.
	defective := []int64{first, first + 1, first + 2, first + 3, first + 4}
	for _, id := range defective {
		row := p.Origins(detect, id)[0]
		row.Result = "1.11"
		if err := p.Proj.Insert(ctx, []chstore.Row{row}); err != nil {
			t.Fatal(err)
		}
	}

	// Reconcile: the defective records are CONTENT_MISMATCH. (Run before the
	// writers start: a run's boundary retries while the campaign revision
	// keeps moving.)
	run, found := p.reconcileRun(detect)
	var content []string
	for _, d := range found {
		if d.GetClass() == fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_CONTENT_MISMATCH {
			content = append(content, d.GetDiscrepancyId())
		} else {
			t.Logf("also found: %s of %d", d.GetClass(), d.GetDataId())
		}
	}
	cls := classes(found)
	for _, id := range defective {
		if cls[id] != fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_CONTENT_MISMATCH {
			t.Fatalf("record %d: %s, want CONTENT_MISMATCH (found %v)", id, cls[id], cls)
		}
	}

	// The live corrections, ~100/s for the whole flow, on every record but
	// the defective ones.
	var live []int64
	for i := int64(len(defective)); i < records; i++ {
		live = append(live, first+i)
	}
	writers := p.startWriters(live, latest, writerCount, rate)
	start := time.Now()

	// Plan and create: the epoch is fixed now, above everything stored.
	plan, err := p.Repair.PlanRepair(operator(), &fitnessv1.PlanRepairRequest{RunId: run, DiscrepancyIds: content})
	if err != nil {
		t.Fatal(err)
	}
	epoch := plan.GetEpochFloor() + 1
	created, err := p.Repair.CreateRepair(operator(), &fitnessv1.CreateRepairRequest{RunId: run, DiscrepancyIds: content,
		Reason: fmt.Sprintf("mapping fixed in epoch %d", epoch), RequestId: "live-rebuild-" + run, RebuildEpoch: epoch})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.GetRepairs()) != 1 || created.GetRepairs()[0].GetAction() != fitnessv1.RepairAction_REPAIR_ACTION_REBUILD {
		t.Fatalf("created %v, want one REBUILD", created.GetRepairs())
	}
	id := created.GetRepairs()[0].GetRepairId()

	// The fixed consumer is deployed at the epoch; the live path writes the
	// campaign at it before anyone approves.
	p.StopConsumer()
	p.StartConsumer(uint16(epoch))
	p.WaitFor(fmt.Sprintf("live rows at epoch %d", epoch), 60*time.Second, func() bool { return p.rowsAtEpoch(detect, epoch) >= 20 })
	atApproval := p.rowsAtEpoch(detect, epoch)

	if _, err := p.Repair.ApproveRepair(bob(), &fitnessv1.ApproveRepairRequest{RepairId: id, Reason: "mapping reviewed"}); err != nil {
		t.Fatalf("approval with %d live rows at epoch %d in the campaign: %v", atApproval, epoch, err)
	}
	done := p.waitRepair(id, fitnessv1.RepairState_REPAIR_STATE_VERIFIED)
	during, failed := writers.Counts()
	elapsed := time.Since(start)
	writers.Stop()
	t.Logf("rebuild at epoch %d VERIFIED (%s) with %d live rows at the epoch at approval; %d corrections in %s (%.0f/s), %d failed",
		epoch, done.GetVerification(), atApproval, during, elapsed.Round(time.Millisecond), float64(during)/elapsed.Seconds(), failed)
	if rate := float64(during) / elapsed.Seconds(); rate < 70 {
		t.Errorf("corrections ran at %.0f/s during the flow, want ~100/s", rate)
	}

	// Every correction's latest version is visible, the defective records
	// are right, and a CONTENT run is clean.
	p.WaitFor("every correction's latest version in ClickHouse", 60*time.Second, func() bool { return p.projected(detect, latest) == "" })
	for _, id := range defective {
		if got := p.CurrentOf(detect, id); got != (current{Version: 1, Milli: 2210}) {
			t.Errorf("defective record %d after the rebuild = %+v, want v1 2.210", id, got)
		}
	}
	if _, again := p.reconcileRun(detect); len(again) != 0 {
		t.Errorf("campaign %d after the rebuild: %d discrepancies: %v", detect, len(again), classes(again))
	}
	if floor, err := p.Proj.EpochFloor(ctx); err != nil || floor != uint16(epoch) {
		t.Errorf("epoch floor = %d, %v; want %d", floor, err, epoch)
	}
}

// projected says how the projection's current versions of the campaign
// differ from want ("" when they are equal).
func (p *platform) projected(detect int64, want map[int64]int64) string {
	p.t.Helper()
	rows, err := p.CH.Conn.Query(context.Background(), "SELECT data_id, version FROM fitness_result_versions FINAL WHERE detect_id = ?", detect)
	if err != nil {
		p.t.Fatal(err)
	}
	defer rows.Close()
	got := map[int64]int64{}
	for rows.Next() {
		var id, v int64
		if err := rows.Scan(&id, &v); err != nil {
			p.t.Fatal(err)
		}
		got[id] = v
	}
	var diff []string
	for id, v := range want {
		if got[id] != v {
			diff = append(diff, fmt.Sprintf("%d: v%d, want v%d", id, got[id], v))
		}
	}
	if len(got) != len(want) {
		diff = append(diff, fmt.Sprintf("%d records, want %d", len(got), len(want)))
	}
	if len(diff) == 0 {
		return ""
	}
	return fmt.Sprint(diff)
}

// rowsAtEpoch counts the campaign's stored rows at an epoch.
func (p *platform) rowsAtEpoch(detect int64, epoch int32) uint64 {
	p.t.Helper()
	var n uint64
	if err := p.CH.Conn.QueryRow(context.Background(), "SELECT count() FROM fitness_result_versions WHERE detect_id = ? AND epoch = ?", detect, epoch).Scan(&n); err != nil {
		p.t.Fatal(err)
	}
	return n
}
