package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/auth"
	"github.com/resultsync/resultsync/pkg/chstore"
	"github.com/resultsync/resultsync/pkg/config"
	"github.com/resultsync/resultsync/pkg/logging"
	"github.com/resultsync/resultsync/pkg/mysqldb"
	"github.com/resultsync/resultsync/pkg/reconcile"
	"github.com/resultsync/resultsync/pkg/reconcileapi"
	"github.com/resultsync/resultsync/pkg/server"
	"github.com/resultsync/resultsync/pkg/shard"
)

// Config is the reconcile server's configuration.
type Config struct {
	Server     server.Config
	Shards     string
	ControlDSN string
	CHAddr     string
	CHDatabase string
	Runner     reconcile.RunnerConfig
}

func (c *Config) load(args []string) error {
	l := config.NewLoader("reconcile")
	c.Server.Flags(l, "RS_RECONCILE", "127.0.0.1:7104", "127.0.0.1:7204")
	d := reconcile.DefaultRunnerConfig()
	l.Need(&c.Shards, "shards", "RS_SHARDS", config.DefaultShards, "shard map id=dsn,... (the authoritative side)", true)
	l.Need(&c.ControlDSN, "control-dsn", "RS_CONTROL_DSN", config.DefaultControlDSN, "control database DSN (runs, discrepancies)", true)
	l.Need(&c.CHAddr, "clickhouse-addr", "RS_CH_ADDR", config.DefaultClickHouseAddr, "ClickHouse native address", false)
	l.String(&c.CHDatabase, "clickhouse-database", "RS_CH_DATABASE", config.DefaultClickHouseDatabase, "ClickHouse database")
	l.Int(&c.Runner.Buckets, "buckets", "RS_RECONCILE_BUCKETS", d.Buckets, "buckets per comparison")
	l.Duration(&c.Runner.Grace, "grace", "RS_RECONCILE_GRACE", d.Grace, "wait before candidates are re-checked")
	l.Duration(&c.Runner.CatchUpWait, "catch-up-wait", "RS_RECONCILE_CATCH_UP_WAIT", d.CatchUpWait, "wait when the campaign revision moved during a scan")
	l.Int(&c.Runner.MaxBoundaryRetries, "max-boundary-retries", "RS_RECONCILE_MAX_BOUNDARY_RETRIES", d.MaxBoundaryRetries, "scans retried because the revision moved")
	if err := l.Parse(args); err != nil {
		return err
	}
	return c.Validate()
}

// Validate rejects impossible settings.
func (c *Config) Validate() error {
	errs := []error{c.Server.Validate()}
	if m, err := shard.Parse(c.Shards); err != nil {
		errs = append(errs, err)
	} else if len(m.Shards) < 2 {
		errs = append(errs, errors.New("the shard map needs at least two shards"))
	}
	if c.Runner.Buckets < 1 || c.Runner.Buckets > 1<<20 || c.Runner.Grace < 0 || c.Runner.CatchUpWait < 0 || c.Runner.MaxBoundaryRetries < 0 {
		errs = append(errs, errors.New("buckets must be 1..1048576; grace, catch-up-wait and max-boundary-retries not negative"))
	}
	if c.ControlDSN == "" || c.CHAddr == "" || c.CHDatabase == "" {
		errs = append(errs, errors.New("control-dsn, clickhouse-addr and clickhouse-database are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("reconcile config: %w", err)
	}
	return nil
}

func realMain(ctx context.Context, args []string) error {
	var cfg Config
	if err := cfg.load(args); err != nil {
		return err
	}
	log, err := logging.New(os.Stderr, "reconcile", cfg.Server.LogLevel)
	if err != nil {
		return err
	}
	m, _ := shard.Parse(cfg.Shards)
	var src reconcile.MySQLSource
	for _, s := range m.Shards {
		db, err := mysqldb.OpenLazy(s.DSN, mysqldb.Options{MaxOpen: 8})
		if err != nil {
			return fmt.Errorf("shard %s: %w", s.ID, err)
		}
		defer db.Close()
		src.Shards = append(src.Shards, db)
	}
	control, err := mysqldb.OpenLazy(cfg.ControlDSN, mysqldb.Options{MaxOpen: 8})
	if err != nil {
		return fmt.Errorf("control database: %w", err)
	}
	defer control.Close()
	store := reconcile.NewRunStore(control)
	if n, err := store.FailInterrupted(ctx); err != nil {
		log.Warn("could not mark interrupted runs", "err", err)
	} else if n > 0 {
		log.Warn("runs interrupted by the last restart marked FAILED", "runs", n)
	}
	// Opened lazily: while ClickHouse is down, runs fail with the reason and the API keeps serving.
	conn, err := chstore.OpenLazy(chstore.Options{Addr: cfg.CHAddr, Database: cfg.CHDatabase, DialTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer conn.Close()

	srv, err := server.New(log, cfg.Server, server.WithAuth(auth.ReconcilePolicy))
	if err != nil {
		return err
	}
	runner := reconcile.NewRunner(log, cfg.Runner, src, src, reconcile.ClickHouseTarget{Conn: conn}, store, srv.Registry())
	svc := reconcileapi.New(ctx, store, runner, src)
	fitnessv1.RegisterReconcileServiceServer(srv.GRPC(), svc)
	err = srv.Serve(ctx)
	svc.Wait()
	return err
}
