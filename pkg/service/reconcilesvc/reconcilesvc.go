// Package reconcilesvc is the reconcile server as one component: Load reads
// its configuration, New assembles it (shard and control database pools,
// ClickHouse, the run executor, the authenticated ReconcileService) and Run
// serves it under the supervisor of pkg/platform/server, with a probe per dependency.
// services/reconcile and the tests build the server through New.
package reconcilesvc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/lagwatch"
	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/changefeed"
	"github.com/resultsync/resultsync/pkg/platform/config"
	"github.com/resultsync/resultsync/pkg/platform/idempotency"
	"github.com/resultsync/resultsync/pkg/platform/logging"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcileapi"
	"github.com/resultsync/resultsync/pkg/service/stores"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
)

// Config is the reconcile server's configuration.
type Config struct {
	Server server.Config
	// Stores locate the shards (the authoritative side), the control
	// database (runs, discrepancies) and the ClickHouse projection.
	Stores stores.Settings
	// Runner tunes the runs.
	Runner reconcile.RunnerConfig
	// Schedule turns the scheduled reconciliation on (one active instance
	// across the replicas, by a lease in the control database).
	Schedule bool
	// Scheduler tunes it; ScheduleDepth is its Depth by name.
	Scheduler     reconcile.SchedulerConfig
	ScheduleDepth string
	// ScheduleRowsPerSecond is Scheduler.RowsPerSecond as a flag (0: no cap).
	ScheduleRowsPerSecond int
	// ScheduleHolder names this replica in the scheduler lease (empty: host
	// name and a random suffix).
	ScheduleHolder string
	// Watch bounds WatchReconciliationRun streams and sets their fallback
	// poll (--watch-poll, --watch-max-duration).
	Watch changefeed.WatchOptions
}

