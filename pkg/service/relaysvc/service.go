package relaysvc

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/delivery/outboxapi"
	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
	"github.com/resultsync/resultsync/pkg/platform/audit"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/idempotency"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/service/stores"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
)

// Service is an assembled relay server. Run it once; Run releases
// everything New acquired when it returns.
type Service struct {
	cfg Config
	log *slog.Logger
	srv *server.Server

	pools    *stores.Pools
	client   pulsar.Client // publishing
	probe    pulsar.Client // health lookups, with a short operation timeout
	pub      *relay.PulsarPublisher
	relay    *relay.Relay
	exporter *relay.StatsExporter
	purgers  []relay.Purger

	closeOnce sync.Once
}

// New assembles the relay server from cfg without contacting any dependency
// (pools connect lazily, the producer is created by the first publish), so
// it starts whatever state the shards and the broker are in, and health
// shows it. It binds the listeners: GRPCAddr and HTTPAddr are known when it
// returns. ctx is not retained: nothing in New waits.
func New(ctx context.Context, log *slog.Logger, cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Relay.StopTimeout == 0 {
		cfg.Relay.StopTimeout = cfg.Server.ShutdownGrace / 3
	}
	s := &Service{cfg: cfg, log: log}
	if err := s.assemble(); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *Service) assemble() error {
	cfg := s.cfg
	var err error
	if s.pools, err = stores.Open(cfg.Stores, need, stores.Options{Shard: mysqldb.Options{MaxOpen: cfg.MaxConnsPerShard},
		Control: mysqldb.Options{MaxOpen: 4}, Log: s.log}); err != nil {
		return fmt.Errorf("relay server: %w", err)
	}
	var repos []*outbox.Repo
	var outboxes []relay.Store
	var sources []relay.StatsSource
	for i, sh := range s.pools.Map.Shards {
		r := outbox.NewRepo(sh.ID, s.pools.Shards[i])
		repos, outboxes, sources, s.purgers = append(repos, r), append(outboxes, r), append(sources, r), append(s.purgers, r)
	}

	// Neither client connects before it is used.
	if s.client, err = pulsarbus.NewClient(s.log, pulsarbus.Options{URL: cfg.PulsarURL, Token: cfg.PulsarToken, TLS: cfg.PulsarTLS, OperationTimeout: cfg.PulsarOperationTimeout}); err != nil {
		return err
	}
	if s.probe, err = pulsarbus.NewClient(s.log.With("client", "health"), pulsarbus.Options{URL: cfg.PulsarURL, Token: cfg.PulsarToken, TLS: cfg.PulsarTLS,
		OperationTimeout: cfg.ProbeInterval, ConnectionTimeout: cfg.ProbeInterval}); err != nil {
		return err
	}
	s.pub = relay.NewLazyPulsarPublisher(s.client, relay.PulsarOptions{Topic: cfg.Topic,
		SendTimeout: cfg.Relay.PublishTimeout, ReconnectMax: cfg.ProbeInterval})

	if s.srv, err = server.New(s.log, cfg.Server, server.WithAuth(auth.OutboxPolicy)); err != nil {
		return err
	}
	fitnessv1.RegisterOutboxServiceServer(s.srv.GRPC(), outboxapi.New(repos, audit.New(s.pools.Control),
		outboxapi.WithIdempotency(idempotency.New(s.pools.Control, idempotency.Options{Log: s.log}))))
	if s.relay, err = relay.New(s.log, cfg.Relay, s.pub, outboxes, relay.NewMetrics(s.srv.Registry()), nil); err != nil {
		return err
	}
	s.exporter = relay.NewStatsExporter(s.log, s.srv.Registry(), sources)
	return s.srv.Listen()
}

// GRPCAddr is the bound gRPC address.
func (s *Service) GRPCAddr() string { return s.srv.GRPCAddr() }

// HTTPAddr is the bound metrics and /healthz address, or "".
func (s *Service) HTTPAddr() string { return s.srv.HTTPAddr() }

// ShardIDs names the shards, in shard map order.
func (s *Service) ShardIDs() []string { return s.pools.Map.IDs() }

// Run serves the OutboxService and runs the relay loop, the outbox gauges
// and the SENT purge as workers, with the dependency probes, under one
// supervisor (server.Run) until ctx ends; then it drains and returns nil
// within the shutdown grace, whatever the broker and the shards do. When
// every shard keeps refusing the relay (relay.ErrEveryShardRefused) it
// returns that error ("worker relay stopped: ..."), so the process exits
// non-zero. Transient outages never end Run: health shows them.
func (s *Service) Run(ctx context.Context) error {
	defer s.close()
	c := s.cfg
	s.log.Info("relay starting", "shards", s.pools.Map.IDs(), "topic", c.Topic, "batch", c.Relay.BatchSize,
		"lease", c.Relay.Lease.String(), "publish_timeout", c.Relay.PublishTimeout.String(), "max_attempts", c.Relay.MaxAttempts,
		"probe_interval", c.ProbeInterval.String(), "stop_timeout", c.Relay.StopTimeout.String())
	workers := []server.Worker{
		{Name: "relay", Run: s.relay.Run},
		{Name: "outbox-stats", Run: func(ctx context.Context) error { return s.exporter.Run(ctx, c.StatsInterval) }},
		{Name: "outbox-purge", Run: func(ctx context.Context) error {
			return relay.PurgeSent(ctx, s.log, s.purgers, c.Retention, c.PurgeInterval, c.PurgeBatch)
		}},
	}
	return s.srv.Run(ctx, workers, s.probes())
}

// probes are the health checks: each shard on its own name (partial), every
// shard together ("shards": none answers), the control database (partial)
// and the broker ("pulsar").
func (s *Service) probes() []server.Probe {
	iv := s.cfg.ProbeInterval
	var probes []server.Probe
	var shardChecks []func(context.Context) error
	for i, id := range s.pools.Map.IDs() {
		check := server.SharedCheck(iv, shardCheck(func() error { return s.relay.ShardErr(id) }, s.pools.Shards[i].PingContext))
		shardChecks = append(shardChecks, check)
		probes = append(probes, server.Probe{Name: id, Partial: true, Interval: iv, Check: check})
	}
	probes = append(probes,
		server.Probe{Name: "shards", Interval: iv, Check: anyOf(shardChecks)},
		server.Probe{Name: "control", Partial: true, Interval: iv, Check: server.SharedCheck(iv, s.pools.Control.PingContext)},
		server.Probe{Name: "pulsar", Interval: iv, Check: brokerCheck(server.SharedCheck(iv, s.lookup), s.pub.LastOutcome,
			s.cfg.Relay.PublishTimeout+2*iv, time.Now)},
	)
	return probes
}

// lookup asks the broker for the topic's partitions: one round trip on the
// binary protocol, bounded by the probe client's operation timeout (the
// client takes no context).
func (s *Service) lookup(context.Context) error {
	_, err := s.probe.TopicPartitions(s.cfg.Topic)
	return err
}

// close releases what New acquired, each step bounded: a dependency that
// hangs never keeps the process from exiting.
func (s *Service) close() {
	s.closeOnce.Do(func() {
		bound := max(s.cfg.Relay.StopTimeout, 100*time.Millisecond)
		if s.pub != nil {
			server.Within(bound, s.pub.Close)
		}
		for _, c := range []pulsar.Client{s.client, s.probe} {
			if c != nil {
				server.Within(bound, c.Close)
			}
		}
		if s.pools == nil {
			return
		}
		if err := s.pools.Close(); err != nil {
			s.log.Warn("closing database pools", "err", err)
		}
	})
}
