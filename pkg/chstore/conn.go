// Package chstore holds the ClickHouse side of resultsync: connections that
// work on ClickHouse 18.16 and on current releases, and (as the consumer and
// reconciliation grow) the projection's writes and current-state reads.
package chstore

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Options locate a ClickHouse database.
type Options struct {
	Addr     string // native protocol address, e.g. 127.0.0.1:19000
	Database string
	User     string // default "default"
	Password string
	// DialTimeout bounds connecting (default 5s).
	DialTimeout time.Duration
	// ReadTimeout bounds each read from the server (default 2m), so a hung
	// server fails a query instead of holding it forever.
	ReadTimeout time.Duration
}

// OpenLazy returns a connection pool without connecting: a ClickHouse that is
// down fails only the calls that need it.
func OpenLazy(o Options) (driver.Conn, error) {
	if o.User == "" {
		o.User = "default"
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 2 * time.Minute
	}
	conn, err := clickhouse.Open(&clickhouse.Options{
		Addr:        []string{o.Addr},
		Auth:        clickhouse.Auth{Database: o.Database, Username: o.User, Password: o.Password},
		Protocol:    clickhouse.Native,
		DialTimeout: o.DialTimeout,
		ReadTimeout: o.ReadTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("opening ClickHouse %s/%s: %w", o.Addr, o.Database, err)
	}
	return conn, nil
}

// Open connects over the native protocol (the HTTP protocol of clickhouse-go
// v2 is refused by 18.16) and pings.
func Open(ctx context.Context, o Options) (driver.Conn, error) {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	conn, err := OpenLazy(o)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
	defer cancel()
	if err := conn.Ping(pctx); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("connecting to ClickHouse %s/%s: %w", o.Addr, o.Database, err)
	}
	return conn, nil
}
