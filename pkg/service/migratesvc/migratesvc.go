// Package migratesvc is the migrator as one component: Load reads its
// configuration (the stores of pkg/service/stores, the events topic and the
// consumer's subscription) and Run applies the versioned schema migrations
// of every shard, the control database and the ClickHouse projection, and
// makes the topic and the subscription exist, then returns. It is
// idempotent: a second run applies nothing. services/migrate runs it.
package migratesvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/platform/config"
	"github.com/resultsync/resultsync/pkg/platform/tlsconfig"
	"github.com/resultsync/resultsync/pkg/service/stores"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
	"github.com/resultsync/resultsync/pkg/storage/schema"
)

// Config is the migrator's configuration.
type Config struct {
	// Stores locate the shards, the control database and the ClickHouse
	// projection; Stores.CHCluster selects the cluster shape
	// (docs/cluster.md): the projection's tables are created ON CLUSTER,
	// replicated and sharded.
	Stores   stores.Settings
	LogLevel string
	Resume   bool

	SkipClickHouse bool

	// The events topic and the consumer's subscription, created through the
	// broker's admin API before anything is published (a broker keeps
	// nothing for a subscription that does not exist yet).
	SkipPulsar       bool
	PulsarAdminURL   string
	PulsarToken      string
	Topic            string
	TopicPartitions  int
	Subscription     string
	RetentionMinutes int
	RetentionMB      int

	// PulsarTLS verifies an https:// admin URL with a private CA and
	// presents a client certificate.
	PulsarTLS tlsconfig.Files
}

// skipPulsar reports --skip-pulsar (or its environment variable) before
// parsing, so the admin URL is required only when used.
func skipPulsar(args []string) bool {
	for _, a := range args {
		if a == "--skip-pulsar" || a == "-skip-pulsar" || a == "--skip-pulsar=true" {
			return true
		}
	}
	return config.Env("RS_MIGRATE_SKIP_PULSAR", "") == "true"
}

// skipClickHouse reports --skip-clickhouse (or its environment variable)
// before parsing, so the ClickHouse address is required only when used.
func skipClickHouse(args []string) bool {
	for _, a := range args {
		if a == "--skip-clickhouse" || a == "-skip-clickhouse" || a == "--skip-clickhouse=true" {
			return true
		}
	}
	return config.Env("RS_MIGRATE_SKIP_CLICKHOUSE", "") == "true"
}

