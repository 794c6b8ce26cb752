// Package servertest runs a server.Server, or an assembled service, on a
// loopback port for the length of a test, dials it and watches its health.
package servertest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/resultsync/resultsync/pkg/platform/server"
)

// Serve listens (if needed) and serves srv until the test ends, then returns
// a client connection to it. Register services before calling Serve.
func Serve(t testing.TB, srv *server.Server) *grpc.ClientConn {
	t.Helper()
	if srv.GRPCAddr() == "" {
		if err := srv.Listen(); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// Runner is an assembled server (built by a pkg/service/*svc New): bound
// listeners, and Run, which serves until its context ends.
type Runner interface {
	GRPCAddr() string
	Run(ctx context.Context) error
}

// Running is a server running for the length of a test, whose health can be
// watched.
type Running struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error         // Run's result, once done
	conn   *grpc.ClientConn
	health healthpb.HealthClient
}

// Start runs svc until Stop or the end of the test (then it waits up to 30s
// for Run to return).
func Start(t testing.TB, svc Runner) *Running {
	t.Helper()
	return StartWith(t, svc, insecure.NewCredentials())
}

// StartWith is Start with the connection (Conn, health) dialed with creds:
// a server that serves TLS.
func StartWith(t testing.TB, svc Runner, creds credentials.TransportCredentials) *Running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running{cancel: cancel, done: make(chan struct{})}
	go func() {
		r.err = svc.Run(ctx)
		close(r.done)
	}()
	conn, err := grpc.NewClient(svc.GRPCAddr(), grpc.WithTransportCredentials(creds))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r.conn, r.health = conn, healthpb.NewHealthClient(conn)
	t.Cleanup(func() {
		conn.Close()
		cancel()
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			t.Error("the server did not stop within 30s")
		}
	})
	return r
}

// Stop ends Run and returns how long Run took to return, and its result.
func (r *Running) Stop(t testing.TB) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	r.cancel()
	select {
	case <-r.done:
		return time.Since(start), r.err
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop within 30s")
		return 0, nil
	}
}

// Conn is a client connection to the server's gRPC address, closed when the
// test ends.
func (r *Running) Conn() *grpc.ClientConn { return r.conn }

// Done is closed when Run returned, by itself or after Stop.
func (r *Running) Done() <-chan struct{} { return r.done }

// Err is Run's result, once Done is closed.
func (r *Running) Err() error {
	<-r.done
	return r.err
}

// Health returns the status of a health service name ("" is the server,
// server.DependencyHealthName(x) a dependency); UNKNOWN when the call fails.
func (r *Running) Health(service string) healthpb.HealthCheckResponse_ServingStatus {
	return healthOf(r.health, service)
}

// healthOf is the status of service by hc; UNKNOWN when the call fails
// (within 2s).
func healthOf(hc healthpb.HealthClient, service string) healthpb.HealthCheckResponse_ServingStatus {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return healthpb.HealthCheckResponse_UNKNOWN
	}
	return resp.GetStatus()
}

// WaitHealth polls every 20ms until service's status is want and returns
// how long that took, or fails the test after timeout.
func (r *Running) WaitHealth(t testing.TB, service string, want healthpb.HealthCheckResponse_ServingStatus, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		got := r.Health(service)
		if got == want {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("health of %q is %v after %s, want %v", service, got, timeout, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitHealthAll polls every 50ms until every service name of want has its
// status, or fails the test after timeout naming what each had.
func (r *Running) WaitHealthAll(t testing.TB, want map[string]healthpb.HealthCheckResponse_ServingStatus, timeout time.Duration) {
	t.Helper()
	WaitHealthAll(t, r.health, want, timeout)
}

// WaitHealthAll polls hc every 50ms until every service name of want has
// its status (a failing check counts as UNKNOWN), or fails the test after
// timeout naming what each had.
func WaitHealthAll(t testing.TB, hc healthpb.HealthClient, want map[string]healthpb.HealthCheckResponse_ServingStatus, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := map[string]healthpb.HealthCheckResponse_ServingStatus{}
		ok := true
		for name, st := range want {
			got[name] = healthOf(hc, name)
			ok = ok && got[name] == st
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("health = %v; want %v", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Logger writes a server's log to the test's stderr at warn and above
// (RS_TEST_LOG=info or debug for more).
func Logger() *slog.Logger {
	lv := slog.LevelWarn
	switch os.Getenv("RS_TEST_LOG") {
	case "info":
		lv = slog.LevelInfo
	case "debug":
		lv = slog.LevelDebug
	case "off":
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lv}))
}
