package resultapi

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/platform/apierr"
)

// refused fails unless err is INVALID_ARGUMENT with field details.
func refused(t *testing.T, err error) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.InvalidArgument || len(st.Details()) == 0 {
		t.Fatalf("refusal %v: want INVALID_ARGUMENT with field violations", err)
	}
}

// FuzzValidateRecord: RecordResult's validation never panics; it refuses
// with INVALID_ARGUMENT or accepts a request within the documented ranges,
// whose command carries the canonical result and unit.
func FuzzValidateRecord(f *testing.F) {
	f.Add("r-1", int64(900002), int64(10001), int64(4), int64(3), int64(8), int32(5), "2.21", "m")
	f.Add("r-1", int64(900002), int64(10001), int64(4), int64(3), int64(8), int32(5), "2.210", " Meters ")
	f.Add("", int64(0), int64(-1), int64(0), int64(0), int64(0), int32(0), "", "")
	f.Add(strings.Repeat("r", 65), int64(1), int64(1), int64(1), int64(99), int64(1), int32(13), "NaN", "furlong")
	f.Add("r", int64(1), int64(1), int64(1), int64(3), int64(1), int32(1), "4.5001", strings.Repeat("m", 17))
	f.Add("r", int64(1), int64(1), int64(1), int64(2), int64(1), int32(12), "-50", "cm")
	f.Fuzz(func(t *testing.T, requestID string, dataID, detectID, userID, projectID, schoolID int64, grade int32, result, unit string) {
		req := &fitnessv1.RecordResultRequest{RequestId: requestID, DataId: dataID, DetectId: detectID, UserId: userID,
			ProjectId: projectID, SchoolId: schoolID, Grade: grade, Result: result, Unit: unit}
		cmd, err := validateRecord(req)
		if err != nil {
			refused(t, err)
			return
		}
		if requestID == "" || len(requestID) > apierr.MaxRequestID || dataID <= 0 || detectID <= 0 || userID <= 0 || schoolID <= 0 ||
			grade < 1 || grade > 12 || len(unit) > maxUnit {
			t.Fatalf("accepted %v", req)
		}
		r, u, err := canonical.CheckResult(projectID, result, unit)
		if err != nil || cmd.Result != r || cmd.Unit != u || cmd.DataID != dataID || cmd.RequestID != requestID {
			t.Fatalf("accepted %v as %+v (CheckResult %q %q %v)", req, cmd, r, u, err)
		}
	})
}

// FuzzValidateChange: CorrectResult's and DeleteResult's validation never
// panics and accepts only requests within the documented ranges.
func FuzzValidateChange(f *testing.F) {
	f.Add("c-1", int64(8), int64(900002), int64(1), "2.31", "m", "typo")
	f.Add("c-1", int64(8), int64(900002), int64(0), "2.31", "metres", "")
	f.Add("", int64(-8), int64(0), int64(-1), "1e3", "", strings.Repeat("x", 513))
	f.Add(strings.Repeat("c", 64), int64(1), int64(1), int64(1<<62), "-0.000", "KG", strings.Repeat("x", 512))
	f.Fuzz(func(t *testing.T, requestID string, schoolID, dataID, expected int64, result, unit, reason string) {
		ok := requestID != "" && len(requestID) <= apierr.MaxRequestID && schoolID > 0 && dataID > 0 && expected > 0 && len(reason) <= maxReason
		creq := &fitnessv1.CorrectResultRequest{RequestId: requestID, SchoolId: schoolID, DataId: dataID, ExpectedVersion: expected,
			Result: result, Unit: unit, Reason: reason}
		cmd, err := validateCorrect(creq)
		if err != nil {
			refused(t, err)
		} else {
			_, derr := canonical.Decimal(result)
			_, uok := canonical.Unit(unit)
			if !ok || derr != nil || !uok || cmd.DataID != dataID || cmd.ExpectedVersion != expected || cmd.SchoolID != schoolID {
				t.Fatalf("accepted %v as %+v", creq, cmd)
			}
		}
		dreq := &fitnessv1.DeleteResultRequest{RequestId: requestID, SchoolId: schoolID, DataId: dataID, ExpectedVersion: expected, Reason: reason}
		dcmd, err := validateDelete(dreq)
		if err != nil {
			refused(t, err)
		} else if !ok || dcmd.DataID != dataID || dcmd.ExpectedVersion != expected || dcmd.SchoolID != schoolID {
			t.Fatalf("accepted %v as %+v", dreq, dcmd)
		}
	})
}

// FuzzListPageToken: a page token of one ListResults query never continues
// another query, a forged or truncated one is INVALID_ARGUMENT, and every
// accepted request has a page size in 1..maxPageSize and a positive
// continuation from a token issued for its own filter.
func FuzzListPageToken(f *testing.F) {
	f.Add(int64(10001), int64(8), int64(3), false, int64(10001), int64(8), int64(3), false, int64(900002), int32(10), "", 0)
	f.Add(int64(10001), int64(8), int64(3), false, int64(10001), int64(0), int64(3), false, int64(900002), int32(10), "", 0)
	f.Add(int64(10001), int64(8), int64(3), false, int64(10001), int64(8), int64(3), true, int64(900002), int32(0), "", 5)
	f.Add(int64(1), int64(2), int64(3), false, int64(1), int64(2), int64(3), false, int64(5), int32(-1), "djE6MToyOjM6ZmFsc2U6LTU", 0)
	f.Add(int64(1), int64(2), int64(3), false, int64(1), int64(2), int64(3), false, int64(5), int32(5000), "djE6MToyOjM6ZmFsc2U6", 0)
	f.Fuzz(func(t *testing.T, detectA, schoolA, projectA int64, delA bool, detectB, schoolB, projectB int64, delB bool,
		after int64, size int32, forged string, cut int) {
		a := &fitnessv1.ListResultsRequest{DetectId: detectA, SchoolId: schoolA, ProjectId: projectA, ShowDeleted: delA}
		b := &fitnessv1.ListResultsRequest{DetectId: detectB, SchoolId: schoolB, ProjectId: projectB, ShowDeleted: delB, PageSize: size}
		same := detectA == detectB && schoolA == schoolB && projectA == projectB && delA == delB
		if !same && listFilter(a) == listFilter(b) {
			t.Fatalf("queries %v and %v share the token scope %q", a, b, listFilter(a))
		}
		tok := pageToken(a, after)
		truncated := cut > 0 && cut < len(tok)
		if truncated {
			tok = tok[:len(tok)-cut]
		}
		for _, pt := range []string{tok, forged} {
			b.PageToken = pt
			q, err := validateList(b)
			if err != nil {
				refused(t, err)
				continue
			}
			if q.Limit < 2 || q.Limit > maxPageSize+1 || q.DetectID <= 0 || q.SchoolID < 0 || q.ProjectID < 0 || (pt != "" && q.AfterDataID <= 0) {
				t.Fatalf("accepted %v as %+v", b, q)
			}
			if pt == "" {
				continue
			}
			if pt == tok && truncated {
				t.Fatalf("a token of %v cut by %d continues %v after %d", a, cut, b, q.AfterDataID)
			}
			if pt == tok && (!same || q.AfterDataID != after) {
				t.Fatalf("a token of %v after %d continues %v after %d", a, after, b, q.AfterDataID)
			}
		}
	})
}
