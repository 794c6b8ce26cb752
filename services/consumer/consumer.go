package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/auth"
	"github.com/resultsync/resultsync/pkg/chstore"
	"github.com/resultsync/resultsync/pkg/config"
	"github.com/resultsync/resultsync/pkg/consumer"
	"github.com/resultsync/resultsync/pkg/logging"
	"github.com/resultsync/resultsync/pkg/projectionapi"
	"github.com/resultsync/resultsync/pkg/pulsarbus"
	"github.com/resultsync/resultsync/pkg/server"
)

// Config is the consumer server's configuration.
type Config struct {
	Server       server.Config
	PulsarURL    string
	Topic        string
	Subscription string
	DLQTopic     string
	CHAddr       string
	CHDatabase   string
	Consumer     consumer.Config
	Epoch        int
}

func (c *Config) load(args []string) error {
	l := config.NewLoader("consumer")
	c.Server.Flags(l, "RS_CONSUMER", "127.0.0.1:7103", "127.0.0.1:7203")
	d := consumer.DefaultConfig()
	l.Need(&c.PulsarURL, "pulsar-url", "RS_PULSAR_URL", config.DefaultPulsarURL, "Pulsar broker URL", false)
	l.String(&c.Topic, "topic", "RS_TOPIC", config.DefaultTopic, "topic of FitnessResultChanged events")
	l.String(&c.Subscription, "subscription", "RS_CONSUMER_SUBSCRIPTION", "clickhouse-projection", "Failover subscription shared by the consumer instances")
	l.String(&c.DLQTopic, "dead-letter-topic", "RS_CONSUMER_DLQ_TOPIC", config.DefaultTopic+"-DLQ", "topic of events that can never be written")
	l.Need(&c.CHAddr, "clickhouse-addr", "RS_CH_ADDR", config.DefaultClickHouseAddr, "ClickHouse native address", false)
	l.String(&c.CHDatabase, "clickhouse-database", "RS_CH_DATABASE", config.DefaultClickHouseDatabase, "ClickHouse database")
	l.Int(&c.Consumer.BatchSize, "batch-size", "RS_CONSUMER_BATCH_SIZE", d.BatchSize, "events per insert at most")
	l.Duration(&c.Consumer.BatchWait, "batch-wait", "RS_CONSUMER_BATCH_WAIT", d.BatchWait, "longest wait before a partial batch is written")
	l.Duration(&c.Consumer.RetryBase, "retry-base", "RS_CONSUMER_RETRY_BASE", d.RetryBase, "first wait after a failed insert")
	l.Duration(&c.Consumer.RetryMax, "retry-max", "RS_CONSUMER_RETRY_MAX", d.RetryMax, "longest wait between insert attempts")
	l.Int(&c.Epoch, "epoch", "RS_CONSUMER_EPOCH", 0, "transformation epoch written with every row (bump when a mapping defect is fixed)")
	l.Duration(&c.Consumer.EpochCheck, "epoch-check", "RS_CONSUMER_EPOCH_CHECK", consumer.DefaultEpochCheck,
		"longest time a read epoch floor is trusted; an epoch below the floor stops the consumer")
	if err := l.Parse(args); err != nil {
		return err
	}
	return c.Validate()
}

