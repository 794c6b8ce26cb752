package repairapi

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/platform/audit"
)

// stopAuditor records the audit entry of a call that passed validation and
// refuses it, so the call stops before the manager or a store is touched.
type stopAuditor struct{ begun *bool }

func (a stopAuditor) Begin(context.Context, audit.Entry) (string, error) {
	*a.begun = true
	return "", errors.New("fuzz: stop here")
}

func (stopAuditor) Finish(context.Context, string, string) error { return nil }

// FuzzMutatingRequests: the validation of every mutating RepairService RPC
// never panics; a request outside the documented ranges is INVALID_ARGUMENT
// and never audited; an accepted one goes on to the audit log (or, for the
// unaudited dry run PlanRepair, to the role check). The calls carry no
// caller and the auditor refuses, so nothing past validation runs.
func FuzzMutatingRequests(f *testing.F) {
	f.Add(uint8(0), "inc-7", "run-1", "rep-1", "INC-7", uint16(0), "d", false, int32(0), int32(0), int64(10001), int64(0), int64(0))
	f.Add(uint8(0), "", "", "", " ", uint16(3), "d", true, int32(-1), int32(0), int64(0), int64(-1), int64(-1))
	f.Add(uint8(1), "", "run-1", "", "", uint16(2), "", false, int32(65536), int32(-1), int64(0), int64(0), int64(0))
	f.Add(uint8(2), "", "", "rep-1", "stray writer", uint16(0), "", false, int32(0), int32(0), int64(0), int64(0), int64(0))
	f.Add(uint8(3), "", "", strings.Repeat("r", 65), strings.Repeat("x", 513), uint16(0), "", false, int32(0), int32(0), int64(0), int64(0), int64(0))
	f.Add(uint8(4), "", "", "rep-1", "", uint16(0), "", false, int32(0), int32(0), int64(0), int64(0), int64(0))
	f.Add(uint8(5), "rb-1", "", "", "mapping fixed", uint16(0), "", false, int32(2), int32(0), int64(10001), int64(3), int64(0))
	f.Add(uint8(5), "rb-1", "", "", "mapping fixed", uint16(0), "", false, int32(0), int32(0), int64(10001), int64(-3), int64(0))
	f.Add(uint8(6), "", "", "rb-1", "ok", uint16(0), "", false, int32(0), int32(0), int64(0), int64(0), int64(0))
	f.Add(uint8(7), "", "", "", "ok", uint16(0), "", false, int32(0), int32(0), int64(0), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, method uint8, requestID, runID, id, reason string, nIDs uint16, idPrefix string, dup bool,
		epoch, maxItems int32, detect, project, school int64) {
		var begun bool
		s := New(nil, nil, stopAuditor{&begun})
		ctx := context.Background()
		var ids []string
		for i := range int(nIDs) {
			ids = append(ids, idPrefix+strconv.Itoa(i))
		}
		if dup && len(ids) > 1 {
			ids[len(ids)-1] = ids[0]
		}
		okID := func(s string) bool { return s != "" && len(s) <= maxID }
		okReq := requestID != "" && len(requestID) <= apierr.MaxRequestID
		required := strings.TrimSpace(reason) != "" && len(reason) <= maxReason
		okIDs := len(ids) <= maxDiscrepancyIDs && (!dup || len(ids) <= 1)
		for _, d := range ids {
			okIDs = okIDs && okID(d)
		}
		okEpoch := epoch >= 0 && epoch <= 65535
		var err error
		var valid bool
		switch method % 8 {
		case 0:
			_, err = s.CreateRepair(ctx, &fitnessv1.CreateRepairRequest{RequestId: requestID, RunId: runID, Reason: reason, DiscrepancyIds: ids, RebuildEpoch: epoch})
			valid = okReq && okID(runID) && required && okIDs && okEpoch
		case 1:
			_, err = s.PlanRepair(ctx, &fitnessv1.PlanRepairRequest{RunId: runID, DiscrepancyIds: ids, RebuildEpoch: epoch, MaxItems: maxItems})
			valid = okID(runID) && okIDs && okEpoch && maxItems >= 0
		case 2:
			_, err = s.ApproveRepair(ctx, &fitnessv1.ApproveRepairRequest{RepairId: id, Reason: reason})
			valid = okID(id) && required
		case 3:
			_, err = s.VerifyRepair(ctx, &fitnessv1.VerifyRepairRequest{RepairId: id, Reason: reason})
			valid = okID(id) && len(reason) <= maxReason
		case 4:
			_, err = s.CancelRepair(ctx, &fitnessv1.CancelRepairRequest{RepairId: id, Reason: reason})
			valid = okID(id) && required
		case 5:
			_, err = s.StartRebuild(ctx, &fitnessv1.StartRebuildRequest{RequestId: requestID, Reason: reason, Epoch: epoch,
				Scope: &fitnessv1.ReconcileScope{DetectId: detect, ProjectId: project, SchoolId: school}})
			valid = okReq && detect > 0 && project >= 0 && school >= 0 && okEpoch && epoch != 0 && required
		case 6:
			_, err = s.ApproveRebuild(ctx, &fitnessv1.ApproveRebuildRequest{RebuildId: id, Reason: reason})
			valid = okID(id) && required
		case 7:
			_, err = s.CancelRebuild(ctx, &fitnessv1.CancelRebuildRequest{RebuildId: id, Reason: reason})
			valid = okID(id) && required
		}
		code := status.Code(err)
		switch {
		case code == codes.InvalidArgument:
			if valid || begun {
				t.Fatalf("method %d refused a valid request (audited %t): %v", method%8, begun, err)
			}
			if st, _ := status.FromError(err); len(st.Details()) == 0 {
				t.Fatalf("method %d refused without field details: %v", method%8, err)
			}
		case !valid:
			t.Fatalf("method %d accepted an invalid request: %v", method%8, err)
		case method%8 == 1 && code != codes.PermissionDenied, method%8 != 1 && (code != codes.Unavailable || !begun):
			t.Fatalf("method %d: %v (audited %t); want the role check or the audit log next", method%8, err, begun)
		}
	})
}

