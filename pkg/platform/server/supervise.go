package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Worker is a long-running part of a server: a relay loop, a consumer, a
// poller. Run returns when ctx ends; any other return, nil included, is
// terminal: the server turns NOT_SERVING, stops, and Server.Run returns an
// error naming the worker, so the process exits non-zero and an orchestrator
// restarts it.
//
// A worker that panics is stopped the same way (the panic and its stack are
// logged). Liveness (LivenessHealthName, /livez) fails as soon as a worker
// stops, and, for a worker with a Stall, when it has not called Beat(ctx) for
// longer than Stall: it is wedged (a deadlock, a call without a deadline),
// and only a restart helps.
type Worker struct {
	Name string
	Run  func(ctx context.Context) error
	// Stall, when positive, is the longest the worker may go without
	// calling Beat with the context Run gave it before the process counts
	// as not live. 0: the worker is not watched for stalls.
	Stall time.Duration
}

// Probe checks one dependency (a shard, the broker, ClickHouse) every
// Interval. While it fails, the dependency's health name
// ("dependency/<Name>") and the server's overall health are NOT_SERVING; they
// turn SERVING again by themselves when it passes. A failing probe is not
// terminal: the server keeps retrying its work.
type Probe struct {
	Name     string
	Check    func(ctx context.Context) error
	Interval time.Duration // default 2s
	Timeout  time.Duration // default: Interval
	// Partial marks a dependency the server can partly work without (one
	// shard of several): its failure shows on its own health name only,
	// not on the server's overall health.
	Partial bool
}

// DependencyHealthName is the health service name of a probe's dependency.
func DependencyHealthName(probe string) string { return "dependency/" + probe }

// Run serves the registered gRPC services and runs every worker and probe
// under one supervisor, until ctx ends or a worker stops:
//   - health is SERVING only while every probe passes and every worker runs;
//   - a worker's terminal error is logged with its reason, turns health
//     NOT_SERVING, stops the server and is returned;
//   - on shutdown the server drains and stops within ShutdownGrace, and Run
//     waits for the workers at most ShutdownGrace more: a worker stuck on a
//     dependency never keeps the process alive past its grace.
//
// It returns nil after a clean shutdown caused by ctx.
func (s *Server) Run(ctx context.Context, workers []Worker, probes []Probe) error {
	if s.grpcLis == nil {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	h := newHealthState(s, probes)
	h.publish()
	s.state.Store(h)
	s.live.start(workers)
	defer s.live.stop()

	var wg sync.WaitGroup
	go func() {
		if err := s.grpc.Serve(s.grpcLis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			cancel(fmt.Errorf("serving gRPC: %w", err))
		}
	}()
	var hsrv *http.Server
	if s.httpLis != nil {
		hsrv = &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
			WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10, ErrorLog: HTTPErrorLog(s.log)}
		go func() {
			if err := hsrv.Serve(s.httpLis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				cancel(fmt.Errorf("serving HTTP: %w", err))
			}
		}()
	}
	for _, p := range probes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.probe(ctx, p)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.live.watch(ctx, s, h)
	}()
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.runWorker(s.live.workerContext(ctx, w.Name), w)
			if ctx.Err() != nil {
				return // shutting down: whatever it returned is not a failure
			}
			if err == nil {
				err = errors.New("returned before shutdown")
			}
			err = fmt.Errorf("worker %s stopped: %w", w.Name, err)
			s.log.Error("worker stopped; the server stops so it can be restarted", "worker", w.Name, "err", err)
			s.live.die(err.Error())
			h.fail()
			cancel(err)
		}()
	}
	s.log.Info("server started", "grpc_addr", s.GRPCAddr(), "http_addr", s.HTTPAddr(), "tls", s.tls != nil, "workers", len(workers), "probes", len(probes))

	<-ctx.Done()
	cause := context.Cause(ctx)
	s.shutdown(hsrv)

	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(s.cfg.ShutdownGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("workers did not stop within the shutdown grace; exiting without them", "grace", s.cfg.ShutdownGrace)
	}
	if errors.Is(cause, context.Canceled) || errors.Is(cause, context.DeadlineExceeded) {
		return nil // the caller's context ended: a clean shutdown
	}
	return cause
}

// runWorker runs w, turning a panic into its error (logged with the stack).
func (s *Server) runWorker(ctx context.Context, w Worker) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("worker panicked", "worker", w.Name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("panicked: %v", r)
		}
	}()
	return w.Run(ctx)
}

var errNotChecked = errors.New("not checked yet")

// healthState combines probe results into the published health.
type healthState struct {
	s       *Server
	names   []string        // probe names, in order
	partial map[string]bool // probes that do not affect overall health
	mu      sync.Mutex
	down    map[string]error // failing probes
	failed  bool             // a worker stopped: NOT_SERVING for good
}

func newHealthState(s *Server, probes []Probe) *healthState {
	h := &healthState{s: s, down: map[string]error{}, partial: map[string]bool{}}
	for _, p := range probes {
		h.partial[p.Name] = p.Partial
		// Unknown until the first check: not serving yet.
		h.names = append(h.names, p.Name)
		h.down[p.Name] = errNotChecked
	}
	return h
}

func (h *healthState) probe(ctx context.Context, p Probe) {
	interval := p.Interval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = interval
	}
	for {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		err := p.Check(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		h.set(p.Name, err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

func (h *healthState) set(name string, err error) {
	h.mu.Lock()
	prev, wasDown := h.down[name]
	switch {
	case err != nil && (!wasDown || errors.Is(prev, errNotChecked)):
		h.s.log.Warn("dependency unavailable; health NOT_SERVING until it recovers", "dependency", name, "err", err)
		h.down[name] = err
	case err != nil:
		h.down[name] = err
	case wasDown:
		if !errors.Is(prev, errNotChecked) {
			h.s.log.Info("dependency recovered", "dependency", name)
		}
		delete(h.down, name)
	}
	h.mu.Unlock()
	h.publish()
}

// report names what keeps the server from being ready: a stopped worker,
// the failing dependencies (names only: their errors are logged).
func (h *healthState) report() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var lines []string
	if h.failed {
		lines = append(lines, "a worker stopped")
	}
	for _, name := range h.names {
		if err, down := h.down[name]; down {
			what := "NOT_SERVING"
			if errors.Is(err, errNotChecked) {
				what = "not checked yet"
			}
			if h.partial[name] {
				what += " (partial: not required)"
			}
			lines = append(lines, DependencyHealthName(name)+" "+what)
		}
	}
	return lines
}

func (h *healthState) fail() {
	h.mu.Lock()
	h.failed = true
	h.mu.Unlock()
	h.publish()
}

func (h *healthState) publish() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, name := range h.names {
		st := healthpb.HealthCheckResponse_SERVING
		if _, down := h.down[name]; down {
			st = healthpb.HealthCheckResponse_NOT_SERVING
		}
		h.s.health.SetServingStatus(DependencyHealthName(name), st)
	}
	st := healthpb.HealthCheckResponse_SERVING
	if h.failed {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	}
	for name := range h.down {
		if !h.partial[name] {
			st = healthpb.HealthCheckResponse_NOT_SERVING
		}
	}
	h.s.setServing(st)
}
