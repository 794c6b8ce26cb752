package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/auth"
	"github.com/resultsync/resultsync/pkg/config"
	"github.com/resultsync/resultsync/pkg/logging"
	"github.com/resultsync/resultsync/pkg/resultapi"
	"github.com/resultsync/resultsync/pkg/resultstore"
	"github.com/resultsync/resultsync/pkg/server"
	"github.com/resultsync/resultsync/pkg/shard"
)

// Config is the results server's configuration.
type Config struct {
	Server server.Config
	// Shards is the shard map, "id=dsn,id=dsn".
	Shards string
	// MaxConnsPerShard bounds each shard's connection pool.
	MaxConnsPerShard int
}

func (c *Config) load(args []string) error {
	l := config.NewLoader("results")
	c.Server.Flags(l, "RS_RESULTS", "127.0.0.1:7101", "127.0.0.1:7201")
	l.Need(&c.Shards, "shards", "RS_SHARDS", config.DefaultShards, "shard map id=dsn,...", true)
	l.Int(&c.MaxConnsPerShard, "max-conns-per-shard", "RS_RESULTS_MAX_CONNS", 64, "connection pool size per shard")
	if err := l.Parse(args); err != nil {
		return err
	}
	return c.Validate()
}

// Validate rejects impossible settings.
func (c *Config) Validate() error {
	if err := c.Server.Validate(); err != nil {
		return fmt.Errorf("results config: %w", err)
	}
	m, err := shard.Parse(c.Shards)
	if err != nil {
		return fmt.Errorf("results config: %w", err)
	}
	if len(m.Shards) < 2 {
		return errors.New("results config: the shard map needs at least two shards")
	}
	if c.MaxConnsPerShard < 1 {
		return fmt.Errorf("results config: max-conns-per-shard must be positive, got %d", c.MaxConnsPerShard)
	}
	return nil
}

func realMain(ctx context.Context, args []string) error {
	var cfg Config
	if err := cfg.load(args); err != nil {
		return err
	}
	log, err := logging.New(os.Stderr, "results", cfg.Server.LogLevel)
	if err != nil {
		return err
	}
	m, _ := shard.Parse(cfg.Shards)
	stores, closeAll, err := resultapi.OpenStores(ctx, log, m, cfg.MaxConnsPerShard, resultstore.Options{})
	if err != nil {
		return err
	}
	defer closeAll()

	srv, err := server.New(log, cfg.Server, server.WithAuth(auth.ResultPolicy))
	if err != nil {
		return err
	}
	fitnessv1.RegisterResultServiceServer(srv.GRPC(), resultapi.NewService(m, stores))
	return srv.Run(ctx, nil, shardProbes(stores))
}

// shardProbes report each shard on its own health name (a down shard fails
// only the requests for records it owns) and take the server's health down
// when no shard answers at all.
func shardProbes(stores []*resultstore.Store) []server.Probe {
	var probes []server.Probe
	for _, st := range stores {
		probes = append(probes, server.Probe{Name: st.ShardID(), Partial: true, Check: st.Ping})
	}
	probes = append(probes, server.Probe{Name: "shards", Check: func(ctx context.Context) error {
		var errs []error
		for _, st := range stores {
			err := st.Ping(ctx)
			if err == nil {
				return nil
			}
			errs = append(errs, err)
		}
		return fmt.Errorf("no shard answers: %w", errors.Join(errs...))
	}})
	return probes
}
