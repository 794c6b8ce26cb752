package server_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/resultsync/resultsync/pkg/platform/server"
)

// runServer starts srv.Run with workers and probes; the returned channel
// yields Run's result.
func runServer(t *testing.T, grace time.Duration, workers []server.Worker, probes []server.Probe) (healthpb.HealthClient, context.CancelFunc, <-chan error) {
	t.Helper()
	grpcAddr, _, cancel, done := runAt(t, server.Config{ShutdownGrace: grace}, workers, probes)
	return healthpb.NewHealthClient(dial(t, grpcAddr)), cancel, done
}

func healthOf(t *testing.T, hc healthpb.HealthClient, service string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	resp, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return healthpb.HealthCheckResponse_UNKNOWN
	}
	return resp.GetStatus()
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A worker that stops takes health down with it, and the server stops with
// an error naming the worker (so main exits non-zero).
func TestWorkerFailureTakesHealthDownAndStopsTheServer(t *testing.T) {
	fail := make(chan struct{})
	workers := []server.Worker{
		{Name: "relay-loop", Run: func(ctx context.Context) error {
			select {
			case <-fail:
				return errors.New("every shard refused the credentials")
			case <-ctx.Done():
				return nil
			}
		}},
		{Name: "poller", Run: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }},
	}
	hc, _, done := runServer(t, 4*time.Second, workers, nil)
	eventually(t, "SERVING", func() bool { return healthOf(t, hc, "") == healthpb.HealthCheckResponse_SERVING })
	close(fail)
	eventually(t, "NOT_SERVING after the worker stopped", func() bool {
		return healthOf(t, hc, "") != healthpb.HealthCheckResponse_SERVING
	})
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "worker relay-loop stopped") || !strings.Contains(err.Error(), "refused the credentials") {
			t.Errorf("Run = %v; want the worker's terminal error", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after a worker stopped")
	}
}

// A failing dependency probe turns the server and the dependency's health
// name NOT_SERVING, and SERVING again when it recovers, without a restart.
func TestProbeFollowsTheDependency(t *testing.T) {
	var broken atomic.Bool
	probes := []server.Probe{
		{Name: "pulsar", Interval: 50 * time.Millisecond, Check: func(context.Context) error {
			if broken.Load() {
				return errors.New("connection refused")
			}
			return nil
		}},
		{Name: "shard-0", Interval: 50 * time.Millisecond, Check: func(context.Context) error { return nil }},
		{Name: "shard-1", Partial: true, Interval: 50 * time.Millisecond, Check: func(context.Context) error { return errors.New("down") }},
	}
	hc, cancel, done := runServer(t, 2*time.Second, nil, probes)
	serving := func(svc string) func() bool {
		return func() bool { return healthOf(t, hc, svc) == healthpb.HealthCheckResponse_SERVING }
	}
	notServing := func(svc string) func() bool {
		return func() bool { return healthOf(t, hc, svc) == healthpb.HealthCheckResponse_NOT_SERVING }
	}
	eventually(t, "SERVING although a partial dependency is down", serving(""))
	eventually(t, "dependency/shard-1 NOT_SERVING", notServing(server.DependencyHealthName("shard-1")))
	broken.Store(true)
	eventually(t, "NOT_SERVING while the broker is down", notServing(""))
	eventually(t, "dependency/pulsar NOT_SERVING", notServing(server.DependencyHealthName("pulsar")))
	if got := healthOf(t, hc, server.DependencyHealthName("shard-0")); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("dependency/shard-0 = %v while only the broker is down", got)
	}
	broken.Store(false)
	eventually(t, "SERVING again after the broker returned", serving(""))
	eventually(t, "dependency/pulsar SERVING", serving(server.DependencyHealthName("pulsar")))
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after a clean shutdown = %v, want nil", err)
	}
}

// A worker stuck on a dependency that ignores its context never keeps the
// process past its shutdown grace.
func TestShutdownWithinGraceDespiteAStuckWorker(t *testing.T) {
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	workers := []server.Worker{{Name: "producer-creation", Run: func(context.Context) error { <-stuck; return nil }}}
	const grace = time.Second
	hc, cancel, done := runServer(t, grace, workers, nil)
	eventually(t, "SERVING", func() bool { return healthOf(t, hc, "") == healthpb.HealthCheckResponse_SERVING })
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil (the caller ended it)", err)
		}
		// drain (<= grace/4) + graceful stop (<= grace) + wait for workers (<= grace)
		if took := time.Since(start); took > 3*grace+500*time.Millisecond {
			t.Errorf("shutdown took %s with a %s grace", took, grace)
		}
	case <-time.After(10 * grace):
		t.Fatal("Run did not return: a stuck worker kept the server alive")
	}
}
