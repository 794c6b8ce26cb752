package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// The health service names of the two questions an orchestrator asks.
//
// Liveness ("liveness", HTTP /livez) is whether the process itself works:
// Run's supervisor is running and its watchdog answers, and every worker is
// running (none has returned or panicked) and, when it declares a
// Worker.Stall, has called Beat within it. It never looks at a dependency,
// so an outage of a database, the broker or ClickHouse, however long, does
// not make a server restartable; a restart would not bring them back.
//
// Readiness ("readiness", the overall service "" and HTTP /readyz, /healthz)
// is whether the server can do its job now: live, and every required
// dependency probe passing (see Probe).
const (
	LivenessHealthName  = "liveness"
	ReadinessHealthName = "readiness"
)

// watchdogEvery is how often the supervisor's watchdog runs a round;
// watchdogSilence how long without a round makes the process not live.
const (
	watchdogEvery   = time.Second
	watchdogSilence = 15 * time.Second
)

// liveness is the state /livez and the "liveness" health name report.
type liveness struct {
	mu      sync.Mutex
	running bool                  // Run's supervisor is up
	dead    string                // why the process is not live, for good; "" while live
	workers map[string]*heartbeat // workers with a stall limit
	tick    atomic.Int64          // the watchdog's last round, UnixNano
}

type heartbeat struct {
	stall time.Duration
	last  atomic.Int64 // UnixNano of the last Beat
}

func newLiveness() *liveness { return &liveness{workers: map[string]*heartbeat{}} }

type beatKey struct{}

// Beat records that the worker running under ctx makes progress. A worker
// with a Worker.Stall calls it at least that often (each loop round, each
// retry of a failing dependency: waiting for a dependency is progress, a
// goroutine stuck on a lock is not); it is a no-op under any other context.
func Beat(ctx context.Context) {
	if hb, ok := ctx.Value(beatKey{}).(*heartbeat); ok {
		hb.last.Store(time.Now().UnixNano())
	}
}

// start marks the supervisor running, with the workers' stall limits.
func (l *liveness) start(workers []Worker) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now().UnixNano()
	l.running, l.dead = true, ""
	l.tick.Store(now)
	for _, w := range workers {
		if w.Stall > 0 {
			hb := &heartbeat{stall: w.Stall}
			hb.last.Store(now)
			l.workers[w.Name] = hb
		}
	}
}

// workerContext is ctx carrying the worker's heartbeat, if it has one.
func (l *liveness) workerContext(ctx context.Context, name string) context.Context {
	l.mu.Lock()
	hb := l.workers[name]
	l.mu.Unlock()
	if hb == nil {
		return ctx
	}
	return context.WithValue(ctx, beatKey{}, hb)
}

// die makes the process not live for good, for reason (the first one kept).
func (l *liveness) die(reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dead == "" {
		l.dead = reason
	}
}

func (l *liveness) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running = false
}

// problems lists why the process is not live at now (none: live).
func (l *liveness) problems(now time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var p []string
	switch {
	case !l.running:
		p = append(p, "supervisor not running")
	case l.dead != "":
		p = append(p, l.dead)
	}
	if silent := now.Sub(time.Unix(0, l.tick.Load())); l.running && silent > watchdogSilence {
		p = append(p, fmt.Sprintf("supervisor watchdog silent for %s", silent.Round(time.Second)))
	}
	var stalled []string
	for name, hb := range l.workers {
		if since := now.Sub(time.Unix(0, hb.last.Load())); since > hb.stall {
			stalled = append(stalled, fmt.Sprintf("worker %s wedged: no heartbeat for %s (stall limit %s)", name, since.Round(time.Second), hb.stall))
		}
	}
	slices.Sort(stalled)
	return append(p, stalled...)
}

// watch is the supervisor's watchdog: every round it takes the readiness
// state's lock (a deadlock there stops the rounds, and so liveness), records
// the round, and publishes liveness on its health name, logging a change.
func (l *liveness) watch(ctx context.Context, s *Server, h *healthState) {
	t := time.NewTicker(watchdogEvery)
	defer t.Stop()
	was := true
	for {
		h.mu.Lock()
		//nolint:staticcheck // SA2001: an empty critical section on purpose: the round proves the lock is free
		h.mu.Unlock()
		l.tick.Store(time.Now().UnixNano())
		p := l.problems(time.Now())
		st := healthpb.HealthCheckResponse_SERVING
		if len(p) > 0 {
			st = healthpb.HealthCheckResponse_NOT_SERVING
		}
		if live := len(p) == 0; live != was {
			if live {
				s.log.Info("live again")
			} else {
				s.log.Error("not live; an orchestrator should restart the process", "problems", strings.Join(p, "; "))
			}
			was = live
		}
		s.health.SetServingStatus(LivenessHealthName, st)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// livez answers 200 "ok" while the process is live, 503 with one line per
// problem otherwise. No dependency is consulted.
func (s *Server) livez(w http.ResponseWriter, _ *http.Request) {
	if p := s.live.problems(time.Now()); len(p) > 0 {
		http.Error(w, "not live:\n"+strings.Join(p, "\n"), http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// readyz answers 200 "ok" while the overall health is SERVING, 503 naming
// what is not (dependency names and states only: probe errors, which may
// name internal addresses, go to the log).
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	resp, err := s.health.Check(r.Context(), &healthpb.HealthCheckRequest{})
	if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
		_, _ = w.Write([]byte("ok\n"))
		return
	}
	lines := []string{"not ready:"}
	if h := s.state.Load(); h != nil {
		lines = append(lines, h.report()...)
	} else {
		lines = append(lines, "not started")
	}
	http.Error(w, strings.Join(lines, "\n"), http.StatusServiceUnavailable)
}
