// Command consumer measures the consumer against the local Pulsar and
// ClickHouse, in one run:
//
//   - ceiling A: consume and acknowledge a pre-filled topic without writing;
//
//   - ceiling B: raw batched clickhouse-go inserts of the same rows;
//
//   - consumer: the consumer server (consumersvc, as services/consumer
//     builds it) draining the same topic into ClickHouse;
//
//   - freshness: a steady stream committed to a MySQL shard outbox, relayed
//     and consumed: commit-to-visible (insert acknowledged, so visible to the
//     current-state query) p50/p99.
//
//     go run ./bench/consumer -events 200000 -rate 1000 -steady 10s
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"

	"github.com/resultsync/resultsync/pkg/auth"
	"github.com/resultsync/resultsync/pkg/chstore"
	"github.com/resultsync/resultsync/pkg/consumer"
	"github.com/resultsync/resultsync/pkg/infratest"
	"github.com/resultsync/resultsync/pkg/outbox"
	"github.com/resultsync/resultsync/pkg/outbox/outboxtest"
	"github.com/resultsync/resultsync/pkg/pulsarbus"
	"github.com/resultsync/resultsync/pkg/relay"
	"github.com/resultsync/resultsync/pkg/schema"
	"github.com/resultsync/resultsync/pkg/service/consumersvc"
)

func main() {
	events := flag.Int("events", 200000, "events in the pre-filled topic")
	rate := flag.Int("rate", 1000, "steady stream rate, events/s")
	steady := flag.Duration("steady", 10*time.Second, "steady stream duration")
	flag.Parse()
	if err := run(context.Background(), *events, *rate, *steady); err != nil {
		fmt.Fprintln(os.Stderr, "consumer bench:", err)
		os.Exit(1)
	}
}

var log = slog.New(slog.NewTextHandler(io.Discard, nil))

