// Package chstore owns the ClickHouse projection's tables and their SQL:
// connections that work on ClickHouse 18.16 and on current releases (Open),
// the consumer's durable inserts of versioned rows, dead letters and applied
// positions (Projection, durable.go), current-state reads, and what repairs
// and rebuilds do to the projection (repair.go: origins, removals, staging
// tables, the switch and the epoch floor), on one server or a cluster.
package chstore

import (
	"context"
	"crypto/tls"
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
	// Cluster names the ClickHouse cluster the database is sharded over
	// (docs/cluster.md); empty for a single server. On a cluster every query
	// of the connection runs with insert_distributed_sync=1 (an INSERT into
	// the Distributed table returns only once every shard it wrote to has the
	// rows, so the consumer acknowledges only durable inserts) and
	// prefer_localhost_replica=0 (18.16 fails a FINAL read of a Distributed
	// table whose local shard is read in-process: "Cannot find column ... in
	// source stream"; through the network, as for the other shards, it works).
	Cluster string
	// TLS, when set, connects over TLS (ClickHouse's secure native port,
	// tcp_port_secure, e.g. 9440); nil: plaintext.
	TLS *tls.Config
}

// ClusterSettings are the settings every connection to a cluster carries
// (see Options.Cluster).
func ClusterSettings() clickhouse.Settings {
	return clickhouse.Settings{"insert_distributed_sync": 1, "prefer_localhost_replica": 0}
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
	var settings clickhouse.Settings
	if o.Cluster != "" {
		settings = ClusterSettings()
	}
	conn, err := clickhouse.Open(&clickhouse.Options{
		Settings:    settings,
		Addr:        []string{o.Addr},
		Auth:        clickhouse.Auth{Database: o.Database, Username: o.User, Password: o.Password},
		Protocol:    clickhouse.Native,
		DialTimeout: o.DialTimeout,
		ReadTimeout: o.ReadTimeout,
		TLS:         o.TLS,
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
