// Package consumersvc is the consumer server as one component: Load reads
// its configuration, New assembles it (the ClickHouse projection, the Pulsar
// clients, the lag tracker, the ProjectionService, the gRPC server) and Run
// serves it with the consumer as a worker under the supervisor of
// pkg/platform/server, until its context ends or the consumer fails for good.
// services/consumer, end-to-end and outage tests all build the consumer
// server through New.
//
// Health tells the truth: "dependency/pulsar" (NOT_SERVING while the broker
// does not answer a lookup of the topic, and until the subscription exists)
// and "dependency/clickhouse" (NOT_SERVING while ClickHouse does not answer a
// ping) each take the server NOT_SERVING, and recover by themselves within a
// probe interval of the dependency's return. A retired transformation epoch
// (consumer.ErrEpochRetired) is terminal: health turns NOT_SERVING and Run
// returns the error, so the process exits non-zero.
package consumersvc

import (
	"errors"
	"fmt"
	"time"

	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/platform/config"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/platform/tlsconfig"
	"github.com/resultsync/resultsync/pkg/service/stores"
)

// Config is the consumer server's configuration.
type Config struct {
	Server server.Config
	// PulsarURL is the broker, pulsar:// or pulsar+ssl://.
	PulsarURL string
	// Topic carries the FitnessResultChanged events.
	Topic string
	// Subscription is the Failover subscription the instances share.
	Subscription string
	// DLQTopic receives the events that can never be written.
	DLQTopic string
	// Stores locate the ClickHouse projection.
	Stores stores.Settings
	// PulsarToken authenticates to the broker (secret; empty: none).
	PulsarToken string
	// PulsarTLS is the TLS of a pulsar+ssl:// URL (CA, client certificate).
	PulsarTLS tlsconfig.Files
	// Consumer tunes the consumer; Consumer.Epoch is set from Epoch.
	Consumer consumer.Config
	// Epoch is the transformation epoch written with every row (0-65535).
	Epoch int
	// PulsarOperationTimeout bounds each attempt to create the subscription
	// and the dead-letter producer (the Pulsar client takes no context;
	// nothing waits on it longer than its own context).
	PulsarOperationTimeout time.Duration
	// ProbeInterval is how often the broker and ClickHouse are checked (each
	// check is bounded by it too); it also caps the delay between
	// attempts to subscribe.
	ProbeInterval time.Duration
}

// Load reads the configuration from args (without the program name) and the
// environment, and validates it, reporting every missing or invalid setting
// at once. --help returns flag.ErrHelp after printing the usage.
func Load(args []string) (Config, error) {
	var c Config
	l := config.NewLoader("consumer")
	c.Server.Flags(l, "RS_CONSUMER", "127.0.0.1:7103", "127.0.0.1:7203")
	d := consumer.DefaultConfig()
	l.Need(&c.PulsarURL, "pulsar-url", "RS_PULSAR_URL", config.DefaultPulsarURL, "Pulsar broker URL", false)
	l.String(&c.Topic, "topic", "RS_TOPIC", config.DefaultTopic, "topic of FitnessResultChanged events")
	l.String(&c.Subscription, "subscription", "RS_CONSUMER_SUBSCRIPTION", "clickhouse-projection", "Failover subscription shared by the consumer instances")
	l.String(&c.DLQTopic, "dead-letter-topic", "RS_CONSUMER_DLQ_TOPIC", config.DefaultTopic+"-DLQ", "topic of events that can never be written")
	c.Stores.Flags(l, stores.ClickHouse, stores.Help{})
	l.PulsarToken(&c.PulsarToken)
	stores.PulsarTLSFlags(l, &c.PulsarTLS)
	l.Int(&c.Consumer.BatchSize, "batch-size", "RS_CONSUMER_BATCH_SIZE", d.BatchSize, "events per insert at most")
	l.Int(&c.Consumer.BatchBytes, "batch-bytes", "RS_CONSUMER_BATCH_BYTES", d.BatchBytes, "payload bytes per insert at most")
	l.Duration(&c.Consumer.BatchWait, "batch-wait", "RS_CONSUMER_BATCH_WAIT", d.BatchWait, "longest wait before a partial batch is written")
	l.Duration(&c.Consumer.MinInsertGap, "min-insert-gap", "RS_CONSUMER_MIN_INSERT_GAP", d.MinInsertGap,
		"while no insert is in flight a batch is written at once, at most once per this gap (bounds ClickHouse parts; --batch-wait or more: never early)")
	l.Duration(&c.Consumer.RetryBase, "retry-base", "RS_CONSUMER_RETRY_BASE", d.RetryBase, "first wait after a failed insert")
	l.Duration(&c.Consumer.RetryMax, "retry-max", "RS_CONSUMER_RETRY_MAX", d.RetryMax, "longest wait between insert attempts")
	l.Int(&c.Epoch, "epoch", "RS_CONSUMER_EPOCH", 0, "transformation epoch written with every row (bump when a mapping defect is fixed)")
	l.Duration(&c.Consumer.EpochCheck, "epoch-check", "RS_CONSUMER_EPOCH_CHECK", consumer.DefaultEpochCheck,
		"longest time a read epoch floor is trusted; an epoch below the floor stops the consumer")
	l.Duration(&c.PulsarOperationTimeout, "pulsar-operation-timeout", "RS_CONSUMER_PULSAR_OPERATION_TIMEOUT", 10*time.Second,
		"bound on each attempt to subscribe and to create the dead-letter producer")
	l.Duration(&c.ProbeInterval, "probe-interval", "RS_CONSUMER_PROBE_INTERVAL", 2*time.Second, "how often the health of the broker and ClickHouse is checked")
	if err := l.Load(args, c.check); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate rejects missing and impossible settings, naming every one.
func (c Config) Validate() error { return config.Validate("consumer", c.check) }

// check reports every invalid setting (config.Loader.Load, config.Validate).
func (c *Config) check(loaded bool) error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(c.Server.Validate())
	cc := c.Consumer
	cc.Epoch = 0 // set from Epoch, checked below
	add(cc.Validate())
	if c.Epoch < 0 || c.Epoch > 65535 {
		add(fmt.Errorf("epoch must be 0-65535, got %d", c.Epoch))
	}
	if c.PulsarURL != "" || !loaded {
		if err := (pulsarbus.Options{URL: c.PulsarURL, TLS: c.PulsarTLS}).Validate(); err != nil {
			add(fmt.Errorf("pulsar-url: %w", err))
		}
	}
	add(c.Stores.Check(stores.ClickHouse, loaded))
	for _, s := range []struct{ name, v string }{{"topic", c.Topic}, {"subscription", c.Subscription},
		{"dead-letter-topic", c.DLQTopic}} {
		if s.v == "" {
			add(fmt.Errorf("%s: required", s.name))
		}
	}
	if c.PulsarOperationTimeout <= 0 {
		add(fmt.Errorf("pulsar-operation-timeout must be positive, got %s", c.PulsarOperationTimeout))
	}
	if c.ProbeInterval < 10*time.Millisecond {
		add(fmt.Errorf("probe-interval must be at least 10ms, got %s", c.ProbeInterval))
	}
	return errors.Join(errs...)
}
