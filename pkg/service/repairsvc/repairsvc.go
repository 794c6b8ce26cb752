// Package repairsvc is the repair server as one component: Load reads its
// configuration, New assembles it (shard, control and ClickHouse pools, the
// replayer, the projection editor, the rebuilder, the executor and the
// authenticated RepairService) and Run serves it under the supervisor of
// pkg/platform/server, with a probe per dependency. services/repair and the tests
// build the server through New.
package repairsvc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/lagwatch"
	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
	"github.com/resultsync/resultsync/pkg/platform/audit"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/changefeed"
	"github.com/resultsync/resultsync/pkg/platform/config"
	"github.com/resultsync/resultsync/pkg/platform/idempotency"
	"github.com/resultsync/resultsync/pkg/platform/logging"
	"github.com/resultsync/resultsync/pkg/platform/retention"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/platform/tlsconfig"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/recovery/rebuild"
	"github.com/resultsync/resultsync/pkg/recovery/repair"
	"github.com/resultsync/resultsync/pkg/recovery/repairapi"
	"github.com/resultsync/resultsync/pkg/recovery/replay"
	"github.com/resultsync/resultsync/pkg/service/stores"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
)

// Config is the repair server's configuration.
type Config struct {
	Server server.Config
	// Stores locate the shards (the authoritative side: replays,
	// verification), the control database (repairs, discrepancies, audit
	// log) and the projection (origins, removals, rebuilds, verification).
	Stores   stores.Settings
	Executor repair.ExecutorConfig
	// AllowSelfApproval is the documented single-operator setting: the
	// requester of a removal or rebuild may approve it. Off by default: the
	// approver must be another admin.
	AllowSelfApproval bool
	// EpochFloor is the transformation epoch of the live consumer path; a
	// rebuild's epoch must exceed it (and every epoch stored in its scope).
	EpochFloor int
	// MaxItems caps the discrepancies of one CreateRepair.
	MaxItems int
	// ReplayPath is how replays and tombstones are delivered: "broker"
	// (the default: published by the repair server itself to the relay's
	// topic, pkg/recovery/replay.Direct: no outbox writes on the shards) or "outbox"
	// (a re-armed or new outbox row on the record's shard, drained by the
	// relay, where a large repair queues ahead of live rows).
	ReplayPath string
	// PulsarURL and Topic locate the broker and the relay's topic (the
	// broker path only); PublishTimeout bounds one batch's acknowledgments.
	PulsarURL   string
	PulsarToken string // secret; empty: no authentication
	// PulsarTLS is the TLS of a pulsar+ssl:// URL (CA, client certificate).
	PulsarTLS      tlsconfig.Files
	Topic          string
	PublishTimeout time.Duration
	// LagInterval is how often the projection's lag per shard is measured
	// from durable state (pkg/delivery/lagwatch; the repair server has every store).
	LagInterval time.Duration
	// Watch bounds WatchRepair and WatchRebuild streams and sets their
	// fallback poll (--watch-poll, --watch-max-duration).
	Watch changefeed.WatchOptions
	// Retention is how long each growing table keeps its rows (the
	// retention worker; retention.go).
	Retention Retention
}

