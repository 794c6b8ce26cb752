package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/resultsync/resultsync/pkg/chstore"
	"github.com/resultsync/resultsync/pkg/config"
	"github.com/resultsync/resultsync/pkg/logging"
	"github.com/resultsync/resultsync/pkg/mysqldb"
	"github.com/resultsync/resultsync/pkg/pulsarbus"
	"github.com/resultsync/resultsync/pkg/schema"
	"github.com/resultsync/resultsync/pkg/shard"
)

// Config is the migrator's configuration.
type Config struct {
	Shards     string
	ControlDSN string
	CHAddr     string
	CHDatabase string
	// CHCluster selects the cluster shape (docs/cluster.md): the projection's
	// tables are created ON CLUSTER, replicated and sharded.
	CHCluster string
	// CHUser and CHPassword are the ClickHouse account (CHPassword secret).
	CHUser, CHPassword string
	LogLevel           string
	Resume             bool

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

func (c *Config) load(args []string) error {
	l := config.NewLoader("migrate")
	l.Need(&c.Shards, "shards", "RS_SHARDS", config.DefaultShards, "shard map id=dsn,...", true)
	l.Need(&c.ControlDSN, "control-dsn", "RS_CONTROL_DSN", config.DefaultControlDSN, "control database DSN", true)
	l.Bool(&c.SkipClickHouse, "skip-clickhouse", "RS_MIGRATE_SKIP_CLICKHOUSE", false, "migrate only the MySQL databases")
	if !skipClickHouse(args) {
		l.Need(&c.CHAddr, "clickhouse-addr", "RS_CH_ADDR", config.DefaultClickHouseAddr, "ClickHouse native address", false)
	}
	l.String(&c.CHDatabase, "clickhouse-database", "RS_CH_DATABASE", config.DefaultClickHouseDatabase, "ClickHouse database")
	l.String(&c.CHCluster, "clickhouse-cluster", "RS_CH_CLUSTER", "", "ClickHouse cluster name: create the projection replicated and sharded on it (docs/cluster.md); empty: a single server")
	l.ClickHouseCredentials(&c.CHUser, &c.CHPassword)
	l.Bool(&c.SkipPulsar, "skip-pulsar", "RS_MIGRATE_SKIP_PULSAR", false, "leave the Pulsar topic, subscription and retention alone")
	if !skipPulsar(args) {
		l.Need(&c.PulsarAdminURL, "pulsar-admin-url", "RS_PULSAR_ADMIN_URL", "http://127.0.0.1:18080", "Pulsar admin REST API base URL (http:// or https://)", false)
	}
	l.PulsarToken(&c.PulsarToken)
	l.String(&c.Topic, "topic", "RS_TOPIC", config.DefaultTopic, "topic of FitnessResultChanged events: created partitioned unless it exists")
	l.Int(&c.TopicPartitions, "topic-partitions", "RS_TOPIC_PARTITIONS", 4, "partitions of the topic when it is created (an existing topic keeps its count)")
	l.String(&c.Subscription, "subscription", "RS_CONSUMER_SUBSCRIPTION", "clickhouse-projection", "the consumer's subscription, created at the earliest message unless it exists")
	l.Int(&c.RetentionMinutes, "topic-retention-minutes", "RS_TOPIC_RETENTION_MINUTES", int(pulsarbus.DefaultRetention.Minutes), "topic retention: minutes the broker keeps acknowledged messages (-1: unlimited)")
	l.Int(&c.RetentionMB, "topic-retention-mb", "RS_TOPIC_RETENTION_MB", int(pulsarbus.DefaultRetention.SizeMB), "topic retention: MiB the broker keeps per topic (-1: unlimited)")
	l.String(&c.LogLevel, "log-level", "RS_LOG_LEVEL", "info", "log level")
	l.Bool(&c.Resume, "resume", "RS_MIGRATE_RESUME", false, "continue a half-applied (dirty) MySQL migration from the statement that failed, after fixing its cause")
	if err := l.Parse(args); err != nil {
		return err
	}
	if _, err := shard.Parse(c.Shards); err != nil {
		return err
	}
	if c.ControlDSN == "" {
		return errors.New("control-dsn must not be empty")
	}
	if !c.SkipClickHouse && c.CHDatabase == "" {
		return errors.New("clickhouse-database must not be empty")
	}
	if !c.SkipPulsar {
		if c.Topic == "" || c.Subscription == "" || c.TopicPartitions < 1 {
			return errors.New("topic and subscription must not be empty, topic-partitions at least 1")
		}
		if c.RetentionMinutes < -1 || c.RetentionMB < -1 || c.RetentionMinutes == 0 || c.RetentionMB == 0 {
			return fmt.Errorf("topic retention %d minutes, %d MiB: want positive or -1 (unlimited)", c.RetentionMinutes, c.RetentionMB)
		}
	}
	return nil
}

func realMain(ctx context.Context, args []string) error {
	var cfg Config
	if err := cfg.load(args); err != nil {
		return err
	}
	log, err := logging.New(os.Stderr, "migrate", cfg.LogLevel)
	if err != nil {
		return err
	}
	m, _ := shard.Parse(cfg.Shards)
	for _, s := range m.Shards {
		if err := migrateMySQL(ctx, log, "shard "+s.ID, s.DSN, schema.Shard, cfg.Resume); err != nil {
			return err
		}
	}
	if err := migrateMySQL(ctx, log, "control", cfg.ControlDSN, schema.Control, cfg.Resume); err != nil {
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
	db := cfg.CHDatabase
	if cfg.CHCluster != "" {
		db = "default" // the cluster DDL creates the database ON CLUSTER and names it in every statement
	}
	conn, err := chstore.Open(ctx, chstore.Options{Addr: cfg.CHAddr, Database: db, Cluster: cfg.CHCluster, User: cfg.CHUser, Password: cfg.CHPassword})
	if err != nil {
		return err
	}
	defer conn.Close()
	if cfg.CHCluster != "" {
		done, err := schema.ApplyClickHouseCluster(ctx, conn, cfg.CHDatabase, cfg.CHCluster)
		if err != nil {
			return fmt.Errorf("migrating ClickHouse on cluster %s: %w", cfg.CHCluster, err)
		}
		log.Info("migrated", "database", "clickhouse/"+cfg.CHDatabase, "cluster", cfg.CHCluster, "applied", done)
		return nil
	}
	done, err := schema.ApplyClickHouse(ctx, conn)
	if err != nil {
		return fmt.Errorf("migrating ClickHouse: %w", err)
	}
	log.Info("migrated", "database", "clickhouse/"+cfg.CHDatabase, "applied", done)
	return nil
}

// migratePulsar makes the topic (partitioned), its retention and the
// consumer's subscription exist, so nothing the relay publishes before the
// first consumer ran is lost. Idempotent: existing ones are kept (an
// existing subscription keeps its position; the retention is set again).
func migratePulsar(ctx context.Context, log *slog.Logger, cfg Config) error {
	admin, err := pulsarbus.NewAdmin(cfg.PulsarAdminURL, cfg.PulsarToken, nil)
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
