package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/buildinfo"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

type recordingResults struct {
	fitnessv1.UnimplementedResultServiceServer
}

func (recordingResults) RecordResult(context.Context, *fitnessv1.RecordResultRequest) (*fitnessv1.RecordResultResponse, error) {
	return &fitnessv1.RecordResultResponse{}, nil
}

func (recordingResults) GetResult(context.Context, *fitnessv1.GetResultRequest) (*fitnessv1.GetResultResponse, error) {
	return nil, status.Error(codes.NotFound, "no such result")
}

type watchingRepairs struct {
	fitnessv1.UnimplementedRepairServiceServer
}

func (watchingRepairs) WatchRepair(_ *fitnessv1.WatchRepairRequest, ss grpc.ServerStreamingServer[fitnessv1.WatchRepairResponse]) error {
	return ss.Send(&fitnessv1.WatchRepairResponse{})
}

// syncBuffer is a log sink the server's goroutines write to while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// rpcLines returns the "rpc" lines logged so far, each reduced to its
// method, code, caller and request_id.
func (s *syncBuffer) rpcLines(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] != "rpc" {
			continue
		}
		kept := map[string]any{}
		for _, k := range []string{"method", "code", "caller", "request_id"} {
			if v, ok := m[k]; ok {
				kept[k] = v
			}
		}
		out = append(out, kept)
	}
	return out
}

// TestRPCLogNamesCallerAndRequestID: an RPC's log line carries the
// authenticated subject (caller) and the request's request_id when the
// request message has that field, unary or streaming; no caller when the
// call is not authenticated.
func TestRPCLogNamesCallerAndRequestID(t *testing.T) {
	var logs syncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	policy := auth.Policy{
		"/fitness.v1.ResultService/RecordResult": auth.RoleOperator,
		"/fitness.v1.ResultService/GetResult":    auth.RoleViewer,
		"/fitness.v1.RepairService/WatchRepair":  auth.RoleViewer,
	}
	srv, err := server.New(log, server.Config{GRPCAddr: "127.0.0.1:0", ShutdownGrace: time.Second, LogLevel: "debug",
		Auth: auth.Local("tok-otto=otto:operator,tok-vera=vera:viewer")}, server.WithAuth(policy))
	if err != nil {
		t.Fatal(err)
	}
	fitnessv1.RegisterResultServiceServer(srv.GRPC(), recordingResults{})
	fitnessv1.RegisterRepairServiceServer(srv.GRPC(), watchingRepairs{})
	conn := servertest.Serve(t, srv)
	results, repairs := fitnessv1.NewResultServiceClient(conn), fitnessv1.NewRepairServiceClient(conn)
	as := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+tok)
	}

	if _, err := results.RecordResult(as("tok-otto"), &fitnessv1.RecordResultRequest{RequestId: "req-42", DataId: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := results.GetResult(as("tok-vera"), &fitnessv1.GetResultRequest{DataId: 1}); status.Code(err) != codes.NotFound {
		t.Fatalf("GetResult: %v, want NotFound", err)
	}
	stream, err := repairs.WatchRepair(as("tok-vera"), &fitnessv1.WatchRepairRequest{RepairId: "r-1"})
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = stream.Recv()
	}
	if _, err := results.RecordResult(t.Context(), &fitnessv1.RecordResultRequest{RequestId: "req-anon"}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("RecordResult without a token: %v, want Unauthenticated", err)
	}

	want := []map[string]any{
		{"method": "/fitness.v1.ResultService/RecordResult", "code": "OK", "caller": "otto", "request_id": "req-42"},
		{"method": "/fitness.v1.ResultService/GetResult", "code": "NotFound", "caller": "vera"},
		{"method": "/fitness.v1.RepairService/WatchRepair", "code": "OK", "caller": "vera"},
		{"method": "/fitness.v1.ResultService/RecordResult", "code": "Unauthenticated", "request_id": "req-anon"},
	}
	// A line is written when its handler returns, which may be a moment
	// after the client has its answer.
	var got []map[string]any
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if got = logs.rpcLines(t); len(got) >= len(want) || time.Now().After(deadline) {
			break
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rpc log lines (-want +got):\n%s", diff)
	}
}

func TestMetricsExportTheBuild(t *testing.T) {
	srv, err := server.New(slog.New(slog.NewTextHandler(io.Discard, nil)),
		server.Config{GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", ShutdownGrace: time.Second, LogLevel: "info"})
	if err != nil {
		t.Fatal(err)
	}
	servertest.Serve(t, srv)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+srv.HTTPAddr()+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	in := buildinfo.Get()
	want := `resultsync_build_info{goversion="` + in.GoVersion + `",revision="` + in.Revision + `",version="` + in.Version + `"} 1`
	if !strings.Contains(string(body), want) {
		t.Errorf("/metrics lacks %s", want)
	}
}
