// Package schoolscope checks that every RPC of every service acts only for
// the caller's schools: a caller of school 7 (a signed token, admin role so
// that only its school can refuse it) drives every method against school
// 8's data and gets PERMISSION_DENIED with nothing written, and the gateway
// answers 403 the same way. Real MySQL shards and control database,
// ClickHouse and Pulsar, through pkg/testkit/platformtest.
package schoolscope

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/audit"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/service/gatewaysvc"
	"github.com/resultsync/resultsync/pkg/testkit/platformtest"
	"github.com/resultsync/resultsync/pkg/testkit/reconcileapitest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

const (
	detect     = 4108
	own        = 7001 // school 7's record
	theirs     = 8001 // school 8's records
	theirs2    = 8002
	unrepaired = 8009 // school 8's record on its shard only: a discrepancy
	newID      = 8100 // a record school 7 tries to write for school 8
)

// fingerprint is everything the table's calls could write: every shard's
// records and outbox, the control database's runs, discrepancies, repairs
// and rebuilds, and the projection.
func fingerprint(t *testing.T, p *platformtest.Platform) string {
	t.Helper()
	var out []string
	q := func(db *sql.DB, query string) {
		var a, b, c sql.NullInt64
		if err := db.QueryRow(query).Scan(&a, &b, &c); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		out = append(out, fmt.Sprintf("%d/%d/%d", a.Int64, b.Int64, c.Int64))
	}
	for _, db := range p.ShardDBs {
		q(db, "SELECT COUNT(*), SUM(version), SUM(is_deleted) FROM fitness_result")
		q(db, "SELECT COUNT(*), SUM(CHAR_LENGTH(status)), MAX(id) FROM outbox_event")
	}
	for _, table := range []string{"reconcile_run", "discrepancy", "repair", "repair_item", "repair_request", "rebuild", "repair_transition"} {
		q(p.Control.DB, "SELECT COUNT(*), 0, 0 FROM "+table)
	}
	var rows uint64
	var versions int64
	if err := p.CH.Conn.QueryRow(context.Background(), "SELECT count(), sum(version) FROM fitness_result_versions").Scan(&rows, &versions); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " ") + fmt.Sprintf(" ch=%d/%d", rows, versions)
}

// call is one RPC as the caller of school 7.
type call struct {
	method string // "Service/Method"
	do     func(ctx context.Context) error
	want   codes.Code
}

// recv1 opens a server stream and returns the first message's error.
func recv1[T any](s interface{ Recv() (T, error) }, err error) error {
	if err != nil {
		return err
	}
	_, err = s.Recv()
	return err
}

