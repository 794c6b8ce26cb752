// Package relaysvc is the relay server as one component: Load reads its
// configuration, New assembles it (shard pools, outbox repositories, control
// database, Pulsar clients, publisher, relay loop, outbox gauges, SENT purge,
// OutboxService, gRPC server) and Run serves it until its context ends or a
// worker fails for good. services/relay, end-to-end tests and outage tests
// all build the relay through New.
//
// Health tells the truth: "dependency/<shard>" per shard (partial: the relay
// keeps draining the others), "dependency/shards" (no shard answers: the
// server is NOT_SERVING), "dependency/control" (partial: only replays need
// it) and "dependency/pulsar" (the broker: NOT_SERVING while it is
// unreachable). Each recovers by itself within a probe interval of the
// dependency's return.
package relaysvc

import (
	"errors"
	"fmt"
	"time"

	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
	"github.com/resultsync/resultsync/pkg/platform/config"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/platform/tlsconfig"
	"github.com/resultsync/resultsync/pkg/service/stores"
)

// Config is the relay server's configuration.
type Config struct {
	Server server.Config
	// Stores locate the shards and the control database (audit log of
	// replays).
	Stores stores.Settings
	// PulsarURL is the broker, pulsar:// or pulsar+ssl://.
	PulsarURL string
	// PulsarToken authenticates to the broker (secret; empty: none).
	PulsarToken string
	// PulsarTLS is the TLS of a pulsar+ssl:// URL (CA, client certificate).
	PulsarTLS tlsconfig.Files
	// Topic carries the FitnessResultChanged events.
	Topic string
	// PulsarOperationTimeout bounds the client's producer creation and
	// lookups; nothing waits on it longer than its own context.
	PulsarOperationTimeout time.Duration
	// Relay tunes the relay loop. A zero Relay.StopTimeout becomes a third
	// of the shutdown grace, so an in-flight batch never holds the process
	// past it.
	Relay relay.Config
	// Retention of SENT rows before they are purged, and the purge cadence.
	Retention     time.Duration
	PurgeInterval time.Duration
	PurgeBatch    int
	// StatsInterval is the refresh cadence of the outbox gauges.
	StatsInterval time.Duration
	// ProbeInterval is how often each dependency's health is checked (each
	// check is bounded by it too); it also caps the producer's reconnection
	// delay, so publishing resumes as soon as health can show the broker
	// back.
	ProbeInterval time.Duration
	// MaxConnsPerShard bounds each shard's connection pool.
	MaxConnsPerShard int
}

