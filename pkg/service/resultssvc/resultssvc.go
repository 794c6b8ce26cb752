// Package resultssvc is the results server as one component: Load reads its
// configuration, New assembles it (one connection pool per shard, the
// authenticated ResultService, the shard probes) and Run serves it under the
// supervisor of pkg/platform/server. services/results, the end-to-end tests and the
// write-path benchmark all build the server through New.
package resultssvc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/config"
	"github.com/resultsync/resultsync/pkg/platform/logging"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/service/stores"
	"github.com/resultsync/resultsync/pkg/write/resultapi"
	"github.com/resultsync/resultsync/pkg/write/resultstore"
)

// Config is the results server's configuration.
type Config struct {
	Server server.Config
	// Stores locate the shards.
	Stores stores.Settings
	// MaxConnsPerShard bounds each shard's connection pool.
	MaxConnsPerShard int
}

// Load reads the configuration from args (without the program name) and the
// environment, and validates it. Every missing, malformed or impossible
// setting is reported in one error; no secret appears in it. --help returns
// flag.ErrHelp after printing the usage.
func Load(args []string) (Config, error) {
	var c Config
	l := config.NewLoader("results")
	c.Server.Flags(l, "RS_RESULTS", "127.0.0.1:7101", "127.0.0.1:7201")
	c.Stores.Flags(l, stores.Shards, stores.Help{})
	l.Int(&c.MaxConnsPerShard, "max-conns-per-shard", "RS_RESULTS_MAX_CONNS", 64, "connection pool size per shard")
	if err := l.Load(args, c.check); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate rejects missing and impossible settings, naming every one.
func (c *Config) Validate() error { return config.Validate("results", c.check) }

// check reports every invalid setting (config.Loader.Load, config.Validate).
func (c *Config) check(loaded bool) error {
	errs := []error{c.Server.Validate(), c.Stores.Check(stores.Shards, loaded)}
	if _, err := logging.New(io.Discard, "results", c.Server.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if c.MaxConnsPerShard < 1 {
		errs = append(errs, fmt.Errorf("max-conns-per-shard must be positive, got %d", c.MaxConnsPerShard))
	}
	return errors.Join(errs...)
}

// Service is an assembled results server, listening but not yet serving.
type Service struct {
	srv    *server.Server
	pools  *stores.Pools
	stores []*resultstore.Store
}

// New validates cfg and assembles the server: one lazily connected pool per
// shard (a shard that is down at start-up is logged and fails only its own
// requests), the ResultService behind bearer-token authentication, and the
// listeners, bound when New returns (GRPCAddr and HTTPAddr report them, so
// ":0" works). The Service must then be Run, which releases everything.
func New(ctx context.Context, log *slog.Logger, cfg Config) (_ *Service, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{}
	if s.pools, err = stores.Open(cfg.Stores, stores.Shards, stores.Options{Shard: resultstore.PoolOptions(cfg.MaxConnsPerShard), Log: log}); err != nil {
		return nil, fmt.Errorf("results server: %w", err)
	}
	defer func() {
		if err != nil {
			_ = s.pools.Close()
		}
	}()
	m := s.pools.Map
	for i, sh := range m.Shards {
		if err := s.pools.Shards[i].PingContext(ctx); err != nil {
			log.Warn("shard unreachable at start-up; its requests fail until it returns", "shard", sh.ID, "err", err)
		}
		s.stores = append(s.stores, resultstore.New(sh.ID, s.pools.Shards[i], resultstore.Options{}))
	}
	if s.srv, err = server.New(log, cfg.Server, server.WithAuth(auth.ResultPolicy)); err != nil {
		return nil, err
	}
	fitnessv1.RegisterResultServiceServer(s.srv.GRPC(), resultapi.NewService(m, s.stores))
	if err := s.srv.Listen(); err != nil {
		return nil, err
	}
	return s, nil
}

// GRPCAddr is the bound gRPC address.
func (s *Service) GRPCAddr() string { return s.srv.GRPCAddr() }

// HTTPAddr is the bound metrics and health address, or "" when disabled.
func (s *Service) HTTPAddr() string { return s.srv.HTTPAddr() }

// Run serves until ctx ends (nil after a clean shutdown) or the server fails
// (its error), with the shard probes; then it closes the shard pools. Call
// it once.
func (s *Service) Run(ctx context.Context) error {
	defer func() { _ = s.pools.Close() }()
	return s.srv.Run(ctx, nil, shardProbes(s.stores))
}

// shardProbes report each shard on its own health name, dependency/<shard
// id> (Partial: a down shard fails only the requests for records it owns),
// and take the server's overall health down through the "shards" probe only
// when no shard answers at all. The shards are pinged concurrently, so one
// shard that hangs does not use up the others' time.
func shardProbes(stores []*resultstore.Store) []server.Probe {
	var probes []server.Probe
	for _, st := range stores {
		probes = append(probes, server.Probe{Name: st.ShardID(), Partial: true, Check: st.Ping})
	}
	probes = append(probes, server.Probe{Name: "shards", Check: func(ctx context.Context) error {
		errc := make(chan error, len(stores))
		for _, st := range stores {
			go func() { errc <- st.Ping(ctx) }()
		}
		var errs []error
		for range stores {
			err := <-errc
			if err == nil {
				return nil // the others finish into the buffered channel
			}
			errs = append(errs, err)
		}
		return fmt.Errorf("no shard answers: %w", errors.Join(errs...))
	}})
	return probes
}