// Load reads the configuration from args (without the program name) and the
// environment, and validates it. Every missing, malformed or impossible
// setting is reported in one error; no secret appears in it. --help returns
// flag.ErrHelp after printing the usage.
func Load(args []string) (Config, error) {
	var c Config
	l := config.NewLoader("reconcile")
	c.Server.Flags(l, "RS_RECONCILE", "127.0.0.1:7104", "127.0.0.1:7204")
	d := reconcile.DefaultRunnerConfig()
	c.Stores.Flags(l, stores.All, stores.Help{Shards: "the authoritative side", Control: "runs, discrepancies"})
	l.Int(&c.Runner.Buckets, "buckets", "RS_RECONCILE_BUCKETS", d.Buckets, "buckets per comparison")
	l.Duration(&c.Runner.Grace, "grace", "RS_RECONCILE_GRACE", d.Grace, "wait before candidates are re-checked")
	l.Duration(&c.Runner.CatchUpWait, "catch-up-wait", "RS_RECONCILE_CATCH_UP_WAIT", d.CatchUpWait,
		"longest wait for the projection's applied positions to reach a run's boundary (checked every 200ms)")
	l.Int(&c.Runner.MaxBoundaryRetries, "max-boundary-retries", "RS_RECONCILE_MAX_BOUNDARY_RETRIES", d.MaxBoundaryRetries, "scans retried because the revision moved")
	l.Int(&c.Runner.MaxConcurrentRuns, "max-concurrent-runs", "RS_RECONCILE_MAX_CONCURRENT_RUNS", d.MaxConcurrentRuns, "runs executed at once; more wait QUEUED")
	l.Int(&c.Runner.MaxQueuedRuns, "max-queued-runs", "RS_RECONCILE_MAX_QUEUED_RUNS", d.MaxQueuedRuns, "runs waiting QUEUED beyond those executing; more are refused (RESOURCE_EXHAUSTED)")
	sd := reconcile.DefaultSchedulerConfig()
	l.Bool(&c.Schedule, "schedule", "RS_RECONCILE_SCHEDULE", true, "run the reconciliation schedule (one active replica, by a lease in the control database)")
	l.Duration(&c.Scheduler.Interval, "schedule-interval", "RS_RECONCILE_SCHEDULE_INTERVAL", sd.Interval, "time between the starts of two schedule cycles")
	l.Duration(&c.Scheduler.Period, "schedule-period", "RS_RECONCILE_SCHEDULE_PERIOD", sd.Period,
		"every bucket of every campaign is compared at CONTENT depth, and every campaign has a clean run, within this period")
	l.String(&c.ScheduleDepth, "schedule-depth", "RS_RECONCILE_SCHEDULE_DEPTH", "VERSIONS", "depth of the scheduled whole-campaign runs: VERSIONS or CONTENT")
	l.Int(&c.Scheduler.MaxRunsPerCycle, "schedule-max-runs", "RS_RECONCILE_SCHEDULE_MAX_RUNS", sd.MaxRunsPerCycle, "runs one schedule cycle starts at most (executed one at a time)")
	l.Int(&c.ScheduleRowsPerSecond, "schedule-rows-per-second", "RS_RECONCILE_SCHEDULE_ROWS_PER_SECOND", int(sd.RowsPerSecond),
		"rows the scheduled runs compare per second at most, averaged (0: no cap)")
	l.Duration(&c.Scheduler.LeaseTTL, "schedule-lease-ttl", "RS_RECONCILE_SCHEDULE_LEASE_TTL", sd.LeaseTTL, "scheduler lease duration (renewed every third of it)")
	l.String(&c.ScheduleHolder, "schedule-holder", "RS_RECONCILE_SCHEDULE_HOLDER", "", "this replica's name in the scheduler lease (default: host name and a random suffix)")
	c.Watch.Flags(l, "RS_RECONCILE")
	if err := l.Load(args, c.check); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate rejects missing and impossible settings, naming every one.
func (c *Config) Validate() error { return config.Validate("reconcile", c.check) }

// check reports every invalid setting (config.Loader.Load, config.Validate).
func (c *Config) check(loaded bool) error {
	errs := []error{c.Server.Validate(), c.Stores.Check(stores.All, loaded), c.Watch.Validate()}
	if _, err := logging.New(io.Discard, "reconcile", c.Server.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if c.Runner.Buckets < 1 || c.Runner.Buckets > 1<<20 {
		errs = append(errs, fmt.Errorf("buckets must be 1..1048576, got %d", c.Runner.Buckets))
	}
	if c.Runner.Grace < 0 {
		errs = append(errs, fmt.Errorf("grace must not be negative, got %s", c.Runner.Grace))
	}
	if c.Runner.CatchUpWait < 0 {
		errs = append(errs, fmt.Errorf("catch-up-wait must not be negative, got %s", c.Runner.CatchUpWait))
	}
	if c.Runner.MaxConcurrentRuns < 1 || c.Runner.MaxConcurrentRuns > 64 {
		errs = append(errs, fmt.Errorf("max-concurrent-runs must be 1..64, got %d", c.Runner.MaxConcurrentRuns))
	}
	if c.Runner.MaxQueuedRuns < 1 || c.Runner.MaxQueuedRuns > 10000 {
		errs = append(errs, fmt.Errorf("max-queued-runs must be 1..10000, got %d", c.Runner.MaxQueuedRuns))
	}
	if c.Runner.MaxBoundaryRetries < 0 {
		errs = append(errs, fmt.Errorf("max-boundary-retries must not be negative, got %d", c.Runner.MaxBoundaryRetries))
	}
	if c.Schedule {
		if err := c.scheduler().Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// scheduler returns the scheduler's settings (ScheduleDepth and
// ScheduleRowsPerSecond folded in).
func (c *Config) scheduler() reconcile.SchedulerConfig {
	sc := c.Scheduler
	if c.ScheduleDepth != "" {
		d, err := reconcile.ParseDepth(c.ScheduleDepth)
		if err != nil {
			d = -1 // rejected by Validate
		}
		sc.Depth = d
	}
	if c.ScheduleRowsPerSecond != 0 {
		sc.RowsPerSecond = float64(c.ScheduleRowsPerSecond)
	}
	return sc
}

// errNotRecovered refuses new runs until the runs a restart interrupted are
// marked FAILED: marking them later would fail the new runs too.
var errNotRecovered = apierr.NewReason(apierr.Unavailable, apierr.NotRecovered,
	"runs interrupted by the last restart are not yet marked FAILED (is the control database reachable?); retry later")

// Service is an assembled reconcile server, listening but not yet serving.
type Service struct {
	log   *slog.Logger
	srv   *server.Server
	api   *reconcileapi.Service
	store *reconcile.RunStore
	pools *stores.Pools
	// runner executes the runs started through the API and by the
	// scheduler (worker "run-executor").
	runner *reconcile.Runner
	// schedules is the schedule (ListCampaigns); scheduler runs it (nil
	// when Schedule is off).
	schedules *reconcile.ScheduleStore
	scheduler *reconcile.Scheduler
	// recovered is set once the interrupted runs are marked FAILED; until
	// then StartReconciliationRun answers UNAVAILABLE and the control probe
	// fails.
	recovered atomic.Bool
}

// New validates cfg and assembles the server. Every database is opened
// lazily, so a dependency that is down does not stop the start: it shows on
// its health name and the calls that need it fail with UNAVAILABLE until it
// returns. New also tries once to mark FAILED the runs a restart left
// unfinished (the run executor keeps trying if the control database does
// not answer). The listeners are bound when New returns (GRPCAddr and
// HTTPAddr report them, so ":0" works). The Service must then be Run, which
// releases everything.
func New(ctx context.Context, log *slog.Logger, cfg Config) (_ *Service, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{log: log}
	if s.pools, err = stores.Open(cfg.Stores, stores.All, stores.Options{Shard: mysqldb.Options{MaxOpen: 8}, Control: mysqldb.Options{MaxOpen: 8}, Log: log}); err != nil {
		return nil, fmt.Errorf("reconcile server: %w", err)
	}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	s.store = reconcile.NewRunStore(s.pools.Control)
	rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
	s.failInterrupted(rctx)
	rcancel()

	s.srv, err = server.New(log, cfg.Server, server.WithAuth(auth.ReconcilePolicy), server.WithUnaryInterceptor(s.refuseUntilRecovered))
	if err != nil {
		return nil, err
	}
	src := reconcile.MySQLSource{Shards: s.pools.Shards}
	var outboxes []lagwatch.Shard
	for i, db := range s.pools.Shards {
		outboxes = append(outboxes, lagwatch.Shard{ID: s.pools.Map.Shards[i].ID, DB: db})
	}
	runner := reconcile.NewRunner(log, cfg.Runner, src, src, reconcile.ClickHouseTarget{Conn: s.pools.CH}, s.store, s.srv.Registry(),
		reconcile.WithFlight(reconcile.NewOutboxFlight(s.pools.CH, outboxes)))
	s.runner = runner
	s.schedules = reconcile.NewScheduleStore(s.pools.Control)
	if cfg.Schedule {
		if s.scheduler, err = reconcile.NewScheduler(log, cfg.scheduler(), runner, s.store, s.schedules, src, s.srv.Registry(), cfg.ScheduleHolder); err != nil {
			return nil, err
		}
	}
	s.api = reconcileapi.New(s.store, runner, src, reconcileapi.WithSchedule(s.schedules, cfg.Runner.Buckets), reconcileapi.WithWatch(cfg.Watch),
		reconcileapi.WithIdempotency(idempotency.New(s.pools.Control, idempotency.Options{Log: log})))
	fitnessv1.RegisterReconcileServiceServer(s.srv.GRPC(), s.api)
	if err := s.srv.Listen(); err != nil {
		return nil, err
	}
	return s, nil
}

// GRPCAddr is the bound gRPC address.
func (s *Service) GRPCAddr() string { return s.srv.GRPCAddr() }

// HTTPAddr is the bound metrics and health address, or "" when disabled.
func (s *Service) HTTPAddr() string { return s.srv.HTTPAddr() }

// Run serves until ctx ends (nil after a clean shutdown) or the server fails
// (its error), then closes every pool. Call it once.
//
// Probes: "control" and "clickhouse" (required: without either no run can
// be started or compared; "control" also fails until the interrupted runs
// are marked FAILED) and one per shard, named by its id (Partial: a run
// whose campaign needs a down shard fails with the reason).
//
// Worker "run-executor" marks the interrupted runs FAILED if New could not,
// then runs the runner's worker (reconcile.Runner.Run): it executes the runs
// the API and the scheduler submit, up to MaxConcurrentRuns at once, and
// when shutdown begins cancels the runs still going and ends those queued
// (each recorded FAILED with the reason) before it returns, within the
// supervisor's shutdown grace.
//
// Worker "scheduler" (unless Schedule is off) runs the reconciliation
// schedule (reconcile.Scheduler): it competes for the lease with the other
// replicas and, while it holds it, starts runs by itself; a control database
// outage pauses it (the "control" probe shows it), never ends it.
func (s *Service) Run(ctx context.Context) error {
	defer s.close()
	workers := []server.Worker{{Name: "run-executor", Run: s.runExecutor}}
	if s.scheduler != nil {
		workers = append(workers, server.Worker{Name: "scheduler", Run: s.runScheduler})
	}
	return s.srv.Run(ctx, workers, s.probes())
}

func (s *Service) probes() []server.Probe {
	control := server.Probe{Name: "control", Check: func(ctx context.Context) error {
		if err := s.pools.Control.PingContext(ctx); err != nil {
			return fmt.Errorf("control database: %w", err)
		}
		if !s.recovered.Load() {
			return errNotRecovered
		}
		return nil
	}}
	return append([]server.Probe{control, s.pools.ClickHouseProbe(false)}, s.pools.ShardProbes()...)
}

// runExecutor is the worker that executes the runs: once the interrupted
// runs are marked FAILED (no run is submitted before), the runner's worker,
// until ctx ends.
func (s *Service) runExecutor(ctx context.Context) error {
	for delay := time.Second; !s.recovered.Load() && ctx.Err() == nil; delay = min(2*delay, 15*time.Second) {
		select {
		case <-ctx.Done():
		case <-time.After(delay):
			s.failInterrupted(ctx)
		}
	}
	// Run even when ctx has ended: it closes the queue, so a run submitted
	// late is recorded FAILED instead of waiting for ever.
	return s.runner.Run(ctx)
}

// runScheduler is the worker that runs the reconciliation schedule once
// the interrupted runs are marked FAILED (the scheduler's runs would be
// failed with them otherwise); it returns when ctx ends.
func (s *Service) runScheduler(ctx context.Context) error {
	for !s.recovered.Load() {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
	return s.scheduler.Run(ctx)
}

// failInterrupted marks FAILED the runs a restart left unfinished (runs are
// not resumed) and records that it did.
func (s *Service) failInterrupted(ctx context.Context) {
	n, err := s.store.FailInterrupted(ctx)
	if err != nil {
		s.log.Warn("could not mark the runs interrupted by the last restart FAILED; new runs are refused until it succeeds", "err", err)
		return
	}
	if n > 0 {
		s.log.Warn("runs interrupted by the last restart marked FAILED", "runs", n)
	}
	s.recovered.Store(true)
}

// refuseUntilRecovered answers StartReconciliationRun with UNAVAILABLE until
// the interrupted runs are marked FAILED.
func (s *Service) refuseUntilRecovered(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if info.FullMethod == fitnessv1.ReconcileService_StartReconciliationRun_FullMethodName && !s.recovered.Load() {
		return nil, apierr.Status(errNotRecovered)
	}
	return h(ctx, req)
}

func (s *Service) close() {
	if s.pools != nil {
		_ = s.pools.Close()
	}
}
