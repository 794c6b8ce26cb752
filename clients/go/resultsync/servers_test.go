package resultsync_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/resultsync/resultsync/clients/go/resultsync"
	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
)

// The tests below run against the servers deploy/local/test-clients.sh
// starts (clients/go/test.sh): the results server at RS_RESULTS_ADDR and
// the TLS results server at RS_RESULTS_TLS_ADDR. Every test works on
// fresh ids (Go client range 4e12 + a millisecond clock).

func resultsAddr(t *testing.T) string {
	t.Helper()
	addr := os.Getenv("RS_RESULTS_ADDR")
	if addr == "" {
		const msg = "RS_RESULTS_ADDR is not set: run clients/go/test.sh (make test-clients starts the servers)"
		if os.Getenv("CI") != "" || os.Getenv("RS_REQUIRE_INFRA") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg + " (CI or RS_REQUIRE_INFRA=1 fails instead)")
	}
	return addr
}

func need(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set (deploy/local/test-clients.sh sets it and starts the TLS results server)", name)
	}
	return v
}

var lastID int64

// freshRecord returns a data_id no other run uses; its campaign is
// data_id / 10.
func freshRecord() int64 {
	id := (4_000_000_000_000+time.Now().UnixMilli()%1_000_000_000*100)*10 + 1
	if id <= lastID {
		id = lastID + 10
	}
	lastID = id
	return id
}

func record(t *testing.T, results fitnessv1.ResultServiceClient, dataID int64, value string) *fitnessv1.FitnessResult {
	t.Helper()
	resp, err := results.RecordResult(ctx(t), &fitnessv1.RecordResultRequest{RequestId: fmt.Sprintf("go-%d", dataID), DataId: dataID,
		DetectId: dataID / 10, UserId: 41, ProjectId: 3, SchoolId: 8, Grade: 5, Result: value, Unit: "m"})
	if err != nil {
		t.Fatalf("recording %d: %v", dataID, err)
	}
	return resp.GetResult()
}

// The story through the helper: record 2.21, read it as a viewer, correct
// it to 2.31 at the version read; a second correction at that version is
// ABORTED with reason VERSION_CONFLICT and the typed VersionConflict.
func TestRecordCorrectAndTheConflict(t *testing.T) {
	addr := resultsAddr(t)
	operator := fitnessv1.NewResultServiceClient(dial(t, addr, resultsync.Options{Token: "dev-operator"}))
	viewer := fitnessv1.NewResultServiceClient(dial(t, addr, resultsync.Options{Token: "dev-viewer"}))
	id := freshRecord()
	if got := record(t, operator, id, "2.21"); got.GetVersion() != 1 {
		t.Fatalf("recorded %v, want version 1", got)
	}
	read, err := viewer.GetResult(ctx(t), &fitnessv1.GetResultRequest{SchoolId: 8, DataId: id})
	if err != nil || read.GetResult().GetResult() != "2.21" {
		t.Fatalf("GetResult = %v, %v", read, err)
	}
	fixed, err := operator.CorrectResult(ctx(t), &fitnessv1.CorrectResultRequest{RequestId: fmt.Sprintf("go-c-%d", id), SchoolId: 8, DataId: id,
		ExpectedVersion: 1, Result: "2.31", Unit: "m", Reason: "re-measured"})
	if err != nil || fixed.GetResult().GetVersion() != 2 || fixed.GetResult().GetResult() != "2.31" {
		t.Fatalf("CorrectResult = %v, %v; want 2.31 at version 2", fixed, err)
	}
	_, err = operator.CorrectResult(ctx(t), &fitnessv1.CorrectResultRequest{RequestId: fmt.Sprintf("go-c2-%d", id), SchoolId: 8, DataId: id,
		ExpectedVersion: 1, Result: "2.41", Unit: "m", Reason: "re-measured again"})
	if status.Code(err) != codes.Aborted || resultsync.Reason(err) != fitnessv1.ErrorReason_VERSION_CONFLICT {
		t.Fatalf("stale correction: %v (reason %v); want ABORTED VERSION_CONFLICT", err, resultsync.Reason(err))
	}
	if vc := resultsync.VersionConflict(err); vc.GetCurrentVersion() != 2 || vc.GetExpectedVersion() != 1 || vc.GetDataId() != id {
		t.Errorf("VersionConflict = %v; want %d expected 1, current 2", vc, id)
	}
}