func TestSchoolSevenCannotTouchSchoolEight(t *testing.T) {
	p := platformtest.New(t)
	op := platformtest.Operator
	for _, id := range []int64{theirs, theirs2} {
		p.Record(detect, id, 8, "2.31")
	}
	p.Record(detect, own, 7, "2.41")
	for _, id := range []int64{theirs, theirs2, own} {
		p.WaitVersion(detect, id, 1)
	}
	// A school-8 record on its shard only (no outbox event): a discrepancy
	// for a repair of school 8.
	if _, err := p.ShardDBs[p.Shards.Owner(unrepaired)].Exec(`INSERT INTO fitness_result
		(data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
		VALUES (?, ?, 4, 3, 8, 5, '2.21', 'm', 1, 0, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`, unrepaired, detect); err != nil {
		t.Fatal(err)
	}
	run := reconcileapitest.Run(t, p.Reconcile, op, &fitnessv1.ReconcileScope{DetectId: detect, SchoolId: 8},
		fitnessv1.ReconcileDepth_RECONCILE_DEPTH_CONTENT, time.Minute)
	if run.GetState() != fitnessv1.RunState_RUN_STATE_SUCCEEDED || run.GetDiscrepancyCount() != 1 {
		t.Fatalf("school 8's run = %v", run)
	}
	created, err := p.Repair.CreateRepair(op(), &fitnessv1.CreateRepairRequest{RequestId: "school-8-repair", RunId: run.GetRunId(), Reason: "school 8's missing row"})
	if err != nil {
		t.Fatal(err)
	}
	rep := created.GetRepairs()[0].GetRepairId()
	// Let the repair end (it replays the record, verifies and settles), so
	// that nothing moves while the table runs.
	watchCtx, cancel := context.WithTimeout(op(), 2*time.Minute)
	defer cancel()
	ws, err := p.Repair.WatchRepair(watchCtx, &fitnessv1.WatchRepairRequest{RepairId: rep})
	if err != nil {
		t.Fatal(err)
	}
	for {
		m, err := ws.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("watching school 8's repair: %v", err)
		}
		t.Logf("school 8's repair: %s", m.GetRepair().GetState())
	}
	outbox := fitnessv1.NewOutboxServiceClient(p.Dial(p.RelayAddr))
	projection := fitnessv1.NewProjectionServiceClient(p.Dial(p.ConsumerAddr))

	as7 := func() context.Context { return p.AsSchool("teacher-7", auth.RoleAdmin, 7) }
	// The school-7 caller's own data works: the refusals below are for the school.
	if _, err := p.Results.GetResult(as7(), &fitnessv1.GetResultRequest{SchoolId: 7, DataId: own}); err != nil {
		t.Fatalf("school 7 reading its own record: %v", err)
	}
	if _, err := p.Results.ListResults(as7(), &fitnessv1.ListResultsRequest{DetectId: detect, SchoolId: 7}); err != nil {
		t.Fatalf("school 7 listing its own results: %v", err)
	}
	// A platform-wide signed token crosses schools.
	if _, err := p.Results.GetResult(p.AsSchool("platform-ops", auth.RoleViewer), &fitnessv1.GetResultRequest{SchoolId: 8, DataId: theirs}); err != nil {
		t.Fatalf("platform-wide reading school 8: %v", err)
	}

	pd := codes.PermissionDenied
	scope8 := &fitnessv1.ReconcileScope{DetectId: detect, SchoolId: 8}
	calls := []call{
		{"ResultService/RecordResult", func(ctx context.Context) error {
			_, err := p.Results.RecordResult(ctx, &fitnessv1.RecordResultRequest{RequestId: "s7-rec", DataId: newID, DetectId: detect, UserId: 5,
				ProjectId: 3, SchoolId: 8, Grade: 5, Result: "2.11", Unit: "m"})
			return err
		}, pd},
		{"ResultService/CorrectResult", func(ctx context.Context) error {
			_, err := p.Results.CorrectResult(ctx, &fitnessv1.CorrectResultRequest{RequestId: "s7-cor", SchoolId: 8, DataId: theirs,
				ExpectedVersion: 1, Result: "1.11", Unit: "m", Reason: "x"})
			return err
		}, pd},
		{"ResultService/CorrectResult naming school 7", func(ctx context.Context) error {
			_, err := p.Results.CorrectResult(ctx, &fitnessv1.CorrectResultRequest{RequestId: "s7-cor7", SchoolId: 7, DataId: theirs,
				ExpectedVersion: 1, Result: "1.11", Unit: "m", Reason: "x"})
			return err
		}, codes.NotFound},
		{"ResultService/DeleteResult", func(ctx context.Context) error {
			_, err := p.Results.DeleteResult(ctx, &fitnessv1.DeleteResultRequest{RequestId: "s7-del", SchoolId: 8, DataId: theirs2, ExpectedVersion: 1, Reason: "x"})
			return err
		}, pd},
		{"ResultService/DeleteResult naming school 7", func(ctx context.Context) error {
			_, err := p.Results.DeleteResult(ctx, &fitnessv1.DeleteResultRequest{RequestId: "s7-del7", SchoolId: 7, DataId: theirs2, ExpectedVersion: 1, Reason: "x"})
			return err
		}, codes.NotFound},
		{"ResultService/GetResult", func(ctx context.Context) error {
			_, err := p.Results.GetResult(ctx, &fitnessv1.GetResultRequest{SchoolId: 8, DataId: theirs})
			return err
		}, pd},
		{"ResultService/GetResult naming school 7", func(ctx context.Context) error {
			_, err := p.Results.GetResult(ctx, &fitnessv1.GetResultRequest{SchoolId: 7, DataId: theirs})
			return err
		}, codes.NotFound},
		{"ResultService/ListResults", func(ctx context.Context) error {
			_, err := p.Results.ListResults(ctx, &fitnessv1.ListResultsRequest{DetectId: detect, SchoolId: 8})
			return err
		}, pd},
		{"ResultService/ListResults of every school", func(ctx context.Context) error {
			_, err := p.Results.ListResults(ctx, &fitnessv1.ListResultsRequest{DetectId: detect})
			return err
		}, pd},
		{"ReconcileService/StartReconciliationRun", func(ctx context.Context) error {
			_, err := p.Reconcile.StartReconciliationRun(ctx, &fitnessv1.StartReconciliationRunRequest{Scope: scope8,
				Depth: fitnessv1.ReconcileDepth_RECONCILE_DEPTH_COUNTS})
			return err
		}, pd},
		{"ReconcileService/StartReconciliationRun campaign-wide", func(ctx context.Context) error {
			_, err := p.Reconcile.StartReconciliationRun(ctx, &fitnessv1.StartReconciliationRunRequest{Scope: &fitnessv1.ReconcileScope{DetectId: detect},
				Depth: fitnessv1.ReconcileDepth_RECONCILE_DEPTH_COUNTS})
			return err
		}, pd},
		{"ReconcileService/GetReconciliationRun", func(ctx context.Context) error {
			_, err := p.Reconcile.GetReconciliationRun(ctx, &fitnessv1.GetReconciliationRunRequest{RunId: run.GetRunId()})
			return err
		}, pd},
		{"ReconcileService/ListReconciliationRuns", func(ctx context.Context) error {
			resp, err := p.Reconcile.ListReconciliationRuns(ctx, &fitnessv1.ListReconciliationRunsRequest{DetectId: detect})
			if err == nil && len(resp.GetRuns()) > 0 {
				return fmt.Errorf("school 7 listed school 8's runs: %v", resp.GetRuns())
			}
			return denyEmpty(err)
		}, pd},
		{"ReconcileService/WatchReconciliationRun", func(ctx context.Context) error {
			return recv1(p.Reconcile.WatchReconciliationRun(ctx, &fitnessv1.WatchReconciliationRunRequest{RunId: run.GetRunId()}))
		}, pd},
		{"ReconcileService/ListDiscrepancies", func(ctx context.Context) error {
			_, err := p.Reconcile.ListDiscrepancies(ctx, &fitnessv1.ListDiscrepanciesRequest{RunId: run.GetRunId()})
			return err
		}, pd},
		{"ReconcileService/ListCampaigns", func(ctx context.Context) error {
			_, err := p.Reconcile.ListCampaigns(ctx, &fitnessv1.ListCampaignsRequest{})
			return err
		}, pd},
		{"RepairService/CreateRepair", func(ctx context.Context) error {
			_, err := p.Repair.CreateRepair(ctx, &fitnessv1.CreateRepairRequest{RequestId: "s7-repair", RunId: run.GetRunId(), Reason: "x"})
			return err
		}, pd},
		{"RepairService/PlanRepair", func(ctx context.Context) error {
			_, err := p.Repair.PlanRepair(ctx, &fitnessv1.PlanRepairRequest{RunId: run.GetRunId()})
			return err
		}, pd},
		{"RepairService/ApproveRepair", func(ctx context.Context) error {
			_, err := p.Repair.ApproveRepair(ctx, &fitnessv1.ApproveRepairRequest{RepairId: rep, Reason: "x"})
			return err
		}, pd},
		{"RepairService/GetRepair", func(ctx context.Context) error {
			_, err := p.Repair.GetRepair(ctx, &fitnessv1.GetRepairRequest{RepairId: rep})
			return err
		}, pd},
		{"RepairService/ListRepairs", func(ctx context.Context) error {
			resp, err := p.Repair.ListRepairs(ctx, &fitnessv1.ListRepairsRequest{RunId: run.GetRunId()})
			if err == nil && len(resp.GetRepairs()) > 0 {
				return fmt.Errorf("school 7 listed school 8's repairs: %v", resp.GetRepairs())
			}
			return denyEmpty(err)
		}, pd},
		{"RepairService/ListRepairItems", func(ctx context.Context) error {
			_, err := p.Repair.ListRepairItems(ctx, &fitnessv1.ListRepairItemsRequest{RepairId: rep})
			return err
		}, pd},
		{"RepairService/VerifyRepair", func(ctx context.Context) error {
			_, err := p.Repair.VerifyRepair(ctx, &fitnessv1.VerifyRepairRequest{RepairId: rep})
			return err
		}, pd},
		{"RepairService/WatchRepair", func(ctx context.Context) error {
			return recv1(p.Repair.WatchRepair(ctx, &fitnessv1.WatchRepairRequest{RepairId: rep}))
		}, pd},
		{"RepairService/CancelRepair", func(ctx context.Context) error {
			_, err := p.Repair.CancelRepair(ctx, &fitnessv1.CancelRepairRequest{RepairId: rep, Reason: "x"})
			return err
		}, pd},
		{"RepairService/StartRebuild", func(ctx context.Context) error {
			_, err := p.Repair.StartRebuild(ctx, &fitnessv1.StartRebuildRequest{RequestId: "s7-rebuild", Scope: scope8, Epoch: 2, Reason: "x"})
			return err
		}, pd},
		{"RepairService/ApproveRebuild", func(ctx context.Context) error {
			_, err := p.Repair.ApproveRebuild(ctx, &fitnessv1.ApproveRebuildRequest{RebuildId: "rb-of-school-8", Reason: "x"})
			return err
		}, pd},
		{"RepairService/GetRebuild", func(ctx context.Context) error {
			_, err := p.Repair.GetRebuild(ctx, &fitnessv1.GetRebuildRequest{RebuildId: "rb-of-school-8"})
			return err
		}, pd},
		{"RepairService/ListRebuilds", func(ctx context.Context) error {
			_, err := p.Repair.ListRebuilds(ctx, &fitnessv1.ListRebuildsRequest{DetectId: detect})
			return err
		}, pd},
		{"RepairService/WatchRebuild", func(ctx context.Context) error {
			return recv1(p.Repair.WatchRebuild(ctx, &fitnessv1.WatchRebuildRequest{RebuildId: "rb-of-school-8"}))
		}, pd},
		{"RepairService/CancelRebuild", func(ctx context.Context) error {
			_, err := p.Repair.CancelRebuild(ctx, &fitnessv1.CancelRebuildRequest{RebuildId: "rb-of-school-8", Reason: "x"})
			return err
		}, pd},
		{"OutboxService/ListOutboxEvents", func(ctx context.Context) error {
			_, err := outbox.ListOutboxEvents(ctx, &fitnessv1.ListOutboxEventsRequest{ShardId: p.Shards.Shards[0].ID})
			return err
		}, pd},
		{"OutboxService/GetOutboxStats", func(ctx context.Context) error {
			_, err := outbox.GetOutboxStats(ctx, &fitnessv1.GetOutboxStatsRequest{})
			return err
		}, pd},
		{"OutboxService/ReplayParkedEvents", func(ctx context.Context) error {
			_, err := outbox.ReplayParkedEvents(ctx, &fitnessv1.ReplayParkedEventsRequest{ShardId: p.Shards.Shards[0].ID, DataId: theirs, Reason: "x"})
			return err
		}, pd},
		{"ProjectionService/GetProjectionStatus", func(ctx context.Context) error {
			_, err := projection.GetProjectionStatus(ctx, &fitnessv1.GetProjectionStatusRequest{})
			return err
		}, pd},
		{"ProjectionService/ListDeadLetters", func(ctx context.Context) error {
			_, err := projection.ListDeadLetters(ctx, &fitnessv1.ListDeadLettersRequest{})
			return err
		}, pd},
	}

	// Every method of every service is in the table.
	covered := map[string]bool{}
	for _, c := range calls {
		covered[strings.Fields(c.method)[0]] = true
	}
	for _, sd := range []grpc.ServiceDesc{fitnessv1.ResultService_ServiceDesc, fitnessv1.ReconcileService_ServiceDesc,
		fitnessv1.RepairService_ServiceDesc, fitnessv1.OutboxService_ServiceDesc, fitnessv1.ProjectionService_ServiceDesc} {
		svc := sd.ServiceName[strings.LastIndex(sd.ServiceName, ".")+1:]
		var names []string
		for _, m := range sd.Methods {
			names = append(names, m.MethodName)
		}
		for _, s := range sd.Streams {
			names = append(names, s.StreamName)
		}
		for _, n := range names {
			if !covered[svc+"/"+n] {
				t.Errorf("%s/%s is not in the table", svc, n)
			}
		}
	}

	before := fingerprint(t, p)
	for _, c := range calls {
		t.Run(c.method, func(t *testing.T) {
			err := c.do(as7())
			if got := status.Code(err); got != c.want {
				t.Fatalf("%v (%v); want %s", got, err, c.want)
			}
		})
	}
	if after := fingerprint(t, p); after != before {
		t.Errorf("the refused calls wrote:\nbefore %s\nafter  %s", before, after)
	}
	// Still at version 1, still school 8's.
	for _, id := range []int64{theirs, theirs2} {
		got, err := p.Results.GetResult(op(), &fitnessv1.GetResultRequest{SchoolId: 8, DataId: id})
		if err != nil || got.GetResult().GetVersion() != 1 || got.GetResult().GetIsDeleted() || got.GetResult().GetResult() != "2.31" {
			t.Errorf("record %d after the refusals: %v, %v", id, got.GetResult(), err)
		}
	}
	// The refused mutations of the repair service are audited with the
	// token's subject.
	entries, err := audit.New(p.Control.DB).List(context.Background(), "", 100)
	if err != nil {
		t.Fatal(err)
	}
	refused := map[string]bool{}
	for _, e := range entries {
		if e.Caller == "teacher-7" {
			if !strings.HasPrefix(e.Outcome, "refused: ") || !strings.Contains(e.Outcome, "school") && !strings.Contains(e.Outcome, "platform-wide") {
				t.Errorf("audit entry %+v: want a refusal naming the school", e)
			}
			refused[e.Action] = true
		}
	}
	for _, a := range []string{"repair.create", "repair.approve", "repair.verify", "repair.cancel", "rebuild.start", "rebuild.approve", "rebuild.cancel"} {
		if !refused[a] {
			t.Errorf("no audit entry of teacher-7's refused %s (refused: %v)", a, slices.Sorted(maps.Keys(refused)))
		}
	}

	t.Run("gateway", func(t *testing.T) {
		api := startGateway(t, p)
		tok7 := p.Token("teacher-7", auth.RoleAdmin, 7)
		for _, tc := range []struct {
			method, path string
			want         int
		}{
			{"GET", fmt.Sprintf("/v1/schools/8/results/%d", theirs), http.StatusForbidden},
			{"GET", fmt.Sprintf("/v1/schools/7/results/%d", theirs), http.StatusNotFound},
			{"GET", fmt.Sprintf("/v1/schools/7/results/%d", own), http.StatusOK},
			{"POST", fmt.Sprintf("/v1/schools/8/results/%d:delete", theirs2), http.StatusForbidden},
		} {
			body := ""
			if tc.method == "POST" {
				body = `{"requestId": "gw-s7-del", "expectedVersion": "1", "reason": "x"}`
			}
			req, err := http.NewRequest(tc.method, api+tc.path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+tok7)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("%s %s = %d %s; want %d", tc.method, tc.path, resp.StatusCode, b, tc.want)
			}
		}
		if after := fingerprint(t, p); after != before {
			t.Errorf("the gateway's refused calls wrote:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// denyEmpty: a list that hides other schools' items is the expected
// outcome of a list call; the table counts it as the refusal.
func denyEmpty(err error) error {
	if err == nil {
		return status.Error(codes.PermissionDenied, "nothing of school 8 listed")
	}
	return err
}

// startGateway runs a gateway in front of the platform's servers and returns
// its JSON API base URL.
func startGateway(t *testing.T, p *platformtest.Platform) string {
	t.Helper()
	var gw *gatewaysvc.Service
	platformtest.Serve(t, "gateway", func(ctx context.Context) (servertest.Runner, error) {
		cfg, err := gatewaysvc.Load(p.GatewayArgs("--api-addr=127.0.0.1:0", "--openapi-file=../../gen/openapiv2/resultsync.swagger.json",
			"--results-addr="+p.ResultsAddr, "--relay-addr="+p.RelayAddr, "--consumer-addr="+p.ConsumerAddr,
			"--reconcile-addr="+p.ReconcileAddr, "--repair-addr="+p.RepairAddr))
		if err != nil {
			return nil, err
		}
		gw, err = gatewaysvc.New(ctx, p.Log, cfg)
		return gw, err
	})
	if gw == nil {
		t.Fatal(errors.New("gateway not started"))
	}
	return "http://" + gw.APIAddr()
}