// Load reads the configuration from args (without the program name) and the
// environment, and validates it. Every missing, malformed or impossible
// setting is reported in one error; no secret appears in it. --help returns
// flag.ErrHelp after printing the usage.
func Load(args []string) (Config, error) {
	var c Config
	l := config.NewLoader("repair")
	c.Server.Flags(l, "RS_REPAIR", "127.0.0.1:7105", "127.0.0.1:7205")
	c.Stores.Flags(l, stores.All, stores.Help{Shards: "the authoritative side: replays, verification",
		Control: "repairs, discrepancies, audit log", ClickHouse: "origins, removals, rebuilds, verification"})
	d := repair.DefaultExecutorConfig()
	l.Int(&c.Executor.RowsPerSecond, "rows-per-second", "RS_REPAIR_ROWS_PER_SECOND", d.RowsPerSecond, "rows repaired per second on each shard, over every running repair")
	l.Int(&c.Executor.WorkersPerShard, "workers-per-shard", "RS_REPAIR_WORKERS_PER_SHARD", d.WorkersPerShard, "items of one repair applied at once per shard (within the rate)")
	l.Int(&c.Executor.BatchSize, "batch-size", "RS_REPAIR_BATCH_SIZE", d.BatchSize, "replays per shard transaction and control commit at most (bounded by rows-per-second/20 too)")
	l.Int(&c.Executor.MaxConcurrent, "max-concurrent", "RS_REPAIR_MAX_CONCURRENT", d.MaxConcurrent, "repairs and rebuilds run at once")
	l.Duration(&c.Executor.Poll, "poll", "RS_REPAIR_POLL", d.Poll, "while repairs run here: how often their leases are renewed and more runnable work is looked for")
	l.Duration(&c.Executor.IdlePoll, "idle-poll", "RS_REPAIR_IDLE_POLL", d.IdlePoll,
		"while none runs here: how often runnable repairs are looked for (work created or approved through this server starts at once; this finds other replicas' work)")
	l.Duration(&c.Executor.Lease, "lease", "RS_REPAIR_LEASE", d.Lease, "how long a crashed server's repairs wait before another resumes them (>= 3 polls)")
	l.Duration(&c.Executor.VerifyTimeout, "verify-timeout", "RS_REPAIR_VERIFY_TIMEOUT", d.VerifyTimeout, "verification deadline: keys still wrong after it fail the repair")
	l.Duration(&c.Executor.VerifyPoll, "verify-poll", "RS_REPAIR_VERIFY_POLL", d.VerifyPoll, "how often an unfinished verification compares again")
	l.Int(&c.Executor.ItemAttempts, "item-attempts", "RS_REPAIR_ITEM_ATTEMPTS", d.ItemAttempts, "attempts to apply one item before it fails")
	l.Duration(&c.Executor.RetryBackoff, "retry-backoff", "RS_REPAIR_RETRY_BACKOFF", d.RetryBackoff, "wait before an item's second attempt (doubled after)")
	l.Bool(&c.AllowSelfApproval, "allow-self-approval", "RS_REPAIR_ALLOW_SELF_APPROVAL", false,
		"single-operator setting: let the requester of a removal or rebuild approve it (default: another admin must)")
	l.Int(&c.EpochFloor, "epoch-floor", "RS_REPAIR_EPOCH_FLOOR", 0, "transformation epoch of the live consumer path; rebuild epochs must exceed it")
	l.Int(&c.MaxItems, "max-items", "RS_REPAIR_MAX_ITEMS", 100000, "discrepancies of one CreateRepair at most (the rest in later requests)")
	l.String(&c.ReplayPath, "replay-path", "RS_REPAIR_REPLAY_PATH", ReplayPathBroker,
		"how replays and tombstones are delivered: broker (published by this server to the relay's topic: no outbox writes on the shards, the live path's freshness kept) or outbox (a re-armed outbox row on the record's shard, drained by the relay behind live rows)")
	l.Need(&c.PulsarURL, "pulsar-url", "RS_PULSAR_URL", config.DefaultPulsarURL, "Pulsar broker URL, the relay's (replay-path broker)", false)
	l.PulsarToken(&c.PulsarToken)
	stores.PulsarTLSFlags(l, &c.PulsarTLS)
	l.String(&c.Topic, "topic", "RS_TOPIC", config.DefaultTopic, "topic of FitnessResultChanged events, the relay's (replay-path broker)")
	l.Duration(&c.PublishTimeout, "publish-timeout", "RS_REPAIR_PUBLISH_TIMEOUT", 10*time.Second,
		"bound on the broker's acknowledgments of one batch of replays (replay-path broker)")
	l.Duration(&c.LagInterval, "lag-interval", "RS_REPAIR_LAG_INTERVAL", 15*time.Second,
		"how often the projection's lag per shard is measured from ClickHouse and the shards' outboxes (projection_durable_lag_seconds)")
	c.Watch.Flags(l, "RS_REPAIR")
	c.Retention.flags(l)
	if err := l.Load(args, c.check); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate rejects missing and impossible settings, naming every one.
func (c *Config) Validate() error { return config.Validate("repair", c.check) }

// check reports every invalid setting (config.Loader.Load, config.Validate).
func (c *Config) check(loaded bool) error {
	errs := []error{c.Server.Validate(), c.Executor.Validate(), c.Stores.Check(stores.All, loaded), c.Retention.Validate()}
	errs = append(errs, c.Watch.Validate())
	if _, err := logging.New(io.Discard, "repair", c.Server.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if c.EpochFloor < 0 || c.EpochFloor > 65534 {
		errs = append(errs, fmt.Errorf("epoch-floor must be 0-65534, got %d", c.EpochFloor))
	}
	if c.LagInterval < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("lag-interval must be at least 100ms, got %s", c.LagInterval))
	}
	switch c.ReplayPath {
	case ReplayPathOutbox:
	case ReplayPathBroker:
		if err := (pulsarbus.Options{URL: c.PulsarURL, TLS: c.PulsarTLS}).Validate(); err != nil {
			errs = append(errs, fmt.Errorf("pulsar-url (replay-path broker): %w", err))
		}
		if c.Topic == "" {
			errs = append(errs, errors.New("topic: required with replay-path broker"))
		}
		if c.PublishTimeout < 100*time.Millisecond {
			errs = append(errs, fmt.Errorf("publish-timeout must be at least 100ms, got %s", c.PublishTimeout))
		}
	default:
		errs = append(errs, fmt.Errorf("replay-path must be %q or %q, got %q", ReplayPathOutbox, ReplayPathBroker, c.ReplayPath))
	}
	if c.MaxItems < 1 {
		errs = append(errs, fmt.Errorf("max-items must be at least 1, got %d", c.MaxItems))
	}
	return errors.Join(errs...)
}

