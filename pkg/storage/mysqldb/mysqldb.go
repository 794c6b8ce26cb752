// Package mysqldb opens MySQL/MariaDB connection pools with the settings every
// resultsync component relies on: UTC times on both sides, parsed DATETIME
// values, bounded pools and a start-up ping with a clear error.
package mysqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Options bound a pool.
type Options struct {
	MaxOpen     int           // maximum open connections (default 32)
	MaxIdle     int           // maximum idle connections (default MaxOpen)
	PingTimeout time.Duration // start-up ping limit (default 5s)
	// ReadCommitted sets the session isolation to READ COMMITTED at connect,
	// saving a SET TRANSACTION round trip per transaction.
	ReadCommitted bool
	// MultiStatements lets one Exec carry several ';'-separated statements
	// (arguments are interpolated client-side with proper escaping).
	MultiStatements bool
	// ReadTimeout and WriteTimeout bound every network read and write of a
	// connection, so a hung server fails a statement instead of holding it
	// forever (defaults 60s, above InnoDB's 50s lock wait, and 30s; a DSN's
	// own readTimeout/writeTimeout wins; negative disables).
	ReadTimeout, WriteTimeout time.Duration
}

// Default network timeouts of a connection (see Options).
const (
	DefaultReadTimeout  = 60 * time.Second
	DefaultWriteTimeout = 30 * time.Second
)

// Config parses dsn (go-sql-driver format) and forces UTC session time,
// parseTime and a connect timeout.
func Config(dsn string) (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parsing MySQL DSN: %w", err)
	}
	cfg.ParseTime = true
	// Client-side interpolation: one round trip per statement instead of
	// prepare + execute + close.
	cfg.InterpolateParams = true
	cfg.Loc = time.UTC
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	return cfg, nil
}

func (o *Options) configure(cfg *mysql.Config) {
	cfg.MultiStatements = o.MultiStatements
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = orDefault(o.ReadTimeout, DefaultReadTimeout)
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = orDefault(o.WriteTimeout, DefaultWriteTimeout)
	}
}

func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d == 0:
		return def
	}
	return d
}

// readCommittedConnector sets READ COMMITTED on every new session with the
// statement both engines accept. (A DSN parameter cannot do it portably:
// MySQL 8+ knows only transaction_isolation, MariaDB 10.11 only
// tx_isolation.)
type readCommittedConnector struct{ driver.Connector }

func (c readCommittedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		_ = conn.Close()
		return nil, errors.New("setting READ COMMITTED: the MySQL driver connection cannot execute statements")
	}
	if _, err := ex.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", nil); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("setting READ COMMITTED: %w", err)
	}
	return conn, nil
}

// OpenLazy returns a pool for dsn without connecting: a database that is down
// fails only the requests that need it.
func OpenLazy(dsn string, o Options) (*sql.DB, error) {
	db, _, err := openLazy(dsn, o)
	return db, err
}

func openLazy(dsn string, o Options) (*sql.DB, *mysql.Config, error) {
	cfg, err := Config(dsn)
	if err != nil {
		return nil, nil, err
	}
	o.configure(cfg)
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("configuring MySQL %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	if o.ReadCommitted {
		conn = readCommittedConnector{conn}
	}
	db := sql.OpenDB(conn)
	o.apply(db)
	return db, cfg, nil
}

func (o *Options) apply(db *sql.DB) {
	if o.MaxOpen <= 0 {
		o.MaxOpen = 32
	}
	if o.MaxIdle <= 0 {
		o.MaxIdle = o.MaxOpen
	}
	db.SetMaxOpenConns(o.MaxOpen)
	db.SetMaxIdleConns(o.MaxIdle)
	db.SetConnMaxLifetime(30 * time.Minute)
}

// Open returns a pool for dsn after a successful ping. The error names the
// address and database, never the password.
func Open(ctx context.Context, dsn string, o Options) (*sql.DB, error) {
	db, cfg, err := openLazy(dsn, o)
	if err != nil {
		return nil, err
	}
	if o.PingTimeout <= 0 {
		o.PingTimeout = 5 * time.Second
	}
	pctx, cancel := context.WithTimeout(ctx, o.PingTimeout)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("connecting to MySQL %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	return db, nil
}

// Redact returns dsn with its password replaced, for logs.
func Redact(dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "<unparseable DSN>"
	}
	if cfg.Passwd != "" {
		cfg.Passwd = "xxxxx"
	}
	return cfg.FormatDSN()
}

// MySQL server error numbers the components react to.
const (
	ErDupEntry        = 1062
	ErLockDeadlock    = 1213
	ErLockWaitTimeout = 1205
)

// IsErrorNumber reports whether err is a MySQL server error with number n.
func IsErrorNumber(err error, n uint16) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == n
}

// IsRetryable reports a transaction the server rolled back for contention
// (deadlock or lock wait timeout): the caller may retry it.
func IsRetryable(err error) bool {
	return IsErrorNumber(err, ErLockDeadlock) || IsErrorNumber(err, ErLockWaitTimeout)
}

// IsUnavailable reports an error that means the database could not be reached
// or the connection broke: the request did not reach a decision it can report.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, sql.ErrConnDone) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}
