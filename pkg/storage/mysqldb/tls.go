package mysqldb

import (
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"
)

// TLSConfigName is the name of resultsync's TLS configuration in the MySQL
// driver's registry: a DSN selects it with tls=resultsync (the private CA
// and client certificate of RegisterTLS).
const TLSConfigName = "resultsync"

// ErrNoTLSSettings fails a connection whose DSN names tls=resultsync in a
// process that registered no TLS settings.
var ErrNoTLSSettings = errors.New("the MySQL DSN names tls=" + TLSConfigName + " but no MySQL TLS settings were registered (--mysql-tls-ca-file)")

// Until RegisterTLS runs, tls=resultsync parses (so a configuration can be
// checked before its files are read) and refuses every connection.
func init() {
	if err := mysql.RegisterTLSConfig(TLSConfigName, &tls.Config{
		MinVersion:       tls.VersionTLS12,
		VerifyConnection: func(tls.ConnectionState) error { return ErrNoTLSSettings },
	}); err != nil {
		panic(err)
	}
}

// RegisterTLS makes cfg the configuration of every DSN with
// tls=resultsync parsed from now on (one per process: the driver's registry
// is global). The driver clones cfg per DSN and sets its ServerName to the
// DSN's host unless cfg names one; a GetClientCertificate callback survives
// the clone, so a client certificate re-read on change keeps working.
func RegisterTLS(cfg *tls.Config) error {
	if err := mysql.RegisterTLSConfig(TLSConfigName, cfg); err != nil {
		return fmt.Errorf("registering the MySQL TLS configuration: %w", err)
	}
	return nil
}

// UsesTLSConfig reports whether dsn selects resultsync's TLS configuration
// (tls=resultsync).
func UsesTLSConfig(dsn string) (bool, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return false, fmt.Errorf("parsing MySQL DSN: %w", err)
	}
	return cfg.TLSConfig == TLSConfigName, nil
}