// The replay paths of Config.ReplayPath.
const (
	ReplayPathOutbox = "outbox"
	ReplayPathBroker = "broker"
)

// Service is an assembled repair server, listening but not yet serving.
type Service struct {
	cfg   Config
	srv   *server.Server
	pools *stores.Pools
	store *repair.Store
	exec  *repair.Executor
	lag   *lagwatch.Exporter
	ret   *retention.Worker
	// The broker path only: the publishing client, the probe's client and
	// the publisher.
	client, probe pulsar.Client
	pub           *relay.PulsarPublisher
}

// New validates cfg and assembles the server. Every database is opened
// lazily, so a dependency that is down does not stop the start: it shows on
// its health name, and the calls and repair items that need it fail with
// the reason (items are retried, then fail their repair visibly) until it
// returns. The listeners are bound when New returns (GRPCAddr and HTTPAddr
// report them, so ":0" works). ctx is not retained. The Service must then be
// Run, which releases everything.
func New(ctx context.Context, log *slog.Logger, cfg Config) (_ *Service, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg}
	if s.pools, err = stores.Open(cfg.Stores, stores.All, stores.Options{Shard: mysqldb.Options{MaxOpen: 8}, Control: mysqldb.Options{MaxOpen: 8}, Log: log}); err != nil {
		return nil, fmt.Errorf("repair server: %w", err)
	}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.srv, err = server.New(log, cfg.Server, server.WithAuth(auth.RepairPolicy)); err != nil {
		return nil, err
	}
	m, dbs := s.pools.Map, s.pools.Shards
	cho, err := cfg.Stores.CHOptions(log)
	if err != nil {
		return nil, fmt.Errorf("repair server: %w", err)
	}
	s.store = repair.NewStore(s.pools.Control)
	// The replay: the record's authoritative state, or its retained
	// tombstone, re-delivered with its existing version and event id through
	// its shard's outbox, or published to the relay's topic directly.
	var replayer repair.Replayer = replay.New(m, dbs)
	if cfg.ReplayPath == ReplayPathBroker {
		// Neither client connects before it is used.
		if s.client, err = pulsarbus.NewClient(log, pulsarbus.Options{URL: cfg.PulsarURL, Token: cfg.PulsarToken, TLS: cfg.PulsarTLS, OperationTimeout: cfg.PublishTimeout}); err != nil {
			return nil, err
		}
		if s.probe, err = pulsarbus.NewClient(log.With("client", "health"), pulsarbus.Options{URL: cfg.PulsarURL, Token: cfg.PulsarToken, TLS: cfg.PulsarTLS,
			OperationTimeout: 2 * time.Second, ConnectionTimeout: 2 * time.Second}); err != nil {
			return nil, err
		}
		s.pub = relay.NewLazyPulsarPublisher(s.client, relay.PulsarOptions{Topic: cfg.Topic, SendTimeout: cfg.PublishTimeout})
		replayer = replay.NewDirect(m, dbs, s.pub, cfg.PublishTimeout)
	}
	deps := repair.Deps{
		Store: s.store, Runs: reconcile.NewRunStore(s.pools.Control),
		Replayer: replayer,
		// Origins and approved removals in the projection.
		Editor: chstore.NewClusterProjection(s.pools.CH, cfg.Stores.CHCluster),
		// The controlled rebuild: staging table, catch-up, verification,
		// atomic switch, epoch retirement.
		Rebuilder: rebuild.New(dbs, m.IDs(), s.pools.CH, rebuild.Options{RowsPerSecond: cfg.Executor.RowsPerSecond, ClickHouse: cho, Log: log}),
		Source:    reconcile.MySQLSource{Shards: dbs}, Target: reconcile.ClickHouseTarget{Conn: s.pools.CH},
		ShardOf: func(dataID int64) string { return m.Shards[m.Owner(dataID)].ID },
		// The highest epoch stored in the projection for a scope, besides
		// --epoch-floor and the rebuilds of the control database.
		Epochs: repair.ProjectionEpochs{Conn: s.pools.CH},
	}
	if s.exec, err = repair.NewExecutor(log, cfg.Executor, deps, s.srv.Registry()); err != nil {
		return nil, err
	}
	deps.Wake = s.exec.Wake
	mgr, err := repair.NewManager(repair.ManagerConfig{AllowSelfApproval: cfg.AllowSelfApproval, EpochFloor: uint16(cfg.EpochFloor), MaxItems: cfg.MaxItems}, deps)
	if err != nil {
		return nil, err
	}
	var lagShards []lagwatch.Shard
	for i, sh := range m.Shards {
		lagShards = append(lagShards, lagwatch.Shard{ID: sh.ID, DB: dbs[i]})
	}
	s.lag = lagwatch.NewExporter(log, lagwatch.New(s.pools.CH, lagShards), cfg.LagInterval, s.srv.Registry())
	if s.ret, err = newRetention(log, cfg.Retention, s.pools, chstore.NewClusterProjection(s.pools.CH, cfg.Stores.CHCluster), s.srv.Registry()); err != nil {
		return nil, err
	}
	fitnessv1.RegisterRepairServiceServer(s.srv.GRPC(), repairapi.New(mgr, s.store, audit.New(s.pools.Control), repairapi.WithWatch(cfg.Watch),
		repairapi.WithIdempotency(idempotency.New(s.pools.Control, idempotency.Options{Log: log}))))
	if cfg.AllowSelfApproval {
		log.Warn("self-approval is allowed (--allow-self-approval): the requester of a removal or rebuild may approve it; use only where one operator runs the platform")
	}
	log.Info("repair server configured", "shards", m.IDs(), "replay_path", cfg.ReplayPath, "rows_per_second_per_shard", cfg.Executor.RowsPerSecond,
		"verify_timeout", cfg.Executor.VerifyTimeout, "lease", cfg.Executor.Lease, "epoch_floor", cfg.EpochFloor)
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
// Probes: "control" (required: the API and the executor keep their state in
// the control database), "clickhouse" and one per shard, named by its id
// (Partial: the repairs that need a down one wait or fail with the reason,
// the others go on).
//
// Worker "repair-executor" runs the approved repairs and rebuilds; at
// start-up it resumes those a stop or crash left EXECUTING or
// AWAITING_VERIFICATION (see repair.Executor). If it ends, the server stops
// serving and Run returns its error. Worker "lag-exporter" measures the
// projection's lag per shard from durable state every --lag-interval
// (pkg/delivery/lagwatch); a store it cannot read shows as projection_lag_up 0.
// Worker "retention" removes what each growing table holds beyond its
// retention every --retention-interval (Retention; pkg/platform/retention):
// a purge that fails is counted (retention_errors_total) and tried again at
// the next round, never a reason to stop.
func (s *Service) Run(ctx context.Context) error {
	defer s.close()
	probes := append([]server.Probe{{Name: "control", Check: s.store.Ping}, s.pools.ClickHouseProbe(true)}, s.pools.ShardProbes()...)
	if s.probe != nil {
		// The broker path: replays wait (and fail visibly after their
		// attempts) while the broker is away; the rest of the server works.
		probes = append(probes, server.Probe{Name: "pulsar", Partial: true, Check: s.lookup})
	}
	return s.srv.Run(ctx, []server.Worker{{Name: "repair-executor", Run: s.exec.Run}, {Name: "lag-exporter", Run: s.lag.Run},
		{Name: "retention", Run: s.ret.Run, Stall: s.cfg.Retention.Stall()}}, probes)
}

// lookup asks the broker for the topic's partitions (the probe client's
// operation timeout bounds it; the client takes no context).
func (s *Service) lookup(context.Context) error {
	_, err := s.probe.TopicPartitions(s.cfg.Topic)
	return err
}

// close releases the pools and, on the broker path, the publisher and the
// Pulsar clients, each bounded.
func (s *Service) close() {
	if s.pub != nil {
		server.Within(5*time.Second, s.pub.Close)
	}
	for _, c := range []pulsar.Client{s.client, s.probe} {
		if c != nil {
			server.Within(5*time.Second, c.Close)
		}
	}
	if s.pools != nil {
		_ = s.pools.Close()
	}
}
