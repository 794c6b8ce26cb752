package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/audit"
	"github.com/resultsync/resultsync/pkg/auth"
	"github.com/resultsync/resultsync/pkg/config"
	"github.com/resultsync/resultsync/pkg/logging"
	"github.com/resultsync/resultsync/pkg/mysqldb"
	"github.com/resultsync/resultsync/pkg/outbox"
	"github.com/resultsync/resultsync/pkg/outboxapi"
	"github.com/resultsync/resultsync/pkg/pulsarbus"
	"github.com/resultsync/resultsync/pkg/relay"
	"github.com/resultsync/resultsync/pkg/server"
	"github.com/resultsync/resultsync/pkg/shard"
)

// Config is the relay server's configuration.
type Config struct {
	Server     server.Config
	Shards     string
	ControlDSN string
	PulsarURL  string
	Topic      string
	Relay      relay.Config
	// Retention of SENT rows before they are purged, and the purge cadence.
	Retention     time.Duration
	PurgeInterval time.Duration
	PurgeBatch    int
	StatsInterval time.Duration
}

func (c *Config) load(args []string) error {
	l := config.NewLoader("relay")
	c.Server.Flags(l, "RS_RELAY", "127.0.0.1:7102", "127.0.0.1:7202")
	d := relay.DefaultConfig()
	l.Need(&c.Shards, "shards", "RS_SHARDS", config.DefaultShards, "shard map id=dsn,...", true)
	l.Need(&c.ControlDSN, "control-dsn", "RS_CONTROL_DSN", config.DefaultControlDSN, "control database DSN (audit log)", true)
	l.Need(&c.PulsarURL, "pulsar-url", "RS_PULSAR_URL", config.DefaultPulsarURL, "Pulsar broker URL", false)
	l.String(&c.Topic, "topic", "RS_TOPIC", config.DefaultTopic, "topic of FitnessResultChanged events")
	l.Int(&c.Relay.BatchSize, "batch-size", "RS_RELAY_BATCH_SIZE", d.BatchSize, "rows per claim")
	l.Duration(&c.Relay.Lease, "lease", "RS_RELAY_LEASE", d.Lease, "claim lease")
	l.Duration(&c.Relay.PublishTimeout, "publish-timeout", "RS_RELAY_PUBLISH_TIMEOUT", d.PublishTimeout, "bound on one batch's publish (< lease)")
	l.Duration(&c.Relay.PollInterval, "poll-interval", "RS_RELAY_POLL_INTERVAL", d.PollInterval, "idle poll interval")
	l.Int(&c.Relay.MaxAttempts, "max-attempts", "RS_RELAY_MAX_ATTEMPTS", d.MaxAttempts, "failed publishes before an event is PARKED")
	l.Duration(&c.Relay.Backoff.Base, "backoff-base", "RS_RELAY_BACKOFF_BASE", d.Backoff.Base, "first retry delay")
	l.Duration(&c.Relay.Backoff.Max, "backoff-max", "RS_RELAY_BACKOFF_MAX", d.Backoff.Max, "longest retry delay")
	l.Duration(&c.Retention, "sent-retention", "RS_RELAY_SENT_RETENTION", 72*time.Hour, "how long SENT rows are kept")
	l.Duration(&c.PurgeInterval, "purge-interval", "RS_RELAY_PURGE_INTERVAL", 10*time.Minute, "how often SENT rows are purged")
	l.Int(&c.PurgeBatch, "purge-batch", "RS_RELAY_PURGE_BATCH", 1000, "rows deleted per purge statement")
	l.Duration(&c.StatsInterval, "stats-interval", "RS_RELAY_STATS_INTERVAL", 10*time.Second, "how often outbox gauges are refreshed")
	if err := l.Parse(args); err != nil {
		return err
	}
	return c.Validate()
}