// The reasons the servers send, read through the helper.
func TestReasonsFromTheServer(t *testing.T) {
	addr := resultsAddr(t)
	t.Setenv(resultsync.TokenEnv, "")
	operator := fitnessv1.NewResultServiceClient(dial(t, addr, resultsync.Options{Token: "dev-operator"}))

	_, err := operator.GetResult(ctx(t), &fitnessv1.GetResultRequest{SchoolId: 8, DataId: freshRecord()})
	if status.Code(err) != codes.NotFound || resultsync.Reason(err) != fitnessv1.ErrorReason_RESULT_NOT_FOUND {
		t.Errorf("GetResult of no record: %v (reason %v); want NOT_FOUND RESULT_NOT_FOUND", err, resultsync.Reason(err))
	}

	_, err = operator.RecordResult(ctx(t), &fitnessv1.RecordResultRequest{RequestId: fmt.Sprintf("go-bad-%d", freshRecord()), DataId: freshRecord(),
		DetectId: 1, UserId: 41, ProjectId: 3, SchoolId: 8, Grade: 5, Result: "not a number", Unit: "m"})
	var fields []string
	for _, v := range resultsync.FieldViolations(err) {
		fields = append(fields, v.GetField())
	}
	if status.Code(err) != codes.InvalidArgument || resultsync.Reason(err) != fitnessv1.ErrorReason_FIELD_VIOLATION || !slices.Contains(fields, "result") {
		t.Errorf("RecordResult of a bad value: %v (reason %v, fields %v); want INVALID_ARGUMENT FIELD_VIOLATION naming result", err, resultsync.Reason(err), fields)
	}

	anonymous := fitnessv1.NewResultServiceClient(dial(t, addr, resultsync.Options{}))
	_, err = anonymous.GetResult(ctx(t), &fitnessv1.GetResultRequest{SchoolId: 8, DataId: 1})
	if status.Code(err) != codes.Unauthenticated || resultsync.Reason(err) != fitnessv1.ErrorReason_UNAUTHENTICATED {
		t.Errorf("a call without a token: %v (reason %v); want UNAUTHENTICATED", err, resultsync.Reason(err))
	}

	// The token from $RS_TOKEN: a viewer may read but not write.
	t.Setenv(resultsync.TokenEnv, "dev-viewer")
	viewer := fitnessv1.NewResultServiceClient(dial(t, addr, resultsync.Options{}))
	id := freshRecord()
	_, err = viewer.RecordResult(ctx(t), &fitnessv1.RecordResultRequest{RequestId: fmt.Sprintf("go-%d", id), DataId: id,
		DetectId: id / 10, UserId: 41, ProjectId: 3, SchoolId: 8, Grade: 5, Result: "2.21", Unit: "m"})
	if status.Code(err) != codes.PermissionDenied || resultsync.Reason(err) != fitnessv1.ErrorReason_PERMISSION_DENIED {
		t.Errorf("a viewer's write: %v (reason %v); want PERMISSION_DENIED", err, resultsync.Reason(err))
	}
}

// Mutual TLS with the local CA works; a client that does not trust the
// CA, trusts another one, presents no certificate or a foreign one is
// refused with UNAVAILABLE before any call reaches the server.
func TestMutualTLS(t *testing.T) {
	resultsAddr(t)
	addr, ca, other := need(t, "RS_RESULTS_TLS_ADDR"), need(t, "RS_TLS_DIR"), need(t, "RS_TLS_OTHER_DIR")
	pem := filepath.Join
	good := resultsync.TLS{CAFile: pem(ca, "ca.pem"), CertFile: pem(ca, "client.pem"), KeyFile: pem(ca, "client-key.pem")}
	results := fitnessv1.NewResultServiceClient(dial(t, addr, resultsync.Options{Token: "dev-operator", TLS: &good}))
	id := freshRecord()
	record(t, results, id, "2.21")
	got, err := results.GetResult(ctx(t), &fitnessv1.GetResultRequest{SchoolId: 8, DataId: id})
	if err != nil || got.GetResult().GetVersion() != 1 {
		t.Fatalf("GetResult over mutual TLS = %v, %v", got, err)
	}
	for name, tc := range map[string]resultsync.TLS{
		"the system roots do not know the local CA": {CertFile: good.CertFile, KeyFile: good.KeyFile},
		"another CA does not verify the server":     {CAFile: pem(other, "ca.pem"), CertFile: good.CertFile, KeyFile: good.KeyFile},
		"no client certificate":                     {CAFile: good.CAFile},
		"a client certificate of another CA":        {CAFile: good.CAFile, CertFile: pem(other, "client.pem"), KeyFile: pem(other, "client-key.pem")},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // each is refused after the retries of ListResults (UNAVAILABLE, up to 4 attempts)
			conn := dial(t, addr, resultsync.Options{Token: "dev-viewer", TLS: &tc})
			_, err := fitnessv1.NewResultServiceClient(conn).ListResults(ctx(t), &fitnessv1.ListResultsRequest{DetectId: 1, PageSize: 1})
			if status.Code(err) != codes.Unavailable {
				t.Errorf("%v, want UNAVAILABLE", err)
			}
		})
	}
}
