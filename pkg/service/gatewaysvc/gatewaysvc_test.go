package gatewaysvc_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/service/gatewaysvc"
	"github.com/resultsync/resultsync/pkg/testkit/configtest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

func TestLoad(t *testing.T) {
	configtest.Load(t, gatewaysvc.Load, []configtest.Case{
		{Name: "production without tokens", Args: []string{"--grpc-addr=127.0.0.1:0"}, WantErr: []string{"--auth-jwt-keys (env RS_AUTH_JWT_KEYS)", "--auth-jwt-audience"}},
		{Name: "every bad address at once",
			Args:    []string{"--profile=local", "--api-addr=x", "--relay-addr=y", "--repair-addr=", "--openapi-file="},
			WantErr: []string{"api-addr", "relay-addr", "repair-addr", "openapi-file"}},
		{Name: "local profile", Args: []string{"--profile=local"}},
	}, nil)
}

// results is a stand-in ResultService backend that echoes the caller's
// authorization header in the result's unit.
type results struct {
	fitnessv1.UnimplementedResultServiceServer
}

func (results) GetResult(ctx context.Context, req *fitnessv1.GetResultRequest) (*fitnessv1.GetResultResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if len(md.Get("authorization")) == 0 {
		return nil, status.Error(codes.Unauthenticated, "no token")
	}
	return &fitnessv1.GetResultResponse{Result: &fitnessv1.FitnessResult{DataId: req.GetDataId(), SchoolId: req.GetSchoolId(), Unit: md.Get("authorization")[0]}}, nil
}

// ListResults refuses every call with INVALID_ARGUMENT carrying a field
// violation (a type the gateway links) and a detail of a type no binary
// knows.
func (results) ListResults(context.Context, *fitnessv1.ListResultsRequest) (*fitnessv1.ListResultsResponse, error) {
	br, err := anypb.New(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "page_size", Description: "too large"}}})
	if err != nil {
		return nil, err
	}
	unknown := &anypb.Any{TypeUrl: "type.googleapis.com/example.v1.NotLinked", Value: []byte{0x08, 0x01}}
	return nil, status.FromProto(&spb.Status{Code: int32(codes.InvalidArgument), Message: "page_size too large", Details: []*anypb.Any{br, unknown}}).Err()
}

// repairs is a stand-in RepairService backend whose WatchRepair fails
// before its first message with the error of results.ListResults.
type repairs struct {
	fitnessv1.UnimplementedRepairServiceServer
}

func (repairs) WatchRepair(*fitnessv1.WatchRepairRequest, grpc.ServerStreamingServer[fitnessv1.WatchRepairResponse]) error {
	_, err := results{}.ListResults(context.Background(), nil)
	return err
}

// backend starts a gRPC backend with a health service; it stops with the test.
func backend(t *testing.T) (string, *health.Server) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	fitnessv1.RegisterResultServiceServer(gs, results{})
	fitnessv1.RegisterRepairServiceServer(gs, repairs{})
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	return lis.Addr().String(), hs
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

