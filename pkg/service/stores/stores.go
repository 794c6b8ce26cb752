// Package stores is the one assembly of the stores every server and the
// migrator locate: the settings of the shards, the control database and the
// ClickHouse projection (flags, environment, validation without secrets),
// the connection pools opened from them, and a health probe per pool. Each
// server names the stores it uses (Need); services/migrate uses the same
// settings for what it migrates.
package stores

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/resultsync/resultsync/pkg/model/shard"
	"github.com/resultsync/resultsync/pkg/platform/config"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/platform/tlsconfig"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
)

// Need is the set of stores a server uses.
type Need uint8

// The stores.
const (
	// Shards is the authoritative side: the shard map (at least two).
	Shards Need = 1 << iota
	// Control is the control database.
	Control
	// ClickHouse is the projection, its address required.
	ClickHouse
	// ClickHouseSkipped defines the ClickHouse settings but its address and
	// checks none of them: a run told to leave ClickHouse alone (migrate
	// --skip-clickhouse).
	ClickHouseSkipped

	// All is the three stores.
	All = Shards | Control | ClickHouse
)

// Settings locate the stores.
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
	// MySQLTLS is the TLS of the shards' and the control database's
	// connections: the private CA that verifies the servers and the client
	// certificate presented to them (re-read when it changes), registered
	// with the MySQL driver as mysqldb.TLSConfigName. Every DSN selects it
	// with tls=resultsync, and a DSN naming it needs these settings.
	MySQLTLS tlsconfig.Files
	// CHTLS connects to ClickHouse over TLS (its secure native port,
	// tcp_port_secure, e.g. 9440) with a private CA and a client certificate.
	CHTLS tlsconfig.Files
}

// Help is what the server uses each store for, shown in parentheses after
// the usage of --shards, --control-dsn and --clickhouse-addr (empty: nothing
// added); Cluster replaces the usage of --clickhouse-cluster (empty: the
// usual one).
type Help struct{ Shards, Control, ClickHouse, Cluster string }

