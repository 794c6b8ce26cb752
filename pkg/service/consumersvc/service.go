package consumersvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/apache/pulsar-client-go/pulsar"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/delivery/projectionapi"
	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/service/stores"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
)

// Service is an assembled consumer server. Run it once; Run releases
// everything New acquired when it returns.
type Service struct {
	cfg   Config
	log   *slog.Logger
	srv   *server.Server
	hooks consumer.Hooks // WithObserver
	pools *stores.Pools  // the ClickHouse pool
	ch    driver.Conn    // pools.CH
	proj  *chstore.Projection
	lag   *consumer.Lag

	client pulsar.Client // the subscription and the dead-letter producer
	probe  pulsar.Client // health lookups, with a short operation timeout

	mu         sync.Mutex
	dlq        *consumer.DLQ      // set by the worker; released by close
	sub        pulsar.Consumer    // set by the worker; released by close
	cons       *consumer.Consumer // set by the worker once subscribed
	connectErr error              // the last failed attempt to subscribe, until one succeeds

	closeOnce sync.Once
}

// Option adds to what New assembles.
type Option func(*Service)

// WithObserver lets hooks observe the consumer (the benchmarks and tests
// that measure freshness see every applied batch); hooks never change what
// it does.
func WithObserver(hooks consumer.Hooks) Option { return func(s *Service) { s.hooks = hooks } }

// New assembles the consumer server from cfg without contacting any
// dependency (the ClickHouse pool connects lazily, the subscription is made
// by Run's consumer worker), so it starts whatever state the broker and
// ClickHouse are in, and health shows it. It binds the listeners: GRPCAddr
// and HTTPAddr are known when it returns. ctx is not retained: nothing in
// New waits. services/consumer, the tests and the benchmarks all build the
// consumer here.
func New(ctx context.Context, log *slog.Logger, cfg Config, opts ...Option) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Consumer.Epoch = uint16(cfg.Epoch) // validated 0-65535
	s := &Service{cfg: cfg, log: log, lag: consumer.NewLag()}
	for _, o := range opts {
		o(s)
	}
	if err := s.assemble(); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *Service) assemble() error {
	cfg := s.cfg
	var err error
	// The driver's connection handshake does not watch the context: a
	// ClickHouse that accepts connections and answers nothing holds an
	// insert (and so the consumer worker's stop) for the dial timeout, so
	// it is a third of the grace (at most 5s).
	dial := min(5*time.Second, max(cfg.Server.ShutdownGrace/3, 500*time.Millisecond))
	if s.pools, err = stores.Open(cfg.Stores, stores.ClickHouse, stores.Options{CHDialTimeout: dial, Log: s.log}); err != nil {
		return err
	}
	s.ch = s.pools.CH
	s.proj = chstore.NewProjection(s.ch)
	// Neither client connects before it is used.
	if s.client, err = pulsarbus.NewClient(s.log, pulsarbus.Options{URL: cfg.PulsarURL, Token: cfg.PulsarToken, TLS: cfg.PulsarTLS, OperationTimeout: cfg.PulsarOperationTimeout}); err != nil {
		return err
	}
	if s.probe, err = pulsarbus.NewClient(s.log.With("client", "health"), pulsarbus.Options{URL: cfg.PulsarURL, Token: cfg.PulsarToken, TLS: cfg.PulsarTLS,
		OperationTimeout: cfg.ProbeInterval, ConnectionTimeout: cfg.ProbeInterval}); err != nil {
		return err
	}
	if s.srv, err = server.New(s.log, cfg.Server, server.WithAuth(auth.ProjectionPolicy)); err != nil {
		return err
	}
	fitnessv1.RegisterProjectionServiceServer(s.srv.GRPC(), projectionapi.New(s.lag, s.proj))
	return s.srv.Listen()
}

// GRPCAddr is the bound gRPC address.
func (s *Service) GRPCAddr() string { return s.srv.GRPCAddr() }

// HTTPAddr is the bound metrics and /healthz address, or "".
func (s *Service) HTTPAddr() string { return s.srv.HTTPAddr() }

// Lag is the consumer's lag tracker (what ProjectionService reports).
func (s *Service) Lag() *consumer.Lag { return s.lag }

// Run serves the ProjectionService and runs the consumer as the worker
// "consumer", with the probes "pulsar" and "clickhouse", under one
// supervisor (server.Run) until ctx ends; then it returns nil within the
// shutdown grace, whatever the broker and ClickHouse do. The worker
// subscribes (retrying while the broker is unreachable, each attempt
// bounded by the operation timeout and by ctx) and then consumes; when the
// consumer's epoch is retired it returns that error ("worker consumer
// stopped: ... transformation epoch retired"), so the process exits
// non-zero. Transient outages never end Run: health shows them.
func (s *Service) Run(ctx context.Context) error {
	defer s.close()
	c := s.cfg
	s.log.Info("consumer starting", "topic", c.Topic, "subscription", c.Subscription, "clickhouse", c.Stores.CHAddr+"/"+c.Stores.CHDatabase,
		"batch_size", c.Consumer.BatchSize, "batch_bytes", c.Consumer.BatchBytes, "batch_wait", c.Consumer.BatchWait.String(), "min_insert_gap", c.Consumer.MinInsertGap.String(), "epoch", c.Consumer.Epoch,
		"probe_interval", c.ProbeInterval.String())
	return s.srv.Run(ctx, []server.Worker{{Name: "consumer", Run: s.consume}}, s.probes())
}