func run(ctx context.Context, n, rate int, steady time.Duration) error {
	client, err := pulsarbus.NewClient(log, pulsarbus.Options{URL: infratest.PulsarURL()})
	if err != nil {
		return err
	}
	defer client.Close()
	newDB := func() (*chstore.Projection, func(), error) {
		d, drop, err := infratest.CreateClickHouseDatabase(ctx, "rs_bench", true)
		if err != nil {
			return nil, nil, err
		}
		return chstore.NewProjection(d.Conn), drop, nil
	}

	// Pre-fill the topic.
	topic := pulsarbus.Topic("public", "default", "bench-consumer-"+infratest.Suffix())
	prod, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatchingMaxPublishDelay: time.Millisecond, MaxPendingMessages: 20000})
	if err != nil {
		return err
	}
	fmt.Printf("filling %s with %d events...\n", topic, n)
	now := time.Now()
	var rows []chstore.Row
	var wg sync.WaitGroup
	var sendErr error
	var mu sync.Mutex
	// Subscriptions must exist before the messages, or the topic keeps nothing.
	subs := map[string]pulsar.Consumer{}
	for _, name := range []string{"ack-only-0", "ack-only-1", "ack-only-2", "consumer-0", "consumer-1", "consumer-2"} {
		c, err := consumer.Subscribe(client, topic, name)
		if err != nil {
			return err
		}
		if strings.HasPrefix(name, "consumer-") {
			// The consumer server subscribes by itself; a consumer left
			// here would be the active one of the Failover subscription.
			c.Close()
			continue
		}
		subs[name] = c
	}
	for i := range n {
		ev := outboxtest.Event("shard-0", int64(1_000_000+i), now)
		rows = append(rows, consumer.ToRow(ev, 0, now.UnixMilli()))
		b, _ := proto.Marshal(ev)
		wg.Add(1)
		prod.SendAsync(ctx, &pulsar.ProducerMessage{Key: fmt.Sprint(ev.GetDataId()), Payload: b,
			Properties: map[string]string{"event_id": ev.GetEventId()}}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				mu.Lock()
				sendErr = err
				mu.Unlock()
			}
			wg.Done()
		})
	}
	wg.Wait()
	prod.Close()
	if sendErr != nil {
		return sendErr
	}
	// The dead-letter topic exists before the passes, as it does for a
	// server that ran before (creating a topic costs the broker a ledger).
	dlq, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic + "-DLQ"})
	if err != nil {
		return err
	}
	dlq.Close()

	// Each figure is the median of three passes over the same topic.
	var ackRates, insertRates, consRates []float64
	for pass := range 3 {
		// Ceiling A: consume and acknowledge only.
		start := time.Now()
		c := subs[fmt.Sprintf("ack-only-%d", pass)]
		for range n {
			m, err := c.Receive(ctx)
			if err != nil {
				return err
			}
			if _, err := consumer.Decode(m.Payload()); err != nil {
				return err
			}
			_ = c.Ack(m)
		}
		ackRates = append(ackRates, float64(n)/time.Since(start).Seconds())
		c.Close()

		// Ceiling B: raw batched inserts of the same rows, in the consumer's batch size.
		proj, drop, err := newDB()
		if err != nil {
			return err
		}
		start = time.Now()
		batch := consumer.DefaultConfig().BatchSize
		for i := 0; i < n; i += batch {
			if err := proj.Insert(ctx, rows[i:min(i+batch, n)]); err != nil {
				drop()
				return err
			}
		}
		insertRates = append(insertRates, float64(n)/time.Since(start).Seconds())
		drop()

		// The consumer server, built as services/consumer builds it, on the
		// pre-filled subscription; the time includes its start.
		rate, err := serverPass(ctx, topic, fmt.Sprintf("consumer-%d", pass), n)
		if err != nil {
			return err
		}
		consRates = append(consRates, rate)
	}
	ackRate, insertRate, consRate := med(ackRates), med(insertRates), med(consRates)

	p50, p99, total, err := freshness(ctx, client, newDB, rate, steady)
	if err != nil {
		return err
	}
	lower := min(ackRate, insertRate)
	fmt.Printf("\nconsumer: %d events, Pulsar standalone + ClickHouse 18.16 on one 2-core machine, batch %d, median of 3 passes\n", n, consumer.DefaultConfig().BatchSize)
	fmt.Printf("%-44s %12s\n", "phase", "events/s")
	fmt.Printf("%-44s %12.0f\n", "ceiling A: consume + ack, no write", ackRate)
	fmt.Printf("%-44s %12.0f\n", fmt.Sprintf("ceiling B: raw batched insert (%d rows)", consumer.DefaultConfig().BatchSize), insertRate)
	fmt.Printf("%-44s %12.0f\n", "consumer server: topic -> ClickHouse, ack after", consRate)
	fmt.Printf("consumer = %.1f%% of the lower ceiling (target >= 60%%)\n", 100*consRate/lower)
	fmt.Printf("freshness at %d events/s for %s (%d events): commit -> visible p50 %s, p99 %s (target p99 < 1s)\n",
		rate, steady, total, p50.Round(time.Millisecond), p99.Round(time.Millisecond))
	return nil
}

