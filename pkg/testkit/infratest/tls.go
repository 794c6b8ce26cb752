package infratest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// LocalCA are the files of the local stack's private CA, made by
// deploy/local/tls.sh in TLSDir: the CA (and its key, for tests that issue
// certificates the local servers trust), the servers' certificate
// (localhost, 127.0.0.1, ::1; also usable as a client's) and a client
// certificate.
type LocalCA struct {
	Dir                   string
	CAFile, CAKeyFile     string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

// TLSDir is the local CA's directory: $RS_TLS_DIR, or tls under StateDir.
func TLSDir() string { return Env("RS_TLS_DIR", filepath.Join(StateDir(), "tls")) }

// ClickHouseSecureAddr is the local ClickHouse's secure native address
// (tcp_port_secure: TLS with the local CA's server certificate).
func ClickHouseSecureAddr() string {
	return Env("RS_CH_HOST", "127.0.0.1") + ":" + Env("RS_CH_SECURE_PORT", "19440")
}

// PulsarTLSURL is the local broker's pulsar+ssl:// URL (brokerServicePortTls).
func PulsarTLSURL() string {
	return Env("RS_PULSAR_TLS_URL", "pulsar+ssl://127.0.0.1:"+Env("RS_PULSAR_TLS_PORT", "16651"))
}

// localCAConfig is the go-sql-driver TLS configuration name EngineTLS
// checks MySQL with (never mysqldb.TLSConfigName, which the servers under
// test register).
const localCAConfig = "infratest-local-ca"

// EngineTLS returns the local CA's files after checking that every engine
// serves TLS with its server certificate: the MySQL-family server of
// MySQLServerDSN (verified with the CA), ClickHouse's secure native port and
// the broker's TLS port. A missing CA or an engine without TLS (started
// before deploy/local configured it: `make up` restarts it) fails or skips
// the test (see Unavailable).
func EngineTLS(t testing.TB) LocalCA {
	t.Helper()
	dir := TLSDir()
	ca := LocalCA{Dir: dir, CAFile: filepath.Join(dir, "ca.pem"), CAKeyFile: filepath.Join(dir, "ca-key.pem"),
		ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem")}
	for _, f := range []string{ca.CAFile, ca.CAKeyFile, ca.ServerCert, ca.ServerKey, ca.ClientCert, ca.ClientKey} {
		if _, err := os.Stat(f); err != nil {
			Unavailable(t, "the local CA (deploy/local/tls.sh)", "mysql.log", fmt.Errorf("%w: %w", ErrUnreachable, err))
		}
	}
	raw, err := os.ReadFile(ca.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw) {
		t.Fatalf("%s holds no certificate", ca.CAFile)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := mysqlServesTLS(ctx, pool); err != nil {
		Unavailable(t, MySQLEngine()+" over TLS", mysqlLogName(), err)
	}
	if err := handshake(ctx, ClickHouseSecureAddr(), pool); err != nil {
		Unavailable(t, "ClickHouse's secure native port", "clickhouse-server.err.log", err)
	}
	u, err := url.Parse(PulsarTLSURL())
	if err != nil {
		t.Fatalf("RS_PULSAR_TLS_URL: %v", err)
	}
	if err := handshake(ctx, u.Host, pool); err != nil {
		Unavailable(t, "Pulsar's TLS port", "pulsar.log", err)
	}
	return ca
}

// handshake completes a TLS handshake with addr, verifying its certificate
// against pool and the address's host.
func handshake(ctx context.Context, addr string, pool *x509.CertPool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	d := tls.Dialer{Config: &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12}}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("TLS handshake with %s verified by the local CA: %w: %w", addr, ErrUnreachable, err)
	}
	return c.Close()
}

// mysqlServesTLS logs in to the MySQL-family server over TLS, verifying its
// certificate against pool.
func mysqlServesTLS(ctx context.Context, pool *x509.CertPool) error {
	cfg, err := mysql.ParseDSN(MySQLServerDSN())
	if err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return err
	}
	if err := mysql.RegisterTLSConfig(localCAConfig, &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12}); err != nil {
		return err
	}
	cfg.TLSConfig = localCAConfig
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	var name, version string
	err = db.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Ssl_version'").Scan(&name, &version)
	if err == nil && version == "" {
		err = errors.New("the session is not encrypted")
	}
	if err != nil {
		return fmt.Errorf("%s over TLS verified by the local CA: %w: %w", MySQLEngine(), ErrUnreachable, err)
	}
	return nil
}
