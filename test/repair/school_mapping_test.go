package repair_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
)

// A mapping defect shows a school-7 record under school 8 at its own
// version. Through the whole platform (write path, relay, Pulsar, consumer,
// reconcile and repair servers): runs scoped to either school call it wrong
// content, never a record missing from school 7 or unexpected in school 8;
// the repair planned from the school-8 run is a rebuild, not a removal or a
// replay; after it the record is in ClickHouse under its own school, nothing
// was removed, and a campaign-wide run is clean.
func TestSchoolMappingDefectIsRebuiltNeverRemoved(t *testing.T) {
	const (
		detect = 20012
		other  = 8
	)
	p := newPlatform(t)
	ctx := context.Background()
	ids := []int64{950001, 950002, 950003}
	latest := map[int64]int64{}
	for _, id := range ids {
		p.Record(detect, id, school, "2.21")
		latest[id] = 1
	}
	p.WaitFor("every record in ClickHouse", 60*time.Second, func() bool { return p.projected(detect, latest) == "" })

	// The defect: record 950001 at its version and epoch, under school 8.
	bad := ids[0]
	row := p.Origins(detect, bad)[0]
	row.SchoolID = other
	if err := p.Proj.Insert(ctx, []chstore.Row{row}); err != nil {
		t.Fatal(err)
	}
	if got := p.schoolOf(detect, bad); got != other {
		t.Fatalf("record %d is under school %d after the damage, want %d", bad, got, other)
	}

	var school8Run string
	var school8 []*fitnessv1.Discrepancy
	for _, s := range []int64{other, school} {
		run, found := p.scopedRun(&fitnessv1.ReconcileScope{DetectId: detect, SchoolId: s})
		if len(found) != 1 || found[0].GetDataId() != bad || found[0].GetClass() != fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_CONTENT_MISMATCH {
			t.Fatalf("school-%d run: %v, want record %d CONTENT_MISMATCH alone", s, classes(found), bad)
		}
		if s == other {
			school8Run, school8 = run, found
		}
	}

	plan, err := p.Repair.PlanRepair(operator(), &fitnessv1.PlanRepairRequest{RunId: school8Run, DiscrepancyIds: []string{school8[0].GetDiscrepancyId()}})
	if err != nil {
		t.Fatal(err)
	}
	epoch := plan.GetEpochFloor() + 1
	created, err := p.Repair.CreateRepair(operator(), &fitnessv1.CreateRepairRequest{RunId: school8Run, DiscrepancyIds: []string{school8[0].GetDiscrepancyId()},
		Reason: fmt.Sprintf("school mapping fixed in epoch %d", epoch), RequestId: "school-mapping-" + school8Run, RebuildEpoch: epoch})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.GetRepairs()) != 1 || created.GetRepairs()[0].GetAction() != fitnessv1.RepairAction_REPAIR_ACTION_REBUILD {
		t.Fatalf("created %v, want one REBUILD (never a removal or a same-version replay)", created.GetRepairs())
	}
	p.StopConsumer()
	p.StartConsumer(uint16(epoch))
	id := created.GetRepairs()[0].GetRepairId()
	if _, err := p.Repair.ApproveRepair(bob(), &fitnessv1.ApproveRepairRequest{RepairId: id, Reason: "mapping reviewed"}); err != nil {
		t.Fatal(err)
	}
	p.waitRepair(id, fitnessv1.RepairState_REPAIR_STATE_VERIFIED)

	for _, id := range ids {
		if got := p.schoolOf(detect, id); got != school {
			t.Errorf("record %d is under school %d after the rebuild, want %d", id, got, school)
		}
		if got := p.CurrentOf(detect, id); got != (current{Version: 1, Milli: 2210}) {
			t.Errorf("record %d after the rebuild = %+v, want v1 2.210", id, got)
		}
	}
	if _, again := p.reconcileRun(detect); len(again) != 0 {
		t.Errorf("campaign %d after the rebuild: %d discrepancies: %v", detect, len(again), classes(again))
	}
}

// schoolOf is the school the projection's current state shows a record under
// (0 when it has none).
func (p *platform) schoolOf(detect, id int64) int64 {
	p.t.Helper()
	var s int64
	err := p.CH.Conn.QueryRow(context.Background(), "SELECT school_id FROM fitness_result_versions FINAL WHERE detect_id = ? AND data_id = ?", detect, id).Scan(&s)
	if err != nil {
		p.t.Fatalf("reading the school of record %d: %v", id, err)
	}
	return s
}
