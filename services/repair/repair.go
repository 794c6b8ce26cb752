package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/audit"
	"github.com/resultsync/resultsync/pkg/auth"
	"github.com/resultsync/resultsync/pkg/chstore"
	"github.com/resultsync/resultsync/pkg/config"
	"github.com/resultsync/resultsync/pkg/logging"
	"github.com/resultsync/resultsync/pkg/mysqldb"
	"github.com/resultsync/resultsync/pkg/reconcile"
	"github.com/resultsync/resultsync/pkg/repair"
	"github.com/resultsync/resultsync/pkg/repairapi"
	"github.com/resultsync/resultsync/pkg/server"
	"github.com/resultsync/resultsync/pkg/shard"
)

// Config is the repair server's configuration.
type Config struct {
	Server     server.Config
	Shards     string
	ControlDSN string
	CHAddr     string
	CHDatabase string
	Executor   repair.ExecutorConfig
	// AllowSelfApproval is the documented single-operator setting: the
	// requester of a removal or rebuild may approve it. Off by default: the
	// approver must be another admin.
	AllowSelfApproval bool
	// EpochFloor is the transformation epoch of the live consumer path; a
	// rebuild's epoch must exceed it (and every epoch stored in its scope).
	EpochFloor int
	// MaxItems caps the discrepancies of one CreateRepair.
	MaxItems int
}

func (c *Config) load(args []string) error {
	l := config.NewLoader("repair")
	c.Server.Flags(l, "RS_REPAIR", "127.0.0.1:7105", "127.0.0.1:7205")
	d := repair.DefaultExecutorConfig()
	l.Need(&c.Shards, "shards", "RS_SHARDS", config.DefaultShards, "shard map id=dsn,... (the authoritative side: replays, verification)", true)
	l.Need(&c.ControlDSN, "control-dsn", "RS_CONTROL_DSN", config.DefaultControlDSN, "control database DSN (repairs, discrepancies, audit log)", true)
	l.Need(&c.CHAddr, "clickhouse-addr", "RS_CH_ADDR", config.DefaultClickHouseAddr, "ClickHouse native address (origins, removals, rebuilds, verification)", false)
	l.String(&c.CHDatabase, "clickhouse-database", "RS_CH_DATABASE", config.DefaultClickHouseDatabase, "ClickHouse database")
	l.Int(&c.Executor.RowsPerSecond, "rows-per-second", "RS_REPAIR_ROWS_PER_SECOND", d.RowsPerSecond, "rows repaired per second on each shard, over every running repair")
	l.Int(&c.Executor.WorkersPerShard, "workers-per-shard", "RS_REPAIR_WORKERS_PER_SHARD", d.WorkersPerShard, "items of one repair applied at once per shard (within the rate)")
	l.Int(&c.Executor.MaxConcurrent, "max-concurrent", "RS_REPAIR_MAX_CONCURRENT", d.MaxConcurrent, "repairs and rebuilds run at once")
	l.Duration(&c.Executor.Poll, "poll", "RS_REPAIR_POLL", d.Poll, "how often runnable repairs are looked for and leases renewed")
	l.Duration(&c.Executor.Lease, "lease", "RS_REPAIR_LEASE", d.Lease, "how long a crashed server's repairs wait before another resumes them (>= 3 polls)")
	l.Duration(&c.Executor.VerifyTimeout, "verify-timeout", "RS_REPAIR_VERIFY_TIMEOUT", d.VerifyTimeout, "verification deadline: keys still wrong after it fail the repair")
	l.Duration(&c.Executor.VerifyPoll, "verify-poll", "RS_REPAIR_VERIFY_POLL", d.VerifyPoll, "how often an unfinished verification compares again")
	l.Int(&c.Executor.ItemAttempts, "item-attempts", "RS_REPAIR_ITEM_ATTEMPTS", d.ItemAttempts, "attempts to apply one item before it fails")
	l.Duration(&c.Executor.RetryBackoff, "retry-backoff", "RS_REPAIR_RETRY_BACKOFF", d.RetryBackoff, "wait before an item's second attempt (doubled after)")
	l.Bool(&c.AllowSelfApproval, "allow-self-approval", "RS_REPAIR_ALLOW_SELF_APPROVAL", false,
		"single-operator setting: let the requester of a removal or rebuild approve it (default: another admin must)")
	l.Int(&c.EpochFloor, "epoch-floor", "RS_REPAIR_EPOCH_FLOOR", 0, "transformation epoch of the live consumer path; rebuild epochs must exceed it")
	l.Int(&c.MaxItems, "max-items", "RS_REPAIR_MAX_ITEMS", 100000, "discrepancies of one CreateRepair at most (the rest in later requests)")
	if err := l.Parse(args); err != nil {
		return err
	}
	return c.Validate()
}