// Load reads the configuration from args and the environment and validates
// it, reporting every missing or invalid setting at once. --help returns
// flag.ErrHelp after printing the usage.
func Load(args []string) (Config, error) {
	var c Config
	l := config.NewLoader("relay")
	c.Server.Flags(l, "RS_RELAY", "127.0.0.1:7102", "127.0.0.1:7202")
	d := relay.DefaultConfig()
	c.Stores.Flags(l, need, stores.Help{Control: "audit log"})
	l.Need(&c.PulsarURL, "pulsar-url", "RS_PULSAR_URL", config.DefaultPulsarURL, "Pulsar broker URL", false)
	l.PulsarToken(&c.PulsarToken)
	stores.PulsarTLSFlags(l, &c.PulsarTLS)
	l.String(&c.Topic, "topic", "RS_TOPIC", config.DefaultTopic, "topic of FitnessResultChanged events")
	l.Duration(&c.PulsarOperationTimeout, "pulsar-operation-timeout", "RS_RELAY_PULSAR_OPERATION_TIMEOUT", 10*time.Second, "bound on the Pulsar client's producer creation and lookups")
	l.Int(&c.Relay.BatchSize, "batch-size", "RS_RELAY_BATCH_SIZE", d.BatchSize, "rows per claim")
	l.Duration(&c.Relay.Lease, "lease", "RS_RELAY_LEASE", d.Lease, "claim lease (> publish timeout + completion timeout)")
	l.Duration(&c.Relay.PublishTimeout, "publish-timeout", "RS_RELAY_PUBLISH_TIMEOUT", d.PublishTimeout, "bound on one batch's publish")
	l.Duration(&c.Relay.CompletionTimeout, "completion-timeout", "RS_RELAY_COMPLETION_TIMEOUT", d.CompletionTimeout, "bound on one batch's SENT / FAILED update")
	l.Duration(&c.Relay.PollInterval, "poll-interval", "RS_RELAY_POLL_INTERVAL", d.PollInterval, "wait after a claim that found nothing; once a loop has found nothing for 1s it doubles per empty claim up to --max-idle-interval")
	l.Duration(&c.Relay.MaxIdleInterval, "max-idle-interval", "RS_RELAY_MAX_IDLE_INTERVAL", d.MaxIdleInterval,
		"longest wait between claims of an idle shard: bounds the claim delay of the first event after a quiet spell")
	l.Int(&c.Relay.ClaimSlots, "claim-slots", "RS_RELAY_CLAIM_SLOTS", d.ClaimSlots,
		"claim loops working one shard at once across every relay instance (added instances stand by for a free slot)")
	l.Int(&c.Relay.MaxAttempts, "max-attempts", "RS_RELAY_MAX_ATTEMPTS", d.MaxAttempts, "failed publishes before an event is PARKED")
	l.Duration(&c.Relay.Backoff.Base, "backoff-base", "RS_RELAY_BACKOFF_BASE", d.Backoff.Base, "first retry delay")
	l.Duration(&c.Relay.Backoff.Max, "backoff-max", "RS_RELAY_BACKOFF_MAX", d.Backoff.Max, "longest retry delay")
	l.Int(&c.Relay.FatalClaimFailures, "fatal-claim-failures", "RS_RELAY_FATAL_CLAIM_FAILURES", d.FatalClaimFailures,
		"consecutive cycles every shard must refuse the relay (access denied, unknown database) before it exits (negative: never)")
	l.Duration(&c.Retention, "sent-retention", "RS_RELAY_SENT_RETENTION", 72*time.Hour, "how long SENT rows are kept")
	l.Duration(&c.PurgeInterval, "purge-interval", "RS_RELAY_PURGE_INTERVAL", 10*time.Minute, "how often SENT rows are purged")
	l.Int(&c.PurgeBatch, "purge-batch", "RS_RELAY_PURGE_BATCH", 1000, "rows deleted per purge statement")
	l.Duration(&c.StatsInterval, "stats-interval", "RS_RELAY_STATS_INTERVAL", 10*time.Second, "how often outbox gauges are refreshed")
	l.Duration(&c.ProbeInterval, "probe-interval", "RS_RELAY_PROBE_INTERVAL", 2*time.Second, "how often the health of each shard, the control database and the broker is checked")
	l.Int(&c.MaxConnsPerShard, "max-conns-per-shard", "RS_RELAY_MAX_CONNS", 8, "connection pool size per shard")
	if err := l.Load(args, c.check); err != nil {
		return Config{}, err
	}
	return c, nil
}

// need is the stores the relay uses.
const need = stores.Shards | stores.Control

// Validate rejects impossible settings, e.g. a lease not longer than the
// publish timeout plus the completion timeout, naming every one.
func (c Config) Validate() error { return config.Validate("relay", c.check) }

// check reports every invalid setting (config.Loader.Load, config.Validate).
func (c *Config) check(loaded bool) error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(c.Server.Validate())
	add(c.Relay.Validate())
	add(c.Stores.Check(need, loaded))
	if c.PulsarURL != "" || !loaded {
		if err := (pulsarbus.Options{URL: c.PulsarURL, TLS: c.PulsarTLS}).Validate(); err != nil {
			add(fmt.Errorf("pulsar-url: %w", err))
		}
	}
	if c.Topic == "" {
		add(errors.New("topic: required"))
	}
	if c.PulsarOperationTimeout <= 0 {
		add(fmt.Errorf("pulsar-operation-timeout must be positive, got %s", c.PulsarOperationTimeout))
	}
	if c.Retention < time.Minute {
		add(fmt.Errorf("sent-retention must be at least 1m, got %s", c.Retention))
	}
	if c.PurgeInterval <= 0 || c.PurgeBatch < 1 || c.StatsInterval <= 0 {
		add(errors.New("purge-interval, purge-batch and stats-interval must be positive"))
	}
	if c.ProbeInterval < 10*time.Millisecond {
		add(fmt.Errorf("probe-interval must be at least 10ms, got %s", c.ProbeInterval))
	}
	if c.MaxConnsPerShard < 1 {
		add(fmt.Errorf("max-conns-per-shard must be positive, got %d", c.MaxConnsPerShard))
	} else if slots := max(c.Relay.ClaimSlots, 1); c.MaxConnsPerShard < 2*slots+1 {
		// Each claim loop holds its slot's session and runs its statements
		// on another; one more for the gauges, the purge and the API.
		add(fmt.Errorf("max-conns-per-shard (%d) must be at least twice the claim slots plus one (%d)", c.MaxConnsPerShard, 2*slots+1))
	}
	if st := c.Relay.StopTimeout; st > 0 && c.Server.ShutdownGrace > 0 && 2*st > c.Server.ShutdownGrace {
		add(fmt.Errorf("the relay's stop timeout (%s) must fit twice in the shutdown grace (%s)", st, c.Server.ShutdownGrace))
	}
	return errors.Join(errs...)
}