// serverPass runs the consumer server (consumersvc) on subscription until it
// applied n events, on a fresh projection database, and returns events/s.
func serverPass(ctx context.Context, topic, subscription string, n int) (float64, error) {
	d, drop, err := infratest.CreateClickHouseDatabase(ctx, "rs_bench", true)
	if err != nil {
		return 0, err
	}
	defer drop()
	cfg, err := consumersvc.Load([]string{"--grpc-addr=127.0.0.1:0", "--http-addr=", "--auth-tokens=" + auth.DevTokens,
		"--pulsar-url=" + infratest.PulsarURL(), "--topic=" + topic, "--subscription=" + subscription, "--dead-letter-topic=" + topic + "-DLQ",
		"--clickhouse-addr=" + infratest.ClickHouseAddr(), "--clickhouse-database=" + d.Name})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	svc, err := consumersvc.New(ctx, log, cfg)
	if err != nil {
		return 0, err
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(cctx) }()
	for svc.Lag().Applied() < int64(n) {
		select {
		case err := <-done:
			cancel()
			return 0, fmt.Errorf("consumer server stopped: %w", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	rate := float64(n) / time.Since(start).Seconds()
	cancel()
	return rate, <-done
}

type nopDLQ struct{}

func (nopDLQ) DeadLetter(context.Context, pulsar.Message, string) error { return nil }

// freshness commits events into a MySQL shard outbox at rate, relays and
// consumes them, and measures commit -> insert acknowledged. It assembles
// the relay loop and the consumer from their packages, not their servers:
// the consumer's Applied hook (it only observes) gives the time ClickHouse
// acknowledged each batch, which the server does not expose.
func freshness(ctx context.Context, client pulsar.Client, newDB func() (*chstore.Projection, func(), error), rate int, d time.Duration) (time.Duration, time.Duration, int, error) {
	shardDB, drop, err := infratest.CreateMySQLDatabase(ctx, "rs_bench", schema.Shard, 8)
	if err != nil {
		return 0, 0, 0, err
	}
	defer drop()
	db := shardDB.DB
	repo := outbox.NewRepo("shard-0", db)
	topic := pulsarbus.Topic("public", "default", "bench-fresh-"+infratest.Suffix())
	sub, err := consumer.Subscribe(client, topic, "projection")
	if err != nil {
		return 0, 0, 0, err
	}
	defer sub.Close()
	pub, err := relay.NewPulsarPublisher(client, topic, 5*time.Second)
	if err != nil {
		return 0, 0, 0, err
	}
	defer pub.Close()
	rl, err := relay.New(log, relay.DefaultConfig(), pub, []relay.Store{repo}, nil, nil)
	if err != nil {
		return 0, 0, 0, err
	}
	proj, drop, err := newDB()
	if err != nil {
		return 0, 0, 0, err
	}
	defer drop()
	var mu sync.Mutex
	var lat []time.Duration
	cfg := consumer.DefaultConfig()
	cfg.BatchWait = 50 * time.Millisecond
	cons, err := consumer.New(log, cfg, sub, proj, nopDLQ{}, nil, nil, consumer.Hooks{Applied: func(rows []chstore.Row, at time.Time) {
		mu.Lock()
		for _, r := range rows {
			lat = append(lat, at.Sub(time.UnixMilli(r.SourceCommitMs)))
		}
		mu.Unlock()
	}})
	if err != nil {
		return 0, 0, 0, err
	}
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = rl.Run(cctx) }()
	go func() { defer wg.Done(); _ = cons.Run(cctx) }()
	defer func() { cancel(); wg.Wait() }()

	// Warm-up: one event through the whole path before measuring.
	warm := time.Now().UTC().Truncate(time.Millisecond)
	if err := outbox.Write(ctx, db, outboxtest.Event("shard-0", 69_999_999, warm), warm); err != nil {
		return 0, 0, 0, err
	}
	for cons.Lag().Applied() < 1 {
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	lat = lat[:0]
	mu.Unlock()

	// Four writers, each committing rate/4 events per second, one
	// transaction per event (as the write path does).
	const writers = 4
	var total atomic.Int64
	var werr error
	var wmu sync.Mutex
	var ww sync.WaitGroup
	for w := range writers {
		ww.Add(1)
		go func() {
			defer ww.Done()
			interval := time.Second * writers / time.Duration(rate)
			next := time.Now()
			end := next.Add(d)
			for i := 0; time.Now().Before(end); i++ {
				now := time.Now().UTC().Truncate(time.Millisecond)
				ev := outboxtest.Event("shard-0", int64(70_000_000+w*10_000_000+i), now)
				if err := outbox.Write(ctx, db, ev, now); err != nil {
					wmu.Lock()
					werr = err
					wmu.Unlock()
					return
				}
				total.Add(1)
				next = next.Add(interval)
				if wait := time.Until(next); wait > 0 {
					time.Sleep(wait)
				}
			}
		}()
	}
	ww.Wait()
	if werr != nil {
		return 0, 0, 0, werr
	}
	for cons.Lag().Applied() < 1+total.Load() {
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[len(lat)/2], lat[len(lat)*99/100], int(total.Load()), nil
}

func med(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