// Flags registers on l the settings of the stores in need, with their RS_
// environment variables: --shards and --control-dsn (required, secret),
// --clickhouse-addr (required), --clickhouse-database, --clickhouse-cluster,
// --clickhouse-user and --clickhouse-password (secret), and the TLS settings
// of the stores in need: --mysql-tls-ca-file, --mysql-tls-cert-file, ...
// (env RS_MYSQL_TLS_*) and --clickhouse-tls-ca-file, ... (env RS_CH_TLS_*),
// see tlsconfig.Files.ClientFlags.
func (s *Settings) Flags(l *config.Loader, need Need, h Help) {
	if need&Shards != 0 {
		l.Need(&s.Shards, "shards", "RS_SHARDS", config.DefaultShards, "shard map id=dsn,..."+paren(h.Shards), true)
	}
	if need&Control != 0 {
		l.Need(&s.ControlDSN, "control-dsn", "RS_CONTROL_DSN", config.DefaultControlDSN, "control database DSN"+paren(h.Control), true)
	}
	if need&(Shards|Control) != 0 {
		s.MySQLTLS.ClientFlags(l, "mysql", "RS_MYSQL", "MySQL (the DSNs select it with tls="+mysqldb.TLSConfigName+")")
	}
	if need&(ClickHouse|ClickHouseSkipped) == 0 {
		return
	}
	if need&ClickHouse != 0 {
		l.Need(&s.CHAddr, "clickhouse-addr", "RS_CH_ADDR", config.DefaultClickHouseAddr, "ClickHouse native address"+paren(h.ClickHouse), false)
	}
	l.String(&s.CHDatabase, "clickhouse-database", "RS_CH_DATABASE", config.DefaultClickHouseDatabase, "ClickHouse database")
	cluster := h.Cluster
	if cluster == "" {
		cluster = "ClickHouse cluster name when the projection runs on a cluster (docs/cluster.md)"
	}
	l.String(&s.CHCluster, "clickhouse-cluster", "RS_CH_CLUSTER", "", cluster)
	l.ClickHouseCredentials(&s.CHUser, &s.CHPassword)
	s.CHTLS.ClientFlags(l, "clickhouse", "RS_CH", "ClickHouse (its secure native port)")
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// Check reports every invalid setting of the stores in need; no secret
// appears in its errors. With loaded (the settings came from a Loader, whose
// Parse names the required ones left empty) an empty required setting is
// not reported again.
func (s *Settings) Check(need Need, loaded bool) error {
	var errs []error
	required := func(name, v string) bool {
		if v == "" && !loaded {
			errs = append(errs, fmt.Errorf("%s is required", name))
		}
		return v != ""
	}
	if need&Shards != 0 && required("shards", s.Shards) {
		if m, err := shard.Parse(s.Shards); err != nil {
			errs = append(errs, err)
		} else {
			if len(m.Shards) < 2 {
				errs = append(errs, errors.New("the shard map needs at least two shards"))
			}
			for _, sh := range m.Shards {
				if _, err := mysqldb.Config(sh.DSN); err != nil {
					errs = append(errs, fmt.Errorf("shard %s: %w", sh.ID, err))
				} else if err := s.checkMySQLTLS(sh.DSN); err != nil {
					errs = append(errs, fmt.Errorf("shard %s: %w", sh.ID, err))
				}
			}
		}
	}
	if need&Control != 0 && required("control-dsn", s.ControlDSN) {
		if _, err := mysqldb.Config(s.ControlDSN); err != nil {
			errs = append(errs, errors.New("control-dsn is not a valid DSN")) // the DSN's text is secret
		} else if err := s.checkMySQLTLS(s.ControlDSN); err != nil {
			errs = append(errs, fmt.Errorf("control-dsn: %w", err))
		}
	}
	if need&(Shards|Control) != 0 {
		if err := s.MySQLTLS.CheckClient("mysql TLS"); err != nil {
			errs = append(errs, err)
		}
	}
	if need&ClickHouse != 0 {
		if err := s.CHTLS.CheckClient("clickhouse TLS"); err != nil {
			errs = append(errs, err)
		}
	}
	if need&ClickHouse != 0 {
		if required("clickhouse-addr", s.CHAddr) {
			if _, _, err := net.SplitHostPort(s.CHAddr); err != nil {
				errs = append(errs, fmt.Errorf("clickhouse-addr %q: %w", s.CHAddr, err))
			}
		}
		if s.CHDatabase == "" {
			errs = append(errs, errors.New("clickhouse-database must not be empty"))
		}
	}
	return errors.Join(errs...)
}

// checkMySQLTLS fails a DSN that names tls=resultsync without MySQL TLS
// settings, and one that does not name it while they are set (the settings
// would be silently unused).
func (s *Settings) checkMySQLTLS(dsn string) error {
	uses, err := mysqldb.UsesTLSConfig(dsn)
	if err != nil {
		return err
	}
	switch on := s.MySQLTLS.ClientEnabled(); {
	case uses && !on:
		return fmt.Errorf("the DSN selects tls=%s but no MySQL TLS setting is given (--mysql-tls-ca-file, --mysql-tls)", mysqldb.TLSConfigName)
	case !uses && on:
		return fmt.Errorf("MySQL TLS settings are given but the DSN does not select them: add tls=%s", mysqldb.TLSConfigName)
	}
	return nil
}

// RegisterMySQLTLS reads the MySQL TLS files and registers their
// configuration as mysqldb.TLSConfigName (Open does it before opening any
// pool); without MySQL TLS settings it does nothing.
func (s Settings) RegisterMySQLTLS(log *slog.Logger) error {
	if !s.MySQLTLS.ClientEnabled() {
		return nil
	}
	c, err := tlsconfig.Client(log, s.MySQLTLS, "MySQL")
	if err != nil {
		return fmt.Errorf("MySQL TLS: %w", err)
	}
	return mysqldb.RegisterTLS(c)
}

// PulsarTLSFlags registers a Pulsar client's TLS settings on l:
// --pulsar-tls-ca-file, --pulsar-tls-cert-file, --pulsar-tls-key-file and
// --pulsar-tls-insecure-skip-verify (env RS_PULSAR_TLS_*); a pulsar+ssl://
// URL turns TLS on (pulsarbus.Options.TLS says how each is used).
func PulsarTLSFlags(l *config.Loader, f *tlsconfig.Files) {
	f.ClientFlags(l, "pulsar", "RS_PULSAR", "the Pulsar broker")
}

// Map is the shard map of valid settings.
func (s Settings) Map() (shard.Map, error) { return shard.Parse(s.Shards) }

// CHOptions are the ClickHouse connection settings (a 5s dial timeout),
// with the TLS configuration of CHTLS (read from its files) when enabled.
func (s Settings) CHOptions(log *slog.Logger) (chstore.Options, error) {
	o := chstore.Options{Addr: s.CHAddr, Database: s.CHDatabase, Cluster: s.CHCluster, User: s.CHUser, Password: s.CHPassword,
		DialTimeout: 5 * time.Second}
	if s.CHTLS.ClientEnabled() {
		c, err := tlsconfig.Client(log, s.CHTLS, "ClickHouse")
		if err != nil {
			return chstore.Options{}, fmt.Errorf("ClickHouse TLS: %w", err)
		}
		o.TLS = c
	}
	return o, nil
}

// Options shape the pools.
type Options struct {
	// Shard and Control are the options of each shard's pool and of the
	// control database's.
	Shard, Control mysqldb.Options
	// CHDialTimeout bounds a ClickHouse connection's handshake (0: 5s).
	CHDialTimeout time.Duration
	// Log receives the TLS certificates' loads and reloads (nil:
	// slog.Default()).
	Log *slog.Logger
}

// Pools are the connection pools of the stores a server uses, every one
// opened lazily: a store that is down does not stop a start, it shows on its
// probe.
type Pools struct {
	Map     shard.Map
	Shards  []*sql.DB // Shards[i] is the database of Map.Shards[i]
	Control *sql.DB
	CH      driver.Conn
}

// Open opens the pools of the stores in need from valid settings. On error
// the pools opened so far are closed.
func Open(s Settings, need Need, o Options) (_ *Pools, err error) {
	p := &Pools{}
	defer func() {
		if err != nil {
			_ = p.Close()
		}
	}()
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	if need&(Shards|Control) != 0 {
		if err := s.RegisterMySQLTLS(log); err != nil {
			return nil, err
		}
	}
	if need&Shards != 0 {
		if p.Map, err = s.Map(); err != nil {
			return nil, err
		}
		for _, sh := range p.Map.Shards {
			db, err := mysqldb.OpenLazy(sh.DSN, o.Shard)
			if err != nil {
				return nil, fmt.Errorf("shard %s: %w", sh.ID, err)
			}
			p.Shards = append(p.Shards, db)
		}
	}
	if need&Control != 0 {
		if p.Control, err = mysqldb.OpenLazy(s.ControlDSN, o.Control); err != nil {
			return nil, fmt.Errorf("control database: %w", err)
		}
	}
	if need&ClickHouse != 0 {
		co, err := s.CHOptions(log)
		if err != nil {
			return nil, err
		}
		if o.CHDialTimeout > 0 {
			co.DialTimeout = o.CHDialTimeout
		}
		if p.CH, err = chstore.OpenLazy(co); err != nil {
			return nil, err
		}
	}
	return p, nil
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

// Close closes every pool that is open and returns their errors.
func (p *Pools) Close() error {
	var errs []error
	for _, db := range p.Shards {
		errs = append(errs, db.Close())
	}
	if p.Control != nil {
		errs = append(errs, p.Control.Close())
	}
	if p.CH != nil {
		errs = append(errs, p.CH.Close())
	}
	return errors.Join(errs...)
}