// Validate rejects impossible settings.
func (c *Config) Validate() error {
	errs := []error{c.Server.Validate(), c.Consumer.Validate()}
	if c.Epoch < 0 || c.Epoch > 65535 {
		errs = append(errs, fmt.Errorf("epoch must be 0-65535, got %d", c.Epoch))
	}
	if c.Topic == "" || c.Subscription == "" || c.DLQTopic == "" || c.CHAddr == "" || c.CHDatabase == "" {
		errs = append(errs, errors.New("topic, subscription, dead-letter-topic, clickhouse-addr and clickhouse-database are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("consumer config: %w", err)
	}
	return nil
}

func realMain(ctx context.Context, args []string) error {
	var cfg Config
	if err := cfg.load(args); err != nil {
		return err
	}
	cfg.Consumer.Epoch = uint16(cfg.Epoch)
	log, err := logging.New(os.Stderr, "consumer", cfg.Server.LogLevel)
	if err != nil {
		return err
	}
	client, err := pulsarbus.NewClient(log, pulsarbus.Options{URL: cfg.PulsarURL})
	if err != nil {
		return err
	}
	defer client.Close()

	srv, err := server.New(log, cfg.Server, server.WithAuth(auth.ProjectionPolicy))
	if err != nil {
		return err
	}
	lag := consumer.NewLag()
	var proj *chstore.Projection // set once ClickHouse answers
	var projMu sync.Mutex
	fitnessv1.RegisterProjectionServiceServer(srv.GRPC(), projectionapi.New(lag, lazyLister{mu: &projMu, p: &proj}))
	if err := srv.Listen(); err != nil {
		return err
	}

	// A retired epoch is terminal: the server stops (health NOT_SERVING) and
	// the process exits non-zero, so a deployment still running a retired
	// transformation is visible instead of silently idle.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var retired error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := consume(ctx, log, client, cfg, lag, srv, &projMu, &proj); err != nil {
			log.Error("consumer stopped", "err", err)
			if errors.Is(err, consumer.ErrEpochRetired) {
				retired = err
				stop()
			}
		}
	}()
	err = srv.Serve(ctx)
	wg.Wait()
	if retired != nil {
		return retired
	}
	return err
}

// consume connects to ClickHouse and Pulsar (retrying while either is
// unreachable) and runs the consumer until ctx ends.
func consume(ctx context.Context, log *slog.Logger, client pulsar.Client, cfg Config, lag *consumer.Lag, srv *server.Server,
	mu *sync.Mutex, projOut **chstore.Projection) error {
	var proj *chstore.Projection
	var dlq *consumer.DLQ
	var cons pulsar.Consumer
	err := retry(ctx, log, "connecting to ClickHouse", func() error {
		conn, err := chstore.Open(ctx, chstore.Options{Addr: cfg.CHAddr, Database: cfg.CHDatabase})
		if err == nil {
			proj = chstore.NewProjection(conn)
		}
		return err
	})
	if err != nil {
		return nil
	}
	mu.Lock()
	*projOut = proj
	mu.Unlock()
	if err := retry(ctx, log, "creating the dead-letter producer", func() error {
		var err error
		dlq, err = consumer.NewDLQ(client, cfg.DLQTopic, proj)
		return err
	}); err != nil {
		return nil
	}
	defer dlq.Close()
	if err := retry(ctx, log, "subscribing", func() error {
		var err error
		cons, err = consumer.Subscribe(client, cfg.Topic, cfg.Subscription)
		return err
	}); err != nil {
		return nil
	}
	defer cons.Close()
	c, err := consumer.New(log, cfg.Consumer, cons, proj, dlq, lag, srv.Registry(), consumer.Hooks{})
	if err != nil {
		return err
	}
	log.Info("consumer started", "topic", cfg.Topic, "subscription", cfg.Subscription, "clickhouse", cfg.CHAddr+"/"+cfg.CHDatabase,
		"batch_size", cfg.Consumer.BatchSize, "batch_wait", cfg.Consumer.BatchWait, "epoch", cfg.Consumer.Epoch)
	return c.Run(ctx)
}

// retry runs f until it succeeds or ctx ends (then it returns ctx's error).
func retry(ctx context.Context, log *slog.Logger, what string, f func() error) error {
	wait := time.Second
	for {
		err := f()
		if err == nil {
			return nil
		}
		log.Error(what+" failed; retrying", "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// lazyLister answers UNAVAILABLE-style errors until ClickHouse is connected.
type lazyLister struct {
	mu *sync.Mutex
	p  **chstore.Projection
}

func (l lazyLister) DeadLetters(ctx context.Context, beforeMs int64, limit int) ([]chstore.DeadLetter, error) {
	l.mu.Lock()
	p := *l.p
	l.mu.Unlock()
	if p == nil {
		return nil, errors.New("ClickHouse is not connected yet")
	}
	return p.DeadLetters(ctx, beforeMs, limit)
}