// Validate rejects impossible settings, e.g. a publish timeout >= the lease.
func (c *Config) Validate() error {
	var errs []error
	errs = append(errs, c.Server.Validate(), c.Relay.Validate())
	if m, err := shard.Parse(c.Shards); err != nil {
		errs = append(errs, err)
	} else if len(m.Shards) < 2 {
		errs = append(errs, errors.New("the shard map needs at least two shards"))
	}
	if c.ControlDSN == "" || c.Topic == "" {
		errs = append(errs, errors.New("control-dsn and topic are required"))
	}
	if c.Retention < time.Minute || c.PurgeInterval <= 0 || c.PurgeBatch < 1 || c.StatsInterval <= 0 {
		errs = append(errs, errors.New("sent-retention must be >= 1m; purge-interval, purge-batch and stats-interval positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("relay config: %w", err)
	}
	return nil
}

func realMain(ctx context.Context, args []string) error {
	var cfg Config
	if err := cfg.load(args); err != nil {
		return err
	}
	log, err := logging.New(os.Stderr, "relay", cfg.Server.LogLevel)
	if err != nil {
		return err
	}
	m, _ := shard.Parse(cfg.Shards)
	var repos []*outbox.Repo
	var stores []relay.Store
	var sources []relay.StatsSource
	var purgers []relay.Purger
	for _, s := range m.Shards {
		db, err := mysqldb.OpenLazy(s.DSN, mysqldb.Options{MaxOpen: 8})
		if err != nil {
			return fmt.Errorf("shard %s: %w", s.ID, err)
		}
		defer db.Close()
		r := outbox.NewRepo(s.ID, db)
		repos, stores, sources, purgers = append(repos, r), append(stores, r), append(sources, r), append(purgers, r)
	}
	control, err := mysqldb.OpenLazy(cfg.ControlDSN, mysqldb.Options{MaxOpen: 4})
	if err != nil {
		return fmt.Errorf("control database: %w", err)
	}
	defer control.Close()

	client, err := pulsarbus.NewClient(log, pulsarbus.Options{URL: cfg.PulsarURL})
	if err != nil {
		return err
	}
	defer client.Close()

	srv, err := server.New(log, cfg.Server, server.WithAuth(auth.OutboxPolicy))
	if err != nil {
		return err
	}
	fitnessv1.RegisterOutboxServiceServer(srv.GRPC(), outboxapi.New(repos, audit.New(control)))
	metrics := relay.NewMetrics(srv.Registry())
	exporter := relay.NewStatsExporter(log, srv.Registry(), sources)
	if err := srv.Listen(); err != nil {
		return err
	}

	// The admin API and the outbox gauges serve even while the broker is
	// unreachable; the relay loops start once a producer exists.
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); exporter.Run(ctx, cfg.StatsInterval) }()
	go func() {
		defer wg.Done()
		relay.PurgeSent(ctx, log, purgers, cfg.Retention, cfg.PurgeInterval, cfg.PurgeBatch)
	}()
	go func() {
		defer wg.Done()
		pub := connectPublisher(ctx, log, client, cfg)
		if pub == nil {
			return
		}
		defer pub.Close()
		rl, err := relay.New(log, cfg.Relay, pub, stores, metrics, nil)
		if err != nil {
			log.Error("relay not started", "err", err)
			return
		}
		log.Info("relay started", "shards", m.IDs(), "topic", cfg.Topic, "batch", cfg.Relay.BatchSize,
			"lease", cfg.Relay.Lease, "publish_timeout", cfg.Relay.PublishTimeout, "max_attempts", cfg.Relay.MaxAttempts)
		_ = rl.Run(ctx)
	}()
	err = srv.Serve(ctx)
	wg.Wait()
	return err
}

// connectPublisher creates the producer, retrying with backoff while the
// broker is unreachable; nil when ctx ended first.
func connectPublisher(ctx context.Context, log *slog.Logger, client pulsar.Client, cfg Config) *relay.PulsarPublisher {
	wait := time.Second
	for {
		pub, err := relay.NewPulsarPublisher(client, cfg.Topic, cfg.Relay.PublishTimeout)
		if err == nil {
			return pub
		}
		log.Error("cannot create the Pulsar producer; retrying (events wait in the outboxes)", "url", cfg.PulsarURL, "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}
