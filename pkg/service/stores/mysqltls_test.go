package stores_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/resultsync/resultsync/pkg/platform/config"
	"github.com/resultsync/resultsync/pkg/platform/tlsconfig"
	"github.com/resultsync/resultsync/pkg/service/stores"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/tlstest"
)

// withTLS is dsn selecting tls=resultsync.
func withTLS(t *testing.T, dsn string) string {
	t.Helper()
	c, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	c.TLSConfig = mysqldb.TLSConfigName
	return c.FormatDSN()
}

// sslVersion is the TLS version of a session of the control database's
// pool ("" in plaintext), or the connection's error.
func sslVersion(t *testing.T, s stores.Settings) (string, error) {
	t.Helper()
	p, err := stores.Open(s, stores.Control, stores.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return "", err
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var name string
	var v sql.NullString
	err = p.Control.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Ssl_version'").Scan(&name, &v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v.String, err
}

// On the local MySQL-family server: a DSN with tls=resultsync verifies the
// server against the registered private CA (the local server's certificate
// is its own, auto-generated: refused), never falls back to plaintext, and
// is encrypted when the local profile skips verification (if the server
// serves TLS at all; a server without TLS refuses the DSN).
func TestMySQLTLSOnTheLocalServer(t *testing.T) {
	d := infratest.NewMySQLDatabase(t, "")
	plain, err := sslVersion(t, stores.Settings{ControlDSN: d.DSN})
	if err != nil {
		t.Fatal(err)
	}
	if plain != "" {
		t.Fatalf("a DSN without tls: session on %s", plain)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var have string
	var variable string
	if err := d.DB.QueryRowContext(ctx, "SHOW GLOBAL VARIABLES LIKE 'have_ssl'").Scan(&variable, &have); err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	serves := !strings.EqualFold(have, "DISABLED") && !strings.EqualFold(have, "NO")
	t.Logf("%s have_ssl=%q", infratest.MySQLEngine(), have)

	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "private-ca")
	cli := ca.Issue(t, dir, "relay", tlstest.Options{})
	dsn := withTLS(t, d.DSN)

	t.Run("private CA refuses the server's own certificate", func(t *testing.T) {
		v, err := sslVersion(t, stores.Settings{ControlDSN: dsn, MySQLTLS: tlsconfig.Files{CAFile: ca.File, CertFile: cli.CertFile, KeyFile: cli.KeyFile}})
		if err == nil {
			t.Fatalf("connected (TLS %q) to a server whose certificate the private CA did not sign", v)
		}
		if serves && !strings.Contains(err.Error(), "certificate") {
			t.Errorf("error %v; want a certificate verification failure", err)
		}
	})
	t.Run("skip verify in the local profile", func(t *testing.T) {
		v, err := sslVersion(t, stores.Settings{ControlDSN: dsn, MySQLTLS: tlsconfig.Files{InsecureSkipVerify: true, Profile: config.ProfileLocal}})
		if !serves {
			if err == nil {
				t.Fatalf("a server without TLS accepted tls=resultsync (session TLS %q): plaintext fallback", v)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(v, "TLSv1.2") && !strings.HasPrefix(v, "TLSv1.3") {
			t.Errorf("session TLS version %q; want TLSv1.2 or TLSv1.3", v)
		}
	})
}
