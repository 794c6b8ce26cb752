package resultsync_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/resultsync/resultsync/clients/go/resultsync"
	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
)

// fake is a results and reconcile server whose every method fails its
// first `fail` calls with UNAVAILABLE, counting the calls and recording
// the request ids and authorization headers it saw.
type fake struct {
	fitnessv1.UnimplementedResultServiceServer
	fitnessv1.UnimplementedReconcileServiceServer
	fail int

	mu         sync.Mutex
	calls      map[string]int
	requestIDs []string
	auth       []string
}

func (f *fake) call(ctx context.Context, method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method]++
	md, _ := metadata.FromIncomingContext(ctx)
	f.auth = append(f.auth, md.Get("authorization")...)
	if f.calls[method] <= f.fail {
		return status.Error(codes.Unavailable, "draining")
	}
	return nil
}

func (f *fake) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

func (f *fake) GetResult(ctx context.Context, r *fitnessv1.GetResultRequest) (*fitnessv1.GetResultResponse, error) {
	if err := f.call(ctx, "GetResult"); err != nil {
		return nil, err
	}
	return &fitnessv1.GetResultResponse{Result: &fitnessv1.FitnessResult{DataId: r.GetDataId(), Version: 1}}, nil
}

func (f *fake) RecordResult(ctx context.Context, r *fitnessv1.RecordResultRequest) (*fitnessv1.RecordResultResponse, error) {
	f.mu.Lock()
	f.requestIDs = append(f.requestIDs, r.GetRequestId())
	f.mu.Unlock()
	if err := f.call(ctx, "RecordResult"); err != nil {
		return nil, err
	}
	return &fitnessv1.RecordResultResponse{Result: &fitnessv1.FitnessResult{DataId: r.GetDataId(), Version: 1}}, nil
}

func (f *fake) StartReconciliationRun(ctx context.Context, _ *fitnessv1.StartReconciliationRunRequest) (*fitnessv1.StartReconciliationRunResponse, error) {
	if err := f.call(ctx, "StartReconciliationRun"); err != nil {
		return nil, err
	}
	return &fitnessv1.StartReconciliationRunResponse{}, nil
}

func (f *fake) WatchReconciliationRun(r *fitnessv1.WatchReconciliationRunRequest, s grpc.ServerStreamingServer[fitnessv1.WatchReconciliationRunResponse]) error {
	if err := f.call(s.Context(), "WatchReconciliationRun"); err != nil {
		return err
	}
	if err := s.Send(&fitnessv1.WatchReconciliationRunResponse{Run: &fitnessv1.ReconciliationRun{RunId: r.GetRunId()}}); err != nil {
		return err
	}
	// After a message the call is committed: this UNAVAILABLE reaches the caller.
	return status.Error(codes.Unavailable, "the stream's maximum duration")
}

