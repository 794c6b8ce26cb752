// Package pulsarbus wires resultsync to Apache Pulsar: client construction
// with slog logging and bounded timeouts, a reconnection policy that notices
// a returning broker within seconds (ReconnectBackoff), and topic naming.
// Producers key messages by data_id so that a record's versions stay on one
// partition, which one Failover consumer reads in order.
package pulsarbus

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pulsarlog "github.com/apache/pulsar-client-go/pulsar/log"
)

// Options configure a client.
type Options struct {
	// URL of the broker, e.g. pulsar://127.0.0.1:16650.
	URL string
	// OperationTimeout bounds producer/consumer creation and lookups (default 30s).
	OperationTimeout time.Duration
	// ConnectionTimeout bounds TCP connects (default 5s).
	ConnectionTimeout time.Duration
	// Token, when set, is presented to the broker (token authentication,
	// AuthenticationProviderToken); empty: no authentication.
	Token string
}

// ValidateURL accepts a broker URL of the binary protocol: pulsar:// or
// pulsar+ssl://.
func ValidateURL(url string) error {
	if !strings.HasPrefix(url, "pulsar://") && !strings.HasPrefix(url, "pulsar+ssl://") {
		return fmt.Errorf("pulsar URL %q: want pulsar:// or pulsar+ssl://", url)
	}
	return nil
}

// NewClient returns a Pulsar client logging through log at warn level and above
// (the client is chatty at info).
func NewClient(log *slog.Logger, o Options) (pulsar.Client, error) {
	if err := ValidateURL(o.URL); err != nil {
		return nil, err
	}
	if o.OperationTimeout <= 0 {
		o.OperationTimeout = 30 * time.Second
	}
	if o.ConnectionTimeout <= 0 {
		o.ConnectionTimeout = 5 * time.Second
	}
	quiet := slog.New(levelFloor{h: log.Handler(), min: slog.LevelWarn})
	opts := pulsar.ClientOptions{
		URL:               o.URL,
		OperationTimeout:  o.OperationTimeout,
		ConnectionTimeout: o.ConnectionTimeout,
		Logger:            pulsarlog.NewLoggerWithSlog(quiet.With("component", "pulsar-client")),
	}
	if o.Token != "" {
		opts.Authentication = pulsar.NewAuthenticationToken(o.Token)
	}
	c, err := pulsar.NewClient(opts)
	if err != nil {
		return nil, fmt.Errorf("creating Pulsar client for %s: %w", o.URL, err)
	}
	return c, nil
}

// Topic returns the fully qualified persistent topic name.
func Topic(tenant, namespace, name string) string {
	return "persistent://" + tenant + "/" + namespace + "/" + name
}
