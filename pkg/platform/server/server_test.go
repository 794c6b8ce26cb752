package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/server"
)

type panicky struct {
	fitnessv1.UnimplementedResultServiceServer
}

func (panicky) GetResult(context.Context, *fitnessv1.GetResultRequest) (*fitnessv1.GetResultResponse, error) {
	panic("boom")
}

// DeleteResult reports the deadline the handler got, in its error message.
func (panicky) DeleteResult(ctx context.Context, _ *fitnessv1.DeleteResultRequest) (*fitnessv1.DeleteResultResponse, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		return nil, status.Error(codes.FailedPrecondition, "no deadline")
	}
	return nil, status.Errorf(codes.FailedPrecondition, "deadline in %s", time.Until(dl).Round(time.Second))
}

func start(t *testing.T) (addr, httpAddr string, stop func() error) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := server.New(log, server.Config{GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", ShutdownGrace: 2 * time.Second, LogLevel: "info",
		RPCTimeout: 7 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	fitnessv1.RegisterResultServiceServer(srv.GRPC(), panicky{})
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	var stopped bool
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not return after cancellation")
			return nil
		}
	}
	t.Cleanup(func() { _ = stop() })
	return srv.GRPCAddr(), srv.HTTPAddr(), stop
}

func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func waitServing(t *testing.T, hc healthpb.HealthClient, service string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{Service: service})
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q not SERVING: %v %v", service, resp, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHealthReflectionRecoveryMetricsShutdown(t *testing.T) {
	addr, httpAddr, stop := start(t)
	conn := dial(t, addr)
	hc := healthpb.NewHealthClient(conn)
	waitServing(t, hc, "")
	waitServing(t, hc, "fitness.v1.ResultService")

	t.Run("reflection lists the service", func(t *testing.T) {
		stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range resp.GetListServicesResponse().GetService() {
			names = append(names, s.GetName())
		}
		if !strings.Contains(strings.Join(names, ","), "fitness.v1.ResultService") {
			t.Errorf("reflection services = %v, want fitness.v1.ResultService among them", names)
		}
	})

	t.Run("panic becomes Internal and the server keeps serving", func(t *testing.T) {
		rc := fitnessv1.NewResultServiceClient(conn)
		_, err := rc.GetResult(context.Background(), &fitnessv1.GetResultRequest{DataId: 1})
		if got := status.Code(err); got != codes.Internal {
			t.Errorf("GetResult code = %s, want Internal", got)
		}
		_, err = rc.ListResults(context.Background(), &fitnessv1.ListResultsRequest{})
		if got := status.Code(err); got != codes.Unimplemented {
			t.Errorf("ListResults code = %s, want Unimplemented", got)
		}
	})

	t.Run("a unary RPC without a deadline gets the default one; a caller's own is kept", func(t *testing.T) {
		rc := fitnessv1.NewResultServiceClient(conn)
		_, err := rc.DeleteResult(context.Background(), &fitnessv1.DeleteResultRequest{})
		if got := status.Convert(err).Message(); got != "deadline in 7s" {
			t.Errorf("without a deadline: %q, want the 7s default", got)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err = rc.DeleteResult(ctx, &fitnessv1.DeleteResultRequest{})
		if got := status.Convert(err).Message(); got != "deadline in 3s" {
			t.Errorf("with a 3s deadline: %q, want 3s", got)
		}
	})

	t.Run("metrics count RPCs by code", func(t *testing.T) {
		resp, err := http.Get("http://" + httpAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		// The ecosystem's standard names and labels (go-grpc-middleware).
		for _, want := range []string{
			`grpc_server_handled_total{grpc_code="Internal",grpc_method="GetResult",grpc_service="fitness.v1.ResultService",grpc_type="unary"} 1`,
			`grpc_server_started_total{grpc_method="GetResult",grpc_service="fitness.v1.ResultService",grpc_type="unary"} 1`,
			`grpc_server_handling_seconds_count{grpc_method="GetResult",grpc_service="fitness.v1.ResultService",grpc_type="unary"} 1`,
		} {
			if !strings.Contains(string(body), want) {
				t.Errorf("/metrics lacks %q", want)
			}
		}
	})

	if err := stop(); err != nil {
		t.Fatalf("Serve returned %v after a clean shutdown", err)
	}
	if _, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{}); err == nil {
		t.Error("health check succeeded after shutdown")
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  server.Config
		ok   bool
	}{
		{"valid", server.Config{GRPCAddr: "127.0.0.1:0", ShutdownGrace: time.Second}, true},
		{"no grpc addr", server.Config{ShutdownGrace: time.Second}, false},
		{"bad grpc addr", server.Config{GRPCAddr: "nope", ShutdownGrace: time.Second}, false},
		{"bad http addr", server.Config{GRPCAddr: ":1", HTTPAddr: "x", ShutdownGrace: time.Second}, false},
		{"zero grace", server.Config{GRPCAddr: ":1"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if (err == nil) != tc.ok {
				t.Errorf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}