// Validate rejects impossible settings.
func (c *Config) Validate() error {
	errs := []error{c.Server.Validate(), c.Executor.Validate()}
	if m, err := shard.Parse(c.Shards); err != nil {
		errs = append(errs, err)
	} else if len(m.Shards) < 2 {
		errs = append(errs, errors.New("the shard map needs at least two shards"))
	}
	if c.ControlDSN == "" || c.CHAddr == "" || c.CHDatabase == "" {
		errs = append(errs, errors.New("control-dsn, clickhouse-addr and clickhouse-database are required"))
	}
	if c.EpochFloor < 0 || c.EpochFloor > 65534 {
		errs = append(errs, fmt.Errorf("epoch-floor must be 0-65534, got %d", c.EpochFloor))
	}
	if c.MaxItems < 1 {
		errs = append(errs, fmt.Errorf("max-items must be at least 1, got %d", c.MaxItems))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("repair config: %w", err)
	}
	return nil
}

func realMain(ctx context.Context, args []string) error {
	var cfg Config
	if err := cfg.load(args); err != nil {
		return err
	}
	log, err := logging.New(os.Stderr, "repair", cfg.Server.LogLevel)
	if err != nil {
		return err
	}
	m, _ := shard.Parse(cfg.Shards)
	var dbs []*sql.DB
	for _, s := range m.Shards {
		db, err := mysqldb.OpenLazy(s.DSN, mysqldb.Options{MaxOpen: 8})
		if err != nil {
			return fmt.Errorf("shard %s: %w", s.ID, err)
		}
		defer db.Close()
		dbs = append(dbs, db)
	}
	control, err := mysqldb.OpenLazy(cfg.ControlDSN, mysqldb.Options{MaxOpen: 8})
	if err != nil {
		return fmt.Errorf("control database: %w", err)
	}
	defer control.Close()
	// Opened lazily: while ClickHouse is down, plans of removals and
	// verifications fail with the reason, and the API keeps serving.
	conn, err := chstore.OpenLazy(chstore.Options{Addr: cfg.CHAddr, Database: cfg.CHDatabase, DialTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer conn.Close()

	w := wiring{Log: log, Shards: m, ShardDBs: dbs, CH: conn, RowsPerSecond: cfg.Executor.RowsPerSecond}
	replayer, err := newReplayer(w)
	if err != nil {
		return fmt.Errorf("replayer: %w", err)
	}
	editor, err := newTargetEditor(w)
	if err != nil {
		return fmt.Errorf("target editor: %w", err)
	}
	rebuilder, err := newRebuilder(w)
	if err != nil {
		return fmt.Errorf("rebuilder: %w", err)
	}
	epochs, err := newEpochSource(w)
	if err != nil {
		return fmt.Errorf("epoch source: %w", err)
	}

	srv, err := server.New(log, cfg.Server, server.WithAuth(auth.RepairPolicy))
	if err != nil {
		return err
	}
	store := repair.NewStore(control)
	deps := repair.Deps{Store: store, Runs: reconcile.NewRunStore(control), Replayer: replayer, Editor: editor, Rebuilder: rebuilder,
		Source: reconcile.MySQLSource{Shards: dbs}, Target: reconcile.ClickHouseTarget{Conn: conn},
		ShardOf: func(dataID int64) string { return m.Shards[m.Owner(dataID)].ID }, Epochs: epochs}
	exec, err := repair.NewExecutor(log, cfg.Executor, deps, srv.Registry())
	if err != nil {
		return err
	}
	deps.Wake = exec.Wake
	mgr, err := repair.NewManager(repair.ManagerConfig{AllowSelfApproval: cfg.AllowSelfApproval, EpochFloor: uint16(cfg.EpochFloor), MaxItems: cfg.MaxItems}, deps)
	if err != nil {
		return err
	}
	fitnessv1.RegisterRepairServiceServer(srv.GRPC(), repairapi.New(mgr, store, audit.New(control)))
	if cfg.AllowSelfApproval {
		log.Warn("self-approval is allowed (--allow-self-approval): the requester of a removal or rebuild may approve it; use only where one operator runs the platform")
	}
	log.Info("repair server configured", "shards", m.IDs(), "rows_per_second_per_shard", cfg.Executor.RowsPerSecond,
		"verify_timeout", cfg.Executor.VerifyTimeout, "lease", cfg.Executor.Lease, "epoch_floor", cfg.EpochFloor)

	probes := []server.Probe{
		// The API and the executor keep their state in the control database:
		// without it (or without the repair tables) nothing can be done.
		{Name: "control", Check: store.Ping},
		{Name: "clickhouse", Check: conn.Ping, Partial: true},
	}
	for i, s := range m.Shards {
		probes = append(probes, server.Probe{Name: s.ID, Check: dbs[i].PingContext, Partial: true})
	}
	// The executor resumes, at start-up, the repairs a stop or crash left
	// EXECUTING or AWAITING_VERIFICATION (see repair.Executor).
	return srv.Run(ctx, []server.Worker{{Name: "repair-executor", Run: exec.Run}}, probes)
}
