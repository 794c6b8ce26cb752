package server_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/resultsync/resultsync/pkg/platform/server"
)

// runWithHTTP starts srv.Run with workers and probes and a metrics listener;
// it returns the health client, the HTTP address and Run's result channel.
func runWithHTTP(t *testing.T, cfg server.Config, workers []server.Worker, probes []server.Probe) (healthpb.HealthClient, string, <-chan error) {
	t.Helper()
	grpcAddr, httpAddr, _, done := runAt(t, cfg, workers, probes)
	return healthpb.NewHealthClient(dial(t, grpcAddr)), httpAddr, done
}

// runAt is runWithHTTP returning the gRPC address instead of a client, and
// the function that ends Run's context.
func runAt(t *testing.T, cfg server.Config, workers []server.Worker, probes []server.Probe) (grpcAddr, httpAddr string, _ context.CancelFunc, _ <-chan error) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.GRPCAddr, cfg.HTTPAddr, cfg.LogLevel = "127.0.0.1:0", "127.0.0.1:0", "info"
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = 2 * time.Second
	}
	srv, err := server.New(log, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		done <- srv.Run(ctx, workers, probes)
		close(finished)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(30 * time.Second):
		}
	})
	return srv.GRPCAddr(), srv.HTTPAddr(), cancel, done
}

// get returns the status code and body of GET http://addr/path (0 when
// the request fails).
func get(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A required dependency that fails takes readiness down (/readyz, /healthz,
// the "" and "readiness" health names) and never liveness (/livez,
// "liveness"); both come back by themselves when it passes again.
func TestLivenessIgnoresDependenciesReadinessFollowsThem(t *testing.T) {
	var down atomic.Bool
	probes := []server.Probe{{Name: "clickhouse", Interval: 20 * time.Millisecond, Check: func(context.Context) error {
		if down.Load() {
			return errors.New("dial tcp 10.1.2.3:9000: connect: connection refused")
		}
		return nil
	}}}
	workers := []server.Worker{{Name: "consumer", Run: func(ctx context.Context) error { <-ctx.Done(); return nil }}}
	hc, addr, _ := runWithHTTP(t, server.Config{}, workers, probes)

	state := func() string {
		l, _ := get(t, addr, "/livez")
		r, _ := get(t, addr, "/readyz")
		z, _ := get(t, addr, "/healthz")
		return strings.Join([]string{http.StatusText(l), http.StatusText(r), http.StatusText(z),
			healthOf(t, hc, server.LivenessHealthName).String(), healthOf(t, hc, server.ReadinessHealthName).String(), healthOf(t, hc, "").String()}, " ")
	}
	const ready = "OK OK OK SERVING SERVING SERVING"
	const liveNotReady = "OK Service Unavailable Service Unavailable SERVING NOT_SERVING NOT_SERVING"
	eventually(t, "live and ready", func() bool { return state() == ready })

	down.Store(true)
	eventually(t, "live, not ready", func() bool { return state() == liveNotReady })
	code, body := get(t, addr, "/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "dependency/clickhouse NOT_SERVING") || strings.Contains(body, "10.1.2.3") {
		t.Errorf("/readyz while ClickHouse is down = %d %q, want 503 naming dependency/clickhouse and no address", code, body)
	}
	// Stays live however long it lasts (a few watchdog rounds here; the
	// consumer's outage test holds one past the manifests' old budget).
	for deadline := time.Now().Add(2500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got := state(); got != liveNotReady {
			t.Fatalf("during the outage: %s, want %s", got, liveNotReady)
		}
	}
	down.Store(false)
	eventually(t, "ready again", func() bool { return state() == ready })
}

// A worker that stops beating for longer than its Stall is wedged: not live
// (/livez 503 naming it, "liveness" NOT_SERVING), live again when it beats.
// Readiness does not depend on it.
func TestWedgedWorkerIsNotLive(t *testing.T) {
	var wedged atomic.Bool
	workers := []server.Worker{{Name: "relay-loop", Stall: 500 * time.Millisecond, Run: func(ctx context.Context) error {
		for {
			if !wedged.Load() {
				server.Beat(ctx)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(50 * time.Millisecond):
			}
		}
	}}}
	hc, addr, _ := runWithHTTP(t, server.Config{}, workers, nil)
	eventually(t, "live", func() bool {
		c, _ := get(t, addr, "/livez")
		return c == http.StatusOK && healthOf(t, hc, server.LivenessHealthName) == healthpb.HealthCheckResponse_SERVING
	})
	// Live across several stall limits while it beats.
	for deadline := time.Now().Add(1500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if c, b := get(t, addr, "/livez"); c != http.StatusOK {
			t.Fatalf("/livez of a beating worker = %d %q", c, b)
		}
	}
	wedged.Store(true)
	eventually(t, "not live", func() bool {
		c, b := get(t, addr, "/livez")
		return c == http.StatusServiceUnavailable && strings.Contains(b, "worker relay-loop wedged") &&
			healthOf(t, hc, server.LivenessHealthName) == healthpb.HealthCheckResponse_NOT_SERVING
	})
	if c, b := get(t, addr, "/readyz"); c != http.StatusOK {
		t.Errorf("/readyz while a worker is wedged = %d %q: readiness looks at dependencies and stopped workers only", c, b)
	}
	wedged.Store(false)
	eventually(t, "live again", func() bool {
		c, _ := get(t, addr, "/livez")
		return c == http.StatusOK && healthOf(t, hc, server.LivenessHealthName) == healthpb.HealthCheckResponse_SERVING
	})
}

// A worker that panics does not crash the process from its goroutine: it is
// a stopped worker (not live, not ready), and Run returns an error naming it
// and the panic.
func TestPanickingWorkerStopsTheServer(t *testing.T) {
	boom := make(chan struct{})
	workers := []server.Worker{
		{Name: "poller", Run: func(ctx context.Context) error {
			select {
			case <-boom:
				panic("assignment to entry in nil map")
			case <-ctx.Done():
				return nil
			}
		}},
		{Name: "other", Run: func(ctx context.Context) error { <-ctx.Done(); return nil }},
	}
	hc, addr, done := runWithHTTP(t, server.Config{ShutdownGrace: 4 * time.Second}, workers, nil)
	eventually(t, "live", func() bool { c, _ := get(t, addr, "/livez"); return c == http.StatusOK })
	close(boom)
	// The drain (health down, a short pause) lets probes see it before the
	// listeners close.
	eventually(t, "not live, not ready", func() bool {
		return healthOf(t, hc, server.LivenessHealthName) != healthpb.HealthCheckResponse_SERVING &&
			healthOf(t, hc, "") != healthpb.HealthCheckResponse_SERVING
	})
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "worker poller stopped: panicked: assignment to entry in nil map") {
			t.Errorf("Run = %v, want the worker's panic", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after a worker panicked")
	}
}