// Load reads the configuration from args (without the program name) and the
// environment, and validates it. Every missing, malformed or impossible
// setting is reported in one error; no secret appears in it. --help returns
// flag.ErrHelp after printing the usage.
func Load(args []string) (Config, error) {
	var c Config
	l := config.NewLoader("migrate")
	l.Bool(&c.SkipClickHouse, "skip-clickhouse", "RS_MIGRATE_SKIP_CLICKHOUSE", false, "migrate only the MySQL databases")
	need := stores.All
	if skipClickHouse(args) {
		need = stores.Shards | stores.Control | stores.ClickHouseSkipped
	}
	c.Stores.Flags(l, need, stores.Help{
		Cluster: "ClickHouse cluster name: create the projection replicated and sharded on it (docs/cluster.md); empty: a single server"})
	l.Bool(&c.SkipPulsar, "skip-pulsar", "RS_MIGRATE_SKIP_PULSAR", false, "leave the Pulsar topic, subscription and retention alone")
	if !skipPulsar(args) {
		l.Need(&c.PulsarAdminURL, "pulsar-admin-url", "RS_PULSAR_ADMIN_URL", "http://127.0.0.1:18080", "Pulsar admin REST API base URL (http:// or https://)", false)
	}
	l.PulsarToken(&c.PulsarToken)
	stores.PulsarTLSFlags(l, &c.PulsarTLS)
	l.String(&c.Topic, "topic", "RS_TOPIC", config.DefaultTopic, "topic of FitnessResultChanged events: created partitioned unless it exists")
	l.Int(&c.TopicPartitions, "topic-partitions", "RS_TOPIC_PARTITIONS", 4, "partitions of the topic when it is created (an existing topic keeps its count)")
	l.String(&c.Subscription, "subscription", "RS_CONSUMER_SUBSCRIPTION", "clickhouse-projection", "the consumer's subscription, created at the earliest message unless it exists")
	l.Int(&c.RetentionMinutes, "topic-retention-minutes", "RS_TOPIC_RETENTION_MINUTES", int(pulsarbus.DefaultRetention.Minutes), "topic retention: minutes the broker keeps acknowledged messages (-1: unlimited)")
	l.Int(&c.RetentionMB, "topic-retention-mb", "RS_TOPIC_RETENTION_MB", int(pulsarbus.DefaultRetention.SizeMB), "topic retention: MiB the broker keeps per topic (-1: unlimited)")
	l.String(&c.LogLevel, "log-level", "RS_LOG_LEVEL", "info", "log level")
	l.Bool(&c.Resume, "resume", "RS_MIGRATE_RESUME", false, "continue a half-applied (dirty) MySQL migration from the statement that failed, after fixing its cause")
	if err := l.Load(args, c.check); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate rejects missing and impossible settings, naming every one.
func (c *Config) Validate() error { return config.Validate("migrate", c.check) }

// check reports every invalid setting (config.Loader.Load, config.Validate).
func (c *Config) check(loaded bool) error {
	need := stores.All
	if c.SkipClickHouse {
		need = stores.Shards | stores.Control | stores.ClickHouseSkipped
	}
	errs := []error{c.Stores.Check(need, loaded)}
	if !c.SkipPulsar {
		if c.PulsarTLS.ClientEnabled() && !strings.HasPrefix(c.PulsarAdminURL, "https://") {
			errs = append(errs, fmt.Errorf("pulsar TLS settings need an https:// admin URL, got %q", c.PulsarAdminURL))
		}
		errs = append(errs, c.PulsarTLS.CheckClient("pulsar TLS"))
		if c.Topic == "" || c.Subscription == "" || c.TopicPartitions < 1 {
			errs = append(errs, errors.New("topic and subscription must not be empty, topic-partitions at least 1"))
		}
		if c.RetentionMinutes < -1 || c.RetentionMB < -1 || c.RetentionMinutes == 0 || c.RetentionMB == 0 {
			errs = append(errs, fmt.Errorf("topic retention %d minutes, %d MiB: want positive or -1 (unlimited)", c.RetentionMinutes, c.RetentionMB))
		}
	}
	return errors.Join(errs...)
}

// Run migrates what cfg locates, logging to log, and returns the first
// failure (a half-applied MySQL migration is left dirty: see Resume).
func Run(ctx context.Context, log *slog.Logger, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	m, err := cfg.Stores.Map()
	if err != nil {
		return err
	}
	if err := cfg.Stores.RegisterMySQLTLS(log); err != nil {
		return err
	}
	for _, s := range m.Shards {
		if err := migrateMySQL(ctx, log, "shard "+s.ID, s.DSN, schema.Shard, cfg.Resume); err != nil {
			return err
		}
	}
	if err := migrateMySQL(ctx, log, "control", cfg.Stores.ControlDSN, schema.Control, cfg.Resume); err != nil {
		return err
	}
	if cfg.SkipPulsar {
		log.Info("Pulsar skipped (--skip-pulsar)")
	} else if err := migratePulsar(ctx, log, cfg); err != nil {
		return err
	}
	if cfg.SkipClickHouse {
		log.Info("ClickHouse skipped (--skip-clickhouse)")
		return nil
	}
	st := cfg.Stores
	co, err := st.CHOptions(log)
	if err != nil {
		return err
	}
	if st.CHCluster != "" {
		co.Database = "default" // the cluster DDL creates the database ON CLUSTER and names it in every statement
	}
	conn, err := chstore.Open(ctx, co)
	if err != nil {
		return err
	}
	defer conn.Close()
	if st.CHCluster != "" {
		done, err := schema.ApplyClickHouseCluster(ctx, conn, st.CHDatabase, st.CHCluster)
		if err != nil {
			return fmt.Errorf("migrating ClickHouse on cluster %s: %w", st.CHCluster, err)
		}
		log.Info("migrated", "database", "clickhouse/"+st.CHDatabase, "cluster", st.CHCluster, "applied", done)
		return nil
	}
	done, err := schema.ApplyClickHouse(ctx, conn)
	if err != nil {
		return fmt.Errorf("migrating ClickHouse: %w", err)
	}
	log.Info("migrated", "database", "clickhouse/"+st.CHDatabase, "applied", done)
	return nil
}

// migratePulsar makes the topic (partitioned), its retention and the
// consumer's subscription exist, so nothing the relay publishes before the
// first consumer ran is lost. Idempotent: existing ones are kept (an
// existing subscription keeps its position; the retention is set again).
func migratePulsar(ctx context.Context, log *slog.Logger, cfg Config) error {
	var hc *http.Client
	if cfg.PulsarTLS.ClientEnabled() {
		tc, err := tlsconfig.Client(log, cfg.PulsarTLS, "the Pulsar admin API")
		if err != nil {
			return fmt.Errorf("migrating Pulsar: %w", err)
		}
		hc = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	}
	admin, err := pulsarbus.NewAdmin(cfg.PulsarAdminURL, cfg.PulsarToken, hc)
	if err != nil {
		return err
	}
	n, err := admin.EnsurePartitionedTopic(ctx, cfg.Topic, cfg.TopicPartitions)
	if err != nil {
		return fmt.Errorf("migrating Pulsar: %w", err)
	}
	r := pulsarbus.Retention{Minutes: int64(cfg.RetentionMinutes), SizeMB: int64(cfg.RetentionMB)}
	if err := admin.SetRetention(ctx, cfg.Topic, r); err != nil {
		return fmt.Errorf("migrating Pulsar: %w", err)
	}
	if err := admin.EnsureSubscription(ctx, cfg.Topic, cfg.Subscription); err != nil {
		return fmt.Errorf("migrating Pulsar: %w", err)
	}
	log.Info("migrated", "topic", cfg.Topic, "partitions", n, "subscription", cfg.Subscription,
		"retention_minutes", r.Minutes, "retention_mb", r.SizeMB)
	return nil
}

func migrateMySQL(ctx context.Context, log *slog.Logger, name, dsn string, kind schema.Kind, resume bool) error {
	// A migration statement may rebuild a table: no read timeout of its own
	// (the context bounds the run).
	db, err := mysqldb.Open(ctx, dsn, mysqldb.Options{MaxOpen: 2, ReadTimeout: -1})
	if err != nil {
		return fmt.Errorf("migrating %s: %w", name, err)
	}
	defer db.Close()
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return fmt.Errorf("migrating %s: reading the server version: %w", name, err)
	}
	done, err := schema.ApplyMySQLWith(ctx, db, kind, schema.MySQLOptions{Resume: resume})
	if err != nil {
		return fmt.Errorf("migrating %s (server %s): %w", name, version, err)
	}
	log.Info("migrated", "database", name, "server_version", version, "applied", done)
	return nil
}
