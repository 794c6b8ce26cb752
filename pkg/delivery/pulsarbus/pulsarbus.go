// Package pulsarbus wires resultsync to Apache Pulsar: client construction
// with slog logging and bounded timeouts, a reconnection policy that notices
// a returning broker within seconds (ReconnectBackoff), and topic naming.
// Producers key messages by data_id so that a record's versions stay on one
// partition, which one Failover consumer reads in order.
package pulsarbus

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pulsarlog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/resultsync/resultsync/pkg/platform/tlsconfig"
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
	// AuthenticationProviderToken); empty: no authentication, or the client
	// certificate's (below).
	Token string
	// TLS of a pulsar+ssl:// URL: CAFile verifies the broker's certificate
	// (empty: the system roots) and its host name (the URL's host);
	// CertFile and KeyFile are a client certificate, read at every new
	// connection (a rotated certificate is used from the next reconnection)
	// and, without a Token, the client's identity (TLS authentication,
	// AuthenticationProviderTls). InsecureSkipVerify only in the local
	// profile. ServerName is not supported (the URL's host is checked).
	TLS tlsconfig.Files
}

// Validate reports impossible settings: TLS files with a pulsar:// URL,
// unpaired certificate and key, skip verify outside the local profile.
func (o Options) Validate() error {
	if err := ValidateURL(o.URL); err != nil {
		return err
	}
	var errs []error
	if o.TLS.ClientEnabled() && !strings.HasPrefix(o.URL, "pulsar+ssl://") {
		errs = append(errs, fmt.Errorf("pulsar TLS settings need a pulsar+ssl:// URL, got %q", o.URL))
	}
	if o.TLS.ServerName != "" {
		errs = append(errs, errors.New("pulsar TLS: a server name other than the URL's host is not supported"))
	}
	errs = append(errs, o.TLS.CheckClient("pulsar TLS"))
	return errors.Join(errs...)
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
	if err := o.Validate(); err != nil {
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
	if strings.HasPrefix(o.URL, "pulsar+ssl://") {
		opts.TLSMinVersion = tlsconfig.MinVersion
		opts.TLSTrustCertsFilePath = o.TLS.CAFile
		opts.TLSValidateHostname = !o.TLS.InsecureSkipVerify
		if o.TLS.InsecureSkipVerify {
			log.Warn("TLS PEER VERIFICATION IS OFF: any certificate is accepted, so the connection is encrypted but not authenticated; local profile only",
				"peer", "Pulsar broker")
			opts.TLSAllowInsecureConnection = true
		}
	}
	switch {
	case o.Token != "":
		opts.Authentication = pulsar.NewAuthenticationToken(o.Token)
		opts.TLSCertificateFile, opts.TLSKeyFilePath = o.TLS.CertFile, o.TLS.KeyFile
	case o.TLS.CertFile != "":
		opts.Authentication = pulsar.NewAuthenticationTLS(o.TLS.CertFile, o.TLS.KeyFile)
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
