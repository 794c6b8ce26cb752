package reconcilesvc_test

import (
	"fmt"
	"testing"
	"time"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
)

// TestSchedulerFindsDriftNobodyAskedAbout: the server main builds, with a
// short schedule, over a campaign of 20 records whose ClickHouse side
// drifted (one record stale, one missing, one unexpected). Nobody starts a
// run: the scheduler's run appears, stored like any other with the
// scheduler as requester, and reports the three; ListCampaigns shows the
// campaign run but not clean. The drift is fixed in ClickHouse: the next
// scheduled run is clean, ListCampaigns shows it as the last clean run, and
// the first run's discrepancies are resolved by it.
func TestSchedulerFindsDriftNobodyAskedAbout(t *testing.T) {
	e := newEnv(t)
	const stale, missing, unexpected = int64(800003), int64(800007), int64(899999)
	row := func(id, version int64) chstore.Row {
		return chstore.Row{DetectID: 10001, DataID: id, UserID: 4, ProjectID: 3, SchoolID: 7, Grade: 5, Version: version,
			Result: "2.21", Unit: "m", EventID: fmt.Sprintf("fitness-result-%d-v%d", id, version), ShardID: "shard-x"}
	}
	var rows []chstore.Row
	for id := int64(800001); id <= 800020; id++ {
		e.record(t, id)
		if id == stale {
			if _, err := e.shards[e.m.Owner(id)].DB.Exec("UPDATE fitness_result SET version = 2 WHERE data_id = ?", id); err != nil {
				t.Fatal(err)
			}
		}
		if id != missing {
			rows = append(rows, row(id, 1))
		}
	}
	rows = append(rows, row(unexpected, 1))
	if err := e.proj.Insert(t.Context(), rows); err != nil {
		t.Fatal(err)
	}
	r := e.startWith(t, "--schedule-interval=200ms", "--schedule-period=1h", "--schedule-lease-ttl=1s")
	viewer := operator()

	// waitRun waits for a scheduled, terminal run other than skip.
	waitScheduled := func(skip map[string]bool) reconcile.Run {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			runs, _, err := e.store.List(t.Context(), 10001, 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			for i := len(runs) - 1; i >= 0; i-- {
				if x := runs[i]; !skip[x.ID] && x.Terminal() && x.Depth == reconcile.DepthVersions {
					return x
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no scheduled run (runs: %+v)", runs)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	first := waitScheduled(nil)
	if first.CreatedBy != reconcile.SchedulerCreatedBy || first.State != reconcile.StateSucceeded {
		t.Fatalf("first scheduled run: by %q, %s (%s %s)", first.CreatedBy, first.State, first.Message, first.Error)
	}
	resp, err := r.rc.ListDiscrepancies(viewer, &fitnessv1.ListDiscrepanciesRequest{RunId: first.ID, UnresolvedOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]fitnessv1.DiscrepancyClass{}
	for _, d := range resp.GetDiscrepancies() {
		got[d.GetDataId()] = d.GetClass()
	}
	want := map[int64]fitnessv1.DiscrepancyClass{stale: fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_STALE_TARGET_VERSION,
		missing: fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_MISSING_IN_TARGET, unexpected: fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_UNEXPECTED_TARGET_RECORD}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the scheduled run reported %v; want %v", got, want)
	}
	camps, err := r.rc.ListCampaigns(viewer, &fitnessv1.ListCampaignsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if cs := camps.GetCampaigns(); len(cs) != 1 || cs[0].GetDetectId() != 10001 || cs[0].GetLastRunId() == "" || cs[0].GetLastCleanRunId() != "" {
		t.Fatalf("ListCampaigns = %v", cs)
	}

	// The drift is fixed in ClickHouse (no source change).
	if err := e.proj.Insert(t.Context(), []chstore.Row{row(stale, 2), row(missing, 1), func() chstore.Row { x := row(unexpected, 2); x.IsDeleted = true; return x }()}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		camps, err = r.rc.ListCampaigns(viewer, &fitnessv1.ListCampaignsRequest{PageSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		if c := camps.GetCampaigns(); len(c) == 1 && c[0].GetLastCleanRunId() != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no clean scheduled run: %v", camps.GetCampaigns())
		}
		time.Sleep(100 * time.Millisecond)
	}
	clean := camps.GetCampaigns()[0].GetLastCleanRunId()
	resp, err = r.rc.ListDiscrepancies(viewer, &fitnessv1.ListDiscrepanciesRequest{RunId: first.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range resp.GetDiscrepancies() {
		if !d.GetResolved() || d.GetResolvedByRunId() != clean || d.GetResolution() != fitnessv1.DiscrepancyResolution_DISCREPANCY_RESOLUTION_CLEAN_RUN || d.GetResolveTime() == nil {
			t.Errorf("discrepancy of %d after the clean run %s: %v", d.GetDataId(), clean, d)
		}
	}
	if resp, err := r.rc.ListDiscrepancies(viewer, &fitnessv1.ListDiscrepanciesRequest{RunId: first.ID, UnresolvedOnly: true}); err != nil || len(resp.GetDiscrepancies()) != 0 {
		t.Errorf("unresolved after the clean run: %v, %v", resp.GetDiscrepancies(), err)
	}
}
