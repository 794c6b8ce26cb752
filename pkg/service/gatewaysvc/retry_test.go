package gatewaysvc_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
)

// flaky is a results and reconcile backend that answers the first call of
// each method UNAVAILABLE (a pod draining) and the next ones normally,
// counting the calls and the request ids of RecordResult.
type flaky struct {
	fitnessv1.UnimplementedResultServiceServer
	fitnessv1.UnimplementedReconcileServiceServer
	mu         sync.Mutex
	calls      map[string]int
	requestIDs []string
}

func (f *flaky) call(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method]++
	if f.calls[method] == 1 {
		return status.Error(codes.Unavailable, "the server is draining")
	}
	return nil
}

func (f *flaky) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

func (f *flaky) GetResult(_ context.Context, r *fitnessv1.GetResultRequest) (*fitnessv1.GetResultResponse, error) {
	if err := f.call("GetResult"); err != nil {
		return nil, err
	}
	return &fitnessv1.GetResultResponse{Result: &fitnessv1.FitnessResult{DataId: r.GetDataId(), SchoolId: r.GetSchoolId(), Version: 1}}, nil
}

func (f *flaky) RecordResult(_ context.Context, r *fitnessv1.RecordResultRequest) (*fitnessv1.RecordResultResponse, error) {
	f.mu.Lock()
	f.requestIDs = append(f.requestIDs, r.GetRequestId())
	f.mu.Unlock()
	if err := f.call("RecordResult"); err != nil {
		return nil, err
	}
	return &fitnessv1.RecordResultResponse{Result: &fitnessv1.FitnessResult{DataId: r.GetDataId(), Version: 1}}, nil
}

func (f *flaky) StartReconciliationRun(context.Context, *fitnessv1.StartReconciliationRunRequest) (*fitnessv1.StartReconciliationRunResponse, error) {
	if err := f.call("StartReconciliationRun"); err != nil {
		return nil, err
	}
	return &fitnessv1.StartReconciliationRunResponse{Run: &fitnessv1.ReconciliationRun{RunId: "run-1"}}, nil
}

// The gateway dials its backends with the clients' service configuration
// (clients/go/serviceconfig): a read and a write with a required request_id
// that a backend answers UNAVAILABLE once are sent again (the write with
// the same request_id) and the JSON caller gets the answer; a write that is
// not safe to repeat (StartReconciliationRun) reaches the backend once and
// the caller gets the 503.
func TestIdempotentCallsAreRetriedOverUnavailable(t *testing.T) {
	f := &flaky{calls: map[string]int{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	fitnessv1.RegisterResultServiceServer(gs, f)
	fitnessv1.RegisterReconcileServiceServer(gs, f)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	addr := lis.Addr().String()

	// The other backends are down; the last --reconcile-addr wins.
	api := edgeGateway(t, addr, "--reconcile-addr="+addr)

	if code, body := get(t, api+"/v1/schools/8/results/900001", "Authorization", "Bearer dev-viewer"); code != http.StatusOK ||
		!strings.Contains(body, `"dataId":"900001"`) || f.count("GetResult") != 2 {
		t.Errorf("GET a result = %d %s after %d backend calls; want 200 after 2 (the UNAVAILABLE retried)", code, body, f.count("GetResult"))
	}

	record := `{"requestId":"record-900001","dataId":"900001","detectId":"10001","userId":"41","projectId":"3","schoolId":"8","grade":5,"result":"2.21","unit":"m"}`
	code, body, _ := post(t, api+"/v1/results", strings.NewReader(record), int64(len(record)))
	f.mu.Lock()
	ids := strings.Join(f.requestIDs, ",")
	f.mu.Unlock()
	if code != http.StatusOK || f.count("RecordResult") != 2 || ids != "record-900001,record-900001" {
		t.Errorf("POST a record = %d %s after %d backend calls with request ids %s; want 200 after 2, the same request id twice",
			code, body, f.count("RecordResult"), ids)
	}

	start := `{"scope":{"detectId":"10001"},"depth":"RECONCILE_DEPTH_COUNTS"}`
	code, body, _ = post(t, api+"/v1/reconciliation-runs", strings.NewReader(start), int64(len(start)))
	if code != http.StatusServiceUnavailable || f.count("StartReconciliationRun") != 1 {
		t.Errorf("POST a reconciliation run = %d %s after %d backend calls; want 503 after 1 (never retried)", code, body, f.count("StartReconciliationRun"))
	}
}