func serve(t *testing.T, f *fake) string {
	t.Helper()
	f.calls = map[string]int{}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	fitnessv1.RegisterResultServiceServer(srv, f)
	fitnessv1.RegisterReconcileServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

func dial(t *testing.T, addr string, o resultsync.Options) *grpc.ClientConn {
	t.Helper()
	conn, err := resultsync.Dial(addr, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// A read answered UNAVAILABLE is sent again and succeeds; so is a write
// whose request_id is required, with the same request_id each time; a
// write that is not safe to repeat reaches the server once.
func TestRetriesTheIdempotentMethodsOnly(t *testing.T) {
	f := &fake{fail: 1}
	conn := dial(t, serve(t, f), resultsync.Options{Token: "dev-operator"})
	results := fitnessv1.NewResultServiceClient(conn)

	got, err := results.GetResult(ctx(t), &fitnessv1.GetResultRequest{SchoolId: 8, DataId: 900001})
	if err != nil {
		t.Fatalf("GetResult after one UNAVAILABLE: %v", err)
	}
	if got.GetResult().GetDataId() != 900001 || f.count("GetResult") != 2 {
		t.Errorf("GetResult: %v after %d calls, want 900001 after 2", got, f.count("GetResult"))
	}

	if _, err := results.RecordResult(ctx(t), &fitnessv1.RecordResultRequest{RequestId: "record-900001", DataId: 900001}); err != nil {
		t.Fatalf("RecordResult after one UNAVAILABLE: %v", err)
	}
	if f.count("RecordResult") != 2 || f.requestIDs[0] != "record-900001" || f.requestIDs[1] != "record-900001" {
		t.Errorf("RecordResult: %d calls with request ids %v, want 2 with record-900001 twice", f.count("RecordResult"), f.requestIDs)
	}

	_, err = fitnessv1.NewReconcileServiceClient(conn).StartReconciliationRun(ctx(t), &fitnessv1.StartReconciliationRunRequest{})
	if status.Code(err) != codes.Unavailable || f.count("StartReconciliationRun") != 1 {
		t.Errorf("StartReconciliationRun: %v after %d calls, want UNAVAILABLE after 1 (never retried)", err, f.count("StartReconciliationRun"))
	}
}

// A Watch stream is retried until its first message; after it, the
// stream's end reaches the caller (the application watches again).
func TestRetriesAWatchOnlyBeforeItsFirstMessage(t *testing.T) {
	f := &fake{fail: 1}
	conn := dial(t, serve(t, f), resultsync.Options{})
	stream, err := fitnessv1.NewReconcileServiceClient(conn).WatchReconciliationRun(ctx(t), &fitnessv1.WatchReconciliationRunRequest{RunId: "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil || first.GetRun().GetRunId() != "run-1" {
		t.Fatalf("first message %v, %v: want run-1 (the failed first attempt retried)", first, err)
	}
	if _, err := stream.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("after the first message: %v, want the stream's UNAVAILABLE", err)
	}
	if n := f.count("WatchReconciliationRun"); n != 2 {
		t.Errorf("WatchReconciliationRun called %d times, want 2", n)
	}
}

// The token goes with every call, unary and streaming, and comes from
// $RS_TOKEN when Options.Token is empty; without either none is sent.
func TestBearerToken(t *testing.T) {
	f := &fake{}
	addr := serve(t, f)
	results := fitnessv1.NewResultServiceClient(dial(t, addr, resultsync.Options{Token: "dev-viewer"}))
	if _, err := results.GetResult(ctx(t), &fitnessv1.GetResultRequest{DataId: 1}); err != nil {
		t.Fatal(err)
	}
	t.Setenv(resultsync.TokenEnv, "from-env")
	conn := dial(t, addr, resultsync.Options{})
	if _, err := fitnessv1.NewResultServiceClient(conn).GetResult(ctx(t), &fitnessv1.GetResultRequest{DataId: 1}); err != nil {
		t.Fatal(err)
	}
	stream, err := fitnessv1.NewReconcileServiceClient(conn).WatchReconciliationRun(ctx(t), &fitnessv1.WatchReconciliationRunRequest{RunId: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	t.Setenv(resultsync.TokenEnv, "")
	if _, err := fitnessv1.NewResultServiceClient(dial(t, addr, resultsync.Options{})).GetResult(ctx(t), &fitnessv1.GetResultRequest{DataId: 1}); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	want := []string{"Bearer dev-viewer", "Bearer from-env", "Bearer from-env"}
	if fmt.Sprint(f.auth) != fmt.Sprint(want) {
		t.Errorf("authorization headers %q, want %q", f.auth, want)
	}
}

func TestTLSSettingsAreChecked(t *testing.T) {
	for _, tc := range []resultsync.TLS{
		{CAFile: "/nonexistent/ca.pem"},
		{CertFile: "client.pem"},
		{CertFile: "/nonexistent/client.pem", KeyFile: "/nonexistent/client-key.pem"},
	} {
		if _, err := resultsync.Dial("127.0.0.1:1", resultsync.Options{TLS: &tc}); err == nil {
			t.Errorf("Dial with %+v: no error", tc)
		}
	}
}

func TestErrorDetails(t *testing.T) {
	st, err := status.New(codes.Aborted, "stale").WithDetails(
		&errdetails.ErrorInfo{Domain: resultsync.Domain, Reason: "VERSION_CONFLICT", Metadata: map[string]string{"current_version": "2"}},
		&fitnessv1.VersionConflict{DataId: 900001, ExpectedVersion: 1, CurrentVersion: 2})
	if err != nil {
		t.Fatal(err)
	}
	conflict := fmt.Errorf("correcting: %w", st.Err()) // wrapped errors are read too
	if r := resultsync.Reason(conflict); r != fitnessv1.ErrorReason_VERSION_CONFLICT {
		t.Errorf("Reason = %v, want VERSION_CONFLICT", r)
	}
	if vc := resultsync.VersionConflict(conflict); vc.GetCurrentVersion() != 2 || vc.GetExpectedVersion() != 1 {
		t.Errorf("VersionConflict = %v", vc)
	}
	if md := resultsync.ErrorInfo(conflict).GetMetadata(); md["current_version"] != "2" {
		t.Errorf("ErrorInfo metadata = %v", md)
	}
	if _, ok := resultsync.RetryDelay(conflict); ok {
		t.Error("RetryDelay of a VERSION_CONFLICT: want none")
	}

	st, _ = status.New(codes.Unavailable, "down").WithDetails(
		&errdetails.ErrorInfo{Domain: resultsync.Domain, Reason: "DEPENDENCY_UNAVAILABLE"},
		&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Second)})
	if d, ok := resultsync.RetryDelay(st.Err()); !ok || d != time.Second {
		t.Errorf("RetryDelay = %v, %v; want 1s", d, ok)
	}
	if resultsync.Reason(st.Err()) != fitnessv1.ErrorReason_DEPENDENCY_UNAVAILABLE {
		t.Errorf("Reason = %v", resultsync.Reason(st.Err()))
	}

	st, _ = status.New(codes.InvalidArgument, "bad").WithDetails(
		&errdetails.ErrorInfo{Domain: resultsync.Domain, Reason: "FIELD_VIOLATION"},
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "grade", Description: "must be 1-12"}}})
	if v := resultsync.FieldViolations(st.Err()); len(v) != 1 || v[0].GetField() != "grade" {
		t.Errorf("FieldViolations = %v", v)
	}

	// No reason to read: UNSPECIFIED, and the caller acts on the code.
	unknown, _ := status.New(codes.Unavailable, "x").WithDetails(&errdetails.ErrorInfo{Domain: resultsync.Domain, Reason: "A_REASON_OF_TOMORROW"})
	other, _ := status.New(codes.Unavailable, "x").WithDetails(&errdetails.ErrorInfo{Domain: "example.com", Reason: "VERSION_CONFLICT"})
	for _, err := range []error{nil, errors.New("plain"), status.Error(codes.Internal, "bare"), unknown.Err(), other.Err()} {
		if r := resultsync.Reason(err); r != fitnessv1.ErrorReason_ERROR_REASON_UNSPECIFIED {
			t.Errorf("Reason(%v) = %v, want ERROR_REASON_UNSPECIFIED", err, r)
		}
		if resultsync.VersionConflict(err) != nil || resultsync.FieldViolations(err) != nil {
			t.Errorf("details of %v: want none", err)
		}
	}
}