func get(t *testing.T, url string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// The gateway main builds forwards each route to its backend; a backend
// that is down fails only its own routes and shows on its own health name
// and on /healthz, not on the gateway's health.
func TestRoutesAndHealthFollowTheBackends(t *testing.T) {
	resultsAddr, resultsHealth := backend(t)
	openapi, err := filepath.Abs("../../../gen/openapiv2/resultsync.swagger.json")
	if err != nil {
		t.Fatal(err)
	}
	configtest.ClearEnv(t)
	cfg, err := gatewaysvc.Load([]string{"--grpc-addr=127.0.0.1:0", "--http-addr=", "--api-addr=127.0.0.1:0", "--shutdown-grace=1s",
		"--profile=local", "--auth-tokens=" + auth.DevTokens, "--openapi-file=" + openapi,
		"--results-addr=" + resultsAddr, "--relay-addr=" + deadAddr(t), "--consumer-addr=" + deadAddr(t),
		"--reconcile-addr=" + deadAddr(t), "--repair-addr=" + deadAddr(t)})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := gatewaysvc.New(t.Context(), slog.New(slog.NewTextHandler(io.Discard, nil)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := servertest.Start(t, svc)
	waitHealth := func(want map[string]healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		r.WaitHealthAll(t, want, 20*time.Second)
	}
	const (
		serving    = healthpb.HealthCheckResponse_SERVING
		notServing = healthpb.HealthCheckResponse_NOT_SERVING
	)
	waitHealth(map[string]healthpb.HealthCheckResponse_ServingStatus{"": serving,
		"dependency/results": serving, "dependency/relay": notServing, "dependency/consumer": notServing,
		"dependency/reconcile": notServing, "dependency/repair": notServing})

	api := "http://" + svc.APIAddr()
	if code, body := get(t, api+"/v1/schools/7/results/900001", "Authorization", "Bearer dev-viewer"); code != http.StatusOK ||
		!strings.Contains(body, `"dataId":"900001"`) || !strings.Contains(body, "Bearer dev-viewer") {
		t.Errorf("GET a result = %d %s; want 200 from the results backend, with the token forwarded", code, body)
	}
	// An error detail of a type the gateway does not link is dropped, not
	// the whole error turned into 500 "failed to marshal error message".
	if code, body := get(t, api+"/v1/campaigns/1/results", "Authorization", "Bearer dev-viewer"); code != http.StatusBadRequest ||
		!strings.Contains(body, "page_size too large") || !strings.Contains(body, "google.rpc.BadRequest") || strings.Contains(body, "NotLinked") {
		t.Errorf("GET with an error of an unknown detail type = %d %s; want 400 with the message and the field violation only", code, body)
	}
	if code, body := get(t, api+"/v1/outbox/stats"); code != http.StatusServiceUnavailable {
		t.Errorf("GET a route of the down relay = %d %s; want 503", code, body)
	}
	if code, body := get(t, api+"/healthz"); code != http.StatusServiceUnavailable ||
		!strings.Contains(body, "results SERVING\n") || !strings.Contains(body, "relay UNREACHABLE") {
		t.Errorf("GET /healthz = %d %q; want 503 reporting each backend", code, body)
	}
	if code, body := get(t, api+"/openapiv2/"); code != http.StatusOK || !strings.Contains(body, `"swagger"`) {
		t.Errorf("GET /openapiv2/ = %d; want the OpenAPI document", code)
	}

	resultsHealth.SetServingStatus("", notServing)
	waitHealth(map[string]healthpb.HealthCheckResponse_ServingStatus{"": serving, "dependency/results": notServing})
	resultsHealth.SetServingStatus("", serving)
	waitHealth(map[string]healthpb.HealthCheckResponse_ServingStatus{"": serving, "dependency/results": serving})

	if _, err := r.Stop(t); err != nil {
		t.Errorf("Run after the context ended = %v, want nil", err)
	}
	if _, err := net.DialTimeout("tcp", svc.APIAddr(), time.Second); err == nil {
		t.Error("the JSON API still accepts connections after Run returned")
	}
}

// A stream that fails with an error detail of a type the gateway does not
// link answers the backend's code and message, the known detail kept.
func TestStreamErrorWithAnUnknownDetailType(t *testing.T) {
	addr, _ := backend(t)
	openapi, err := filepath.Abs("../../../gen/openapiv2/resultsync.swagger.json")
	if err != nil {
		t.Fatal(err)
	}
	configtest.ClearEnv(t)
	cfg, err := gatewaysvc.Load([]string{"--grpc-addr=127.0.0.1:0", "--http-addr=", "--api-addr=127.0.0.1:0", "--shutdown-grace=1s",
		"--profile=local", "--auth-tokens=" + auth.DevTokens, "--openapi-file=" + openapi, "--results-addr=" + addr, "--relay-addr=" + addr,
		"--consumer-addr=" + addr, "--reconcile-addr=" + addr, "--repair-addr=" + addr})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := gatewaysvc.New(t.Context(), slog.New(slog.NewTextHandler(io.Discard, nil)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	servertest.Start(t, svc)
	code, body := get(t, "http://"+svc.APIAddr()+"/v1/repairs/r-1:watch", "Authorization", "Bearer dev-viewer")
	if code != http.StatusBadRequest || !strings.Contains(body, `"error"`) || !strings.Contains(body, "page_size too large") ||
		!strings.Contains(body, "google.rpc.BadRequest") || strings.Contains(body, "NotLinked") {
		t.Errorf("GET a watch failing with an unknown detail type = %d %s; want 400, an error line with the message and the field violation only", code, body)
	}
}
