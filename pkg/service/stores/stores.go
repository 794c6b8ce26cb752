// Package stores holds what the servers that read both sides share: the
// settings locating the shards, the control database and the ClickHouse
// projection (flags, validation without secrets), the pools opened from
// them, and a health probe per pool.
package stores

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/resultsync/resultsync/pkg/chstore"
	"github.com/resultsync/resultsync/pkg/config"
	"github.com/resultsync/resultsync/pkg/mysqldb"
	"github.com/resultsync/resultsync/pkg/server"
	"github.com/resultsync/resultsync/pkg/shard"
)

// Settings locate the three stores.
type Settings struct {
	// Shards is the shard map of the authoritative side, "id=dsn,..." (at
	// least two). Secret.
	Shards string
	// ControlDSN locates the control database. Secret.
	ControlDSN string
	// CHAddr and CHDatabase locate the ClickHouse projection.
	CHAddr, CHDatabase string
	// CHCluster names the ClickHouse cluster of a sharded, replicated
	// projection (docs/cluster.md); empty for a single server.
	CHCluster string
	// CHUser and CHPassword are the ClickHouse account (CHPassword secret).
	CHUser, CHPassword string
}

// Help is the --help text of each setting (what the server uses it for).
type Help struct{ Shards, Control, ClickHouse string }

// Flags registers --shards, --control-dsn, --clickhouse-addr and
// --clickhouse-database (and their RS_ variables) on l.
func (s *Settings) Flags(l *config.Loader, h Help) {
	l.Need(&s.Shards, "shards", "RS_SHARDS", config.DefaultShards, "shard map id=dsn,... ("+h.Shards+")", true)
	l.Need(&s.ControlDSN, "control-dsn", "RS_CONTROL_DSN", config.DefaultControlDSN, "control database DSN ("+h.Control+")", true)
	l.Need(&s.CHAddr, "clickhouse-addr", "RS_CH_ADDR", config.DefaultClickHouseAddr, "ClickHouse native address ("+h.ClickHouse+")", false)
	l.String(&s.CHDatabase, "clickhouse-database", "RS_CH_DATABASE", config.DefaultClickHouseDatabase, "ClickHouse database")
	l.String(&s.CHCluster, "clickhouse-cluster", "RS_CH_CLUSTER", "", "ClickHouse cluster name when the projection runs on a cluster (docs/cluster.md)")
	l.ClickHouseCredentials(&s.CHUser, &s.CHPassword)
}

// Missing names every required setting left empty.
func (s *Settings) Missing() error {
	var errs []error
	for _, f := range []struct{ name, v string }{{"shards", s.Shards}, {"control-dsn", s.ControlDSN}, {"clickhouse-addr", s.CHAddr}} {
		if f.v == "" {
			errs = append(errs, fmt.Errorf("%s is required", f.name))
		}
	}
	return errors.Join(errs...)
}

// Validate checks the settings that are present (Missing names the absent
// ones); no secret appears in its errors.
func (s *Settings) Validate() error {
	var errs []error
	if s.Shards != "" {
		if m, err := shard.Parse(s.Shards); err != nil {
			errs = append(errs, err)
		} else if len(m.Shards) < 2 {
			errs = append(errs, errors.New("the shard map needs at least two shards"))
		}
	}
	if s.ControlDSN != "" {
		if _, err := mysqldb.Config(s.ControlDSN); err != nil {
			errs = append(errs, errors.New("control-dsn is not a valid DSN")) // the DSN's text is secret
		}
	}
	if s.CHAddr != "" {
		if _, _, err := net.SplitHostPort(s.CHAddr); err != nil {
			errs = append(errs, fmt.Errorf("clickhouse-addr %q: %w", s.CHAddr, err))
		}
	}
	if s.CHDatabase == "" {
		errs = append(errs, errors.New("clickhouse-database must not be empty"))
	}
	return errors.Join(errs...)
}

// Pools are the connection pools of the three stores, every one opened
// lazily: a store that is down does not stop a start, it shows on its probe.
type Pools struct {
	Map     shard.Map
	Shards  []*sql.DB // Shards[i] is the database of Map.Shards[i]
	Control *sql.DB
	CH      driver.Conn
}

// Open opens the pools of valid settings, maxOpen connections per MySQL
// pool. On error the pools opened so far are closed.
func Open(s Settings, maxOpen int) (_ *Pools, err error) {
	m, err := shard.Parse(s.Shards)
	if err != nil {
		return nil, err
	}
	p := &Pools{Map: m}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	for _, sh := range m.Shards {
		db, err := mysqldb.OpenLazy(sh.DSN, mysqldb.Options{MaxOpen: maxOpen})
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", sh.ID, err)
		}
		p.Shards = append(p.Shards, db)
	}
	if p.Control, err = mysqldb.OpenLazy(s.ControlDSN, mysqldb.Options{MaxOpen: maxOpen}); err != nil {
		return nil, fmt.Errorf("control database: %w", err)
	}
	if p.CH, err = chstore.OpenLazy(s.CHOptions()); err != nil {
		return nil, err
	}
	return p, nil
}

// CHOptions are the ClickHouse connection settings.
func (s Settings) CHOptions() chstore.Options {
	return chstore.Options{Addr: s.CHAddr, Database: s.CHDatabase, Cluster: s.CHCluster, User: s.CHUser, Password: s.CHPassword,
		DialTimeout: 5 * time.Second}
}

// ClickHouseProbe is the probe "clickhouse".
func (p *Pools) ClickHouseProbe(partial bool) server.Probe {
	return server.Probe{Name: "clickhouse", Partial: partial, Check: func(ctx context.Context) error {
		if err := p.CH.Ping(ctx); err != nil {
			return fmt.Errorf("ClickHouse: %w", err)
		}
		return nil
	}}
}

// ShardProbes are one Partial probe per shard, named by its id: a down
// shard fails the work that needs it, not the server.
func (p *Pools) ShardProbes() []server.Probe {
	var probes []server.Probe
	for i, db := range p.Shards {
		id := p.Map.Shards[i].ID
		probes = append(probes, server.Probe{Name: id, Partial: true, Check: func(ctx context.Context) error {
			if err := db.PingContext(ctx); err != nil {
				return fmt.Errorf("shard %s: %w", id, err)
			}
			return nil
		}})
	}
	return probes
}

// Close closes every pool that is open.
func (p *Pools) Close() {
	for _, db := range p.Shards {
		_ = db.Close()
	}
	if p.Control != nil {
		_ = p.Control.Close()
	}
	if p.CH != nil {
		_ = p.CH.Close()
	}
}
