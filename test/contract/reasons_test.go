package contract

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/platformtest"
)

// TestErrorReasons provokes the error paths of every service on the real
// engines (MySQL shards and control database, ClickHouse, Pulsar) and
// checks each answer's code and its ErrorInfo reason (domain
// resultsync.fitness.v1), the reason in apierr.Catalogue with that code,
// BadRequest with FIELD_VIOLATION and RetryInfo where the catalogue waits;
// the authentication interceptor's bare statuses get their ErrorInfo from
// apierr's server interceptor.
func TestErrorReasons(t *testing.T) {
	p := platformtest.New(t)
	const detect, id, school = 4208, 42001, 7
	p.Record(detect, id, school, "2.31")
	op, admin := platformtest.Operator, platformtest.Alice
	outbox := fitnessv1.NewOutboxServiceClient(p.Dial(p.RelayAddr))
	projection := fitnessv1.NewProjectionServiceClient(p.Dial(p.ConsumerAddr))
	ctx := context.Background()

	tests := []struct {
		name   string
		do     func() error
		code   codes.Code
		reason apierr.Reason
	}{
		{"ResultService/GetResult unknown", func() error {
			_, err := p.Results.GetResult(op(), &fitnessv1.GetResultRequest{DataId: 49999, SchoolId: school})
			return err
		}, codes.NotFound, apierr.ResultNotFound},
		{"ResultService/RecordResult invalid", func() error {
			_, err := p.Results.RecordResult(op(), &fitnessv1.RecordResultRequest{DataId: 42002})
			return err
		}, codes.InvalidArgument, apierr.FieldViolation},
		{"ResultService/RecordResult taken", func() error {
			_, err := p.Results.RecordResult(op(), &fitnessv1.RecordResultRequest{RequestId: "taken-42001", DataId: id, DetectId: detect,
				UserId: 2, ProjectId: 3, SchoolId: school, Grade: 5, Result: "2.51", Unit: "m"})
			return err
		}, codes.AlreadyExists, apierr.ResultExists},
		{"ResultService/RecordResult request_id reused", func() error {
			_, err := p.Results.RecordResult(op(), &fitnessv1.RecordResultRequest{RequestId: "rec-42001", DataId: 42003, DetectId: detect,
				UserId: 2, ProjectId: 3, SchoolId: school, Grade: 5, Result: "2.51", Unit: "m"})
			return err
		}, codes.FailedPrecondition, apierr.RequestIDReused},
		{"ResultService/CorrectResult stale version", func() error {
			_, err := p.Results.CorrectResult(op(), &fitnessv1.CorrectResultRequest{RequestId: "stale-42001", SchoolId: school, DataId: id,
				ExpectedVersion: 7, Result: "2.41", Unit: "m", Reason: "typo"})
			return err
		}, codes.Aborted, apierr.VersionConflict},
		{"ResultService/ListResults bad page token", func() error { // with the other fields' violations
			_, err := p.Results.ListResults(op(), &fitnessv1.ListResultsRequest{DetectId: detect, SchoolId: school, PageToken: "x"})
			return err
		}, codes.InvalidArgument, apierr.FieldViolation},
		{"ResultService/GetResult without a token", func() error {
			_, err := p.Results.GetResult(ctx, &fitnessv1.GetResultRequest{DataId: id, SchoolId: school})
			return err
		}, codes.Unauthenticated, apierr.Unauthenticated},
		{"ResultService/RecordResult as a viewer", func() error {
			_, err := p.Results.RecordResult(platformtest.Viewer(), &fitnessv1.RecordResultRequest{RequestId: "v-1", DataId: 42004})
			return err
		}, codes.PermissionDenied, apierr.Denied},
		{"ReconcileService/GetReconciliationRun unknown", func() error {
			_, err := p.Reconcile.GetReconciliationRun(op(), &fitnessv1.GetReconciliationRunRequest{RunId: "0123456789abcdef0123456789abcdef"})
			return err
		}, codes.NotFound, apierr.RunNotFound},
		{"ReconcileService/StartReconciliationRun invalid", func() error {
			_, err := p.Reconcile.StartReconciliationRun(op(), &fitnessv1.StartReconciliationRunRequest{SampleRate: 2})
			return err
		}, codes.InvalidArgument, apierr.FieldViolation},
		{"ReconcileService/StartReconciliationRun unknown campaign", func() error {
			_, err := p.Reconcile.StartReconciliationRun(op(), &fitnessv1.StartReconciliationRunRequest{Scope: &fitnessv1.ReconcileScope{DetectId: 4299},
				Depth: fitnessv1.ReconcileDepth_RECONCILE_DEPTH_COUNTS})
			return err
		}, codes.NotFound, apierr.CampaignNotFound},
		{"ReconcileService/ListDiscrepancies without run_id", func() error {
			_, err := p.Reconcile.ListDiscrepancies(op(), &fitnessv1.ListDiscrepanciesRequest{})
			return err
		}, codes.InvalidArgument, apierr.FieldViolation},
		{"RepairService/GetRepair unknown", func() error {
			_, err := p.Repair.GetRepair(admin(), &fitnessv1.GetRepairRequest{RepairId: "0123456789abcdef0123456789abcdef"})
			return err
		}, codes.NotFound, apierr.RepairNotFound},
		{"RepairService/GetRebuild unknown", func() error {
			_, err := p.Repair.GetRebuild(admin(), &fitnessv1.GetRebuildRequest{RebuildId: "0123456789abcdef0123456789abcdef"})
			return err
		}, codes.NotFound, apierr.RebuildNotFound},
		{"RepairService/CreateRepair of an unknown run", func() error {
			_, err := p.Repair.CreateRepair(admin(), &fitnessv1.CreateRepairRequest{RequestId: "r-unknown", RunId: "0123456789abcdef0123456789abcdef", Reason: "x"})
			return err
		}, codes.NotFound, apierr.RunNotFound},
		{"RepairService/CreateRepair invalid", func() error {
			_, err := p.Repair.CreateRepair(admin(), &fitnessv1.CreateRepairRequest{})
			return err
		}, codes.InvalidArgument, apierr.FieldViolation},
		{"OutboxService/ListOutboxEvents unknown shard", func() error {
			_, err := outbox.ListOutboxEvents(admin(), &fitnessv1.ListOutboxEventsRequest{ShardId: "shard-9"})
			return err
		}, codes.NotFound, apierr.ShardNotFound},
		{"OutboxService/ReplayParkedEvents without a reason", func() error {
			_, err := outbox.ReplayParkedEvents(admin(), &fitnessv1.ReplayParkedEventsRequest{ShardId: p.Shards.Shards[0].ID})
			return err
		}, codes.InvalidArgument, apierr.FieldViolation},
		{"OutboxService/ReplayParkedEvents request_id reused", func() error {
			first := &fitnessv1.ReplayParkedEventsRequest{ShardId: p.Shards.Shards[0].ID, Reason: "broker fixed", RequestId: "replay-42001"}
			if _, err := outbox.ReplayParkedEvents(admin(), first); err != nil {
				return err
			}
			_, err := outbox.ReplayParkedEvents(admin(), &fitnessv1.ReplayParkedEventsRequest{ShardId: p.Shards.Shards[0].ID, Reason: "another reason",
				RequestId: "replay-42001"})
			return err
		}, codes.FailedPrecondition, apierr.RequestIDReused},
		{"ReconcileService/StartReconciliationRun request_id reused", func() error {
			scope := &fitnessv1.ReconcileScope{DetectId: detect, SchoolId: school}
			if _, err := p.Reconcile.StartReconciliationRun(op(), &fitnessv1.StartReconciliationRunRequest{Scope: scope,
				Depth: fitnessv1.ReconcileDepth_RECONCILE_DEPTH_COUNTS, RequestId: "run-42001"}); err != nil {
				return err
			}
			_, err := p.Reconcile.StartReconciliationRun(op(), &fitnessv1.StartReconciliationRunRequest{Scope: scope,
				Depth: fitnessv1.ReconcileDepth_RECONCILE_DEPTH_CONTENT, RequestId: "run-42001"})
			return err
		}, codes.FailedPrecondition, apierr.RequestIDReused},
		{"OutboxService/ReplayParkedEvents while the same request is still being answered", func() error {
			return replayWhileAnswered(t, p, outbox)
		}, codes.Aborted, apierr.RequestInProgress},
		{"ProjectionService/ListDeadLetters bad page token", func() error {
			_, err := projection.ListDeadLetters(admin(), &fitnessv1.ListDeadLettersRequest{PageToken: "x"})
			return err
		}, codes.InvalidArgument, apierr.InvalidPageToken},
	}
	catalogue := map[apierr.Reason]codes.Code{}
	for _, e := range apierr.Catalogue {
		catalogue[e.Reason] = e.Code
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			st := status.Convert(err)
			reason, _ := apierr.ReasonOf(err)
			if st.Code() != tc.code || reason != tc.reason {
				t.Fatalf("%v %s (%q), want %v %s", st.Code(), reason, st.Message(), tc.code, tc.reason)
			}
			if c, ok := catalogue[reason]; !ok || c != tc.code {
				t.Errorf("reason %s: in the catalogue %v with %v", reason, ok, c)
			}
			var info, badRequest, retry bool
			for _, d := range st.Details() {
				switch d := d.(type) {
				case *errdetails.ErrorInfo:
					info = d.GetDomain() == apierr.Domain
				case *errdetails.BadRequest:
					badRequest = len(d.GetFieldViolations()) > 0
				case *errdetails.RetryInfo:
					retry = true
				}
			}
			if !info {
				t.Errorf("no ErrorInfo in %s: %v", apierr.Domain, st.Details())
			}
			if badRequest != (reason == apierr.FieldViolation) {
				t.Errorf("BadRequest %v for %s", badRequest, reason)
			}
			if retry != (apierr.RetryDelay(reason) > 0) {
				t.Errorf("RetryInfo %v for %s", retry, reason)
			}
		})
	}
}

