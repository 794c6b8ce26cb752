package infratest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
	"github.com/resultsync/resultsync/pkg/storage/schema"
)

// ErrUnreachable wraps the error of a local server that cannot be reached.
var ErrUnreachable = errors.New("local server unreachable (run `make up`)")

// MySQLEngine names the MySQL-family engine the tests run on:
// RS_MYSQL_ENGINE, "mysql" (Oracle MySQL 9.7, the default) or "mariadb"
// (deploy/local/env.sh points RS_MYSQL_PORT at the chosen server).
func MySQLEngine() string {
	if Env("RS_MYSQL_ENGINE", "mysql") == "mariadb" {
		return "MariaDB"
	}
	return "MySQL"
}

func mysqlLogName() string {
	if MySQLEngine() == "MariaDB" {
		return "mariadb.log"
	}
	return "mysql.log"
}

// MySQLServerDSN is the DSN of the local MySQL-family server with no
// database.
func MySQLServerDSN() string {
	return fmt.Sprintf("%s:%s@tcp(%s:%s)/",
		Env("RS_MYSQL_USER", "resultsync"), Env("RS_MYSQL_PASSWORD", "resultsync"),
		Env("RS_MYSQL_HOST", "127.0.0.1"), Env("RS_MYSQL_PORT", "13306"))
}

// MySQLDatabase is a fresh database on the local MySQL-family server.
type MySQLDatabase struct {
	Name string
	DSN  string
	DB   *sql.DB
}

// CreateMySQLDatabase creates a fresh database <prefix>_<suffix> on the local
// MySQL-family server, applies the migrations of kind ("" applies none), and returns it
// with a function that closes and drops it. Connection failures to the
// server wrap ErrUnreachable. Tests use NewMySQLDatabase; benchmark programs
// call this directly.
func CreateMySQLDatabase(ctx context.Context, prefix string, kind schema.Kind, maxOpen int) (*MySQLDatabase, func(), error) {
	admin, err := mysqldb.Open(ctx, MySQLServerDSN(), mysqldb.Options{MaxOpen: 2})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w: %w", MySQLEngine(), ErrUnreachable, err)
	}
	name := prefix + "_" + Suffix()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4"); err != nil {
		admin.Close()
		return nil, nil, fmt.Errorf("creating database %s: %w", name, err)
	}
	d := &MySQLDatabase{Name: name, DSN: MySQLServerDSN() + name}
	drop := func() error {
		if d.DB != nil {
			d.DB.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		defer admin.Close()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
			return fmt.Errorf("dropping database %s: %w", name, err)
		}
		return nil
	}
	if d.DB, err = mysqldb.Open(ctx, d.DSN, mysqldb.Options{MaxOpen: maxOpen}); err != nil {
		_ = drop()
		return nil, nil, fmt.Errorf("opening %s: %w", name, err)
	}
	if kind != "" {
		if _, err := schema.ApplyMySQL(ctx, d.DB, kind); err != nil {
			_ = drop()
			return nil, nil, fmt.Errorf("migrating %s: %w", name, err)
		}
	}
	return d, func() { _ = drop() }, nil
}

// NewMySQLDatabase creates a fresh, migrated database rs_test_<suffix> (see
// CreateMySQLDatabase) dropped when the test ends; an unreachable server
// fails or skips the test (see Unavailable).
func NewMySQLDatabase(t testing.TB, kind schema.Kind) *MySQLDatabase {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, drop, err := CreateMySQLDatabase(ctx, "rs_test", kind, 64)
	if errors.Is(err, ErrUnreachable) {
		Unavailable(t, MySQLEngine(), mysqlLogName(), err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	return d
}

// ProxiedDSN starts a Proxy to d's server (closed when the test ends) and
// returns it with d's DSN through it, dialing with a 500ms timeout so that a
// cut path fails fast: the DSN to give a server under test whose path to d
// the test cuts.
func (d *MySQLDatabase) ProxiedDSN(t testing.TB) (*Proxy, string) {
	t.Helper()
	proxy, cfg := d.proxy(t)
	cfg.Timeout = 500 * time.Millisecond
	return proxy, cfg.FormatDSN()
}

// proxy starts a Proxy to d's server (closed when the test ends) and
// returns it with d's DSN settings, their address the proxy's.
func (d *MySQLDatabase) proxy(t testing.TB) (*Proxy, *mysql.Config) {
	t.Helper()
	cfg, err := mysql.ParseDSN(d.DSN)
	if err != nil {
		t.Fatal(err)
	}
	proxy := NewProxy(t, cfg.Addr)
	cfg.Addr = proxy.Addr()
	return proxy, cfg
}

// Proxied starts a Proxy to d's server (closed when the test ends) and
// opens d through it: the fault tests cut, pause or hold that path while d.DB
// stays direct.
func (d *MySQLDatabase) Proxied(t testing.TB, maxOpen int) (*Proxy, *sql.DB) {
	t.Helper()
	proxy, cfg := d.proxy(t)
	db, err := mysqldb.OpenLazy(cfg.FormatDSN(), mysqldb.Options{MaxOpen: maxOpen})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return proxy, db
}

// WaitRunning waits, at most timeout, until n sessions of the database are
// running a statement that starts with prefix (information_schema.PROCESSLIST,
// which shows the sessions of the tests' own user), and fails the test
// otherwise.
func (d *MySQLDatabase) WaitRunning(t testing.TB, prefix string, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var got int
		if err := d.DB.QueryRowContext(context.Background(),
			"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND INFO LIKE CONCAT(?, '%')", prefix).Scan(&got); err != nil {
			t.Fatalf("reading the sessions of %s: %v", d.Name, err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions of %s ran %q within %s, want %d", got, d.Name, prefix, timeout, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