// FuzzPageToken: a page token of one list query (ListRepairs by run and
// state, ListRebuilds by campaign and state, ListRepairItems by repair)
// never continues another, and a forged or truncated one is refused or a
// positive position of the request's own query.
func FuzzPageToken(f *testing.F) {
	f.Add("run-1", int32(2), "run-1", int32(2), int64(42), "", 0)
	f.Add("run-1", int32(2), "run-1|2", int32(2), int64(42), "", 0)
	f.Add("a|1", int32(2), "a", int32(1), int64(2), "", 0)
	f.Add("run-1", int32(2), "run-1", int32(2), int64(4242), "", 1)
	f.Add("", int32(0), "", int32(0), int64(-5), "cmVwYWlyc3x8MHwtNQ", 0)
	f.Fuzz(func(t *testing.T, runA string, stA int32, runB string, stB int32, pos int64, forged string, cut int) {
		queries := func(run string, st int32) []string {
			return []string{fmt.Sprintf("repairs|%s|%d", run, st), fmt.Sprintf("rebuilds|%d|%d", len(run), st), "items|" + run}
		}
		qa, qb := queries(runA, stA), queries(runB, stB)
		for i := range qa {
			tok := pageToken(qa[i], pos)
			truncated := cut > 0 && cut < len(tok)
			if truncated {
				tok = tok[:len(tok)-cut]
			}
			for _, pt := range []string{tok, forged} {
				got, err := pagePosition(pt, qb[i])
				if err != nil {
					continue
				}
				if pt == "" {
					if got != 0 {
						t.Fatalf("empty token: position %d", got)
					}
					continue
				}
				if got <= 0 || (pt == tok && truncated) {
					t.Fatalf("token %q (cut by %d) continues %q at %d", pt, cut, qb[i], got)
				}
				if pt == tok && (qa[i] != qb[i] || got != pos) {
					t.Fatalf("a token of %q after %d continues %q at %d", qa[i], pos, qb[i], got)
				}
			}
		}
	})
}