// replayWhileAnswered provokes REQUEST_IN_PROGRESS: a record's outbox row
// is parked, then held by a transaction of the shard (FOR UPDATE), so a
// ReplayParkedEvents call replaying it waits inside its action; the same
// request sent again meanwhile is answered ABORTED REQUEST_IN_PROGRESS once
// the server's wait for the first call's answer (2 s) ran out. Then the
// lock goes, the first call answers (one row replayed), and the request
// sent a third time gets that answer. It returns the second call's error.
func replayWhileAnswered(t *testing.T, p *platformtest.Platform, outbox fitnessv1.OutboxServiceClient) error {
	t.Helper()
	const detect, id = 4298, 42981
	p.Record(detect, id, 7, "2.05")
	ctx := context.Background()
	// Parked once the relay is done with it (SENT), so no completion of an
	// in-flight claim can overwrite the state.
	shard := -1
	infratest.WaitFor(t, "the record's event SENT, then parked", 30*time.Second, func() bool {
		for i, db := range p.ShardDBs {
			res, err := db.ExecContext(ctx, "UPDATE outbox_event SET status = 'PARKED' WHERE data_id = ? AND status = 'SENT'", id)
			if err != nil {
				t.Fatalf("parking record %d's event: %v", id, err)
			}
			if n, _ := res.RowsAffected(); n == 1 {
				shard = i
			}
		}
		return shard >= 0
	})
	tx, err := p.ShardDBs[shard].BeginTx(ctx, &sql.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // released below; a no-op then
	var rowID int64
	if err := tx.QueryRowContext(ctx, "SELECT id FROM outbox_event WHERE data_id = ? FOR UPDATE", id).Scan(&rowID); err != nil {
		t.Fatalf("locking record %d's outbox row: %v", id, err)
	}

	req := &fitnessv1.ReplayParkedEventsRequest{ShardId: p.Shards.Shards[shard].ID, DataId: id, Reason: "broker fixed, INC-7",
		RequestId: "replay-busy-42981"}
	admin := platformtest.Alice
	type answer struct {
		resp *fitnessv1.ReplayParkedEventsResponse
		err  error
	}
	first := make(chan answer, 1)
	go func() {
		resp, err := outbox.ReplayParkedEvents(admin(), req)
		first <- answer{resp, err}
	}()
	// The first call has reserved the request and waits for the row.
	infratest.WaitFor(t, "the first call to reserve its request", 10*time.Second, func() bool {
		var state string
		err := p.Control.DB.QueryRowContext(ctx, "SELECT state FROM control_request WHERE method = 'ReplayParkedEvents' AND request_id = ?",
			req.GetRequestId()).Scan(&state)
		return err == nil && state == "IN_PROGRESS"
	})
	_, second := outbox.ReplayParkedEvents(admin(), req)

	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	var a answer
	select {
	case a = <-first:
	case <-time.After(30 * time.Second):
		t.Fatal("the first call never answered after the row was released")
	}
	if a.err != nil || a.resp.GetReplayedCount() != 1 {
		t.Errorf("first call = %v, %v; want 1 row replayed", a.resp, a.err)
	}
	third, err := outbox.ReplayParkedEvents(admin(), req)
	if err != nil || third.GetReplayedCount() != a.resp.GetReplayedCount() || third.GetAuditId() != a.resp.GetAuditId() {
		t.Errorf("the request sent again after the first answered = %v, %v; want the first answer %v", third, err, a.resp)
	}
	return second
}