// consume is the worker: it creates the dead-letter producer and the
// subscription, then consumes until ctx ends or the epoch is retired.
func (s *Service) consume(ctx context.Context) error {
	c := s.cfg
	dlq, err := untilCreated(ctx, s, "creating the dead-letter producer", func() (*consumer.DLQ, error) {
		return consumer.NewDLQ(s.client, c.DLQTopic, s.proj)
	}, (*consumer.DLQ).Close)
	if err != nil {
		return nil // ctx ended
	}
	s.mu.Lock()
	s.dlq = dlq
	s.mu.Unlock()
	sub, err := untilCreated(ctx, s, "subscribing", func() (pulsar.Consumer, error) {
		return consumer.Subscribe(s.client, c.Topic, c.Subscription)
	}, pulsar.Consumer.Close)
	if err != nil {
		return nil // ctx ended
	}
	s.mu.Lock()
	s.sub, s.connectErr = sub, nil
	s.mu.Unlock()
	cons, err := consumer.New(s.log, c.Consumer, consumer.Deps{Sub: sub, Writer: s.proj, DLQ: dlq, Lag: s.lag, Registry: s.srv.Registry(),
		Hooks: s.hooks})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.cons = cons
	s.mu.Unlock()
	s.log.Info("consumer subscribed", "topic", c.Topic, "subscription", c.Subscription)
	return cons.Run(ctx)
}

// untilCreated calls create until it succeeds or ctx ends (then it returns
// ctx's error), spacing failed attempts by up to the probe interval. Each
// attempt runs in the background: the Pulsar client's creations take no
// context and block up to its operation timeout while the broker is
// unreachable, so the caller stops waiting when ctx ends, and what an
// abandoned attempt creates later is released.
func untilCreated[T any](ctx context.Context, s *Service, what string, create func() (T, error), release func(T)) (T, error) {
	type result struct {
		v   T
		err error
	}
	wait := 100 * time.Millisecond
	for {
		done := make(chan result, 1)
		go func() {
			v, err := create()
			done <- result{v, err}
		}()
		var r result
		select {
		case r = <-done:
		case <-ctx.Done():
			go func() {
				if r := <-done; r.err == nil {
					release(r.v)
				}
			}()
			var zero T
			return zero, ctx.Err()
		}
		if r.err == nil {
			return r.v, nil
		}
		s.mu.Lock()
		s.connectErr = fmt.Errorf("%s: %w", what, r.err)
		s.mu.Unlock()
		s.log.Warn(what+" failed; retrying", "err", r.err, "retry_in", wait.String())
		select {
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, s.cfg.ProbeInterval)
	}
}

// writeErr fails while the consumer keeps failing to write a batch.
func (s *Service) writeErr() error {
	s.mu.Lock()
	cons := s.cons
	s.mu.Unlock()
	if cons == nil {
		return nil
	}
	if err := cons.WriteErr(); err != nil {
		return fmt.Errorf("the consumer cannot write its batch: %w", err)
	}
	return nil
}

var errNotSubscribed = errors.New("not subscribed yet")

// subscription fails until the worker has subscribed.
func (s *Service) subscription() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.sub != nil:
		return nil
	case s.connectErr != nil:
		return fmt.Errorf("%w: %w", errNotSubscribed, s.connectErr)
	default:
		return errNotSubscribed
	}
}

// probes are the health checks, both required: the broker ("pulsar": a
// lookup of the topic answered, and the subscription made) and ClickHouse
// ("clickhouse": a ping answered, and the latest batch written, or no
// attempt failing: a ClickHouse that answers pings but refuses the inserts
// does not let the consumer do its job).
func (s *Service) probes() []server.Probe {
	iv := s.cfg.ProbeInterval
	lookup := server.SharedCheck(iv, func(context.Context) error {
		// One round trip on the binary protocol, bounded by the probe
		// client's operation timeout (the client takes no context).
		_, err := s.probe.TopicPartitions(s.cfg.Topic)
		return err
	})
	ping := server.SharedCheck(iv, s.ch.Ping)
	return []server.Probe{
		{Name: "pulsar", Interval: iv, Check: func(ctx context.Context) error {
			if err := lookup(ctx); err != nil {
				return fmt.Errorf("broker lookup: %w", err)
			}
			return s.subscription()
		}},
		{Name: "clickhouse", Interval: iv, Check: func(ctx context.Context) error {
			if err := ping(ctx); err != nil {
				return fmt.Errorf("ClickHouse: %w", err)
			}
			return s.writeErr()
		}},
	}
}

// close releases what New and the worker acquired. The Pulsar resources
// are released together within a third of the shutdown grace: a broker that
// does not answer never holds the process.
func (s *Service) close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		sub, dlq := s.sub, s.dlq
		s.mu.Unlock()
		server.Within(max(s.cfg.Server.ShutdownGrace/3, 100*time.Millisecond), func() {
			if sub != nil {
				sub.Close()
			}
			if dlq != nil {
				dlq.Close()
			}
			for _, c := range []pulsar.Client{s.client, s.probe} {
				if c != nil {
					c.Close()
				}
			}
		})
		if s.pools != nil {
			if err := s.pools.Close(); err != nil {
				s.log.Warn("closing the ClickHouse pool", "err", err)
			}
		}
	})
}
