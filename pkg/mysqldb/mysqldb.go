// Package mysqldb opens MySQL/MariaDB connection pools with the settings every
// resultsync component relies on: UTC times on both sides, parsed DATETIME
// values, bounded pools and a start-up ping with a clear error.
package mysqldb

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Options bound a pool.
type Options struct {
	MaxOpen     int           // maximum open connections (default 32)
	MaxIdle     int           // maximum idle connections (default MaxOpen)
	PingTimeout time.Duration // start-up ping limit (default 5s)
}

// Config parses dsn (go-sql-driver format) and forces UTC session time,
// parseTime and a connect timeout.
func Config(dsn string) (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parsing MySQL DSN: %w", err)
	}
	cfg.ParseTime = true
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

// Open returns a pool for dsn after a successful ping. The error names the
// address and database, never the password.
func Open(ctx context.Context, dsn string, o Options) (*sql.DB, error) {
	cfg, err := Config(dsn)
	if err != nil {
		return nil, err
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("configuring MySQL %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	db := sql.OpenDB(conn)
	if o.MaxOpen <= 0 {
		o.MaxOpen = 32
	}
	if o.MaxIdle <= 0 {
		o.MaxIdle = o.MaxOpen
	}
	if o.PingTimeout <= 0 {
		o.PingTimeout = 5 * time.Second
	}
	db.SetMaxOpenConns(o.MaxOpen)
	db.SetMaxIdleConns(o.MaxIdle)
	db.SetConnMaxLifetime(30 * time.Minute)
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
