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
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"

	"github.com/resultsync/resultsync/bench/internal/benchkit"
	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/service/consumersvc"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/outboxtest"
)

func main() {
	events := flag.Int("events", 200000, "events in the pre-filled topic")
	passes := flag.Int("passes", 3, "passes over the topic, each measuring both ceilings and the consumer server")
	warmups := flag.Int("warmups", 3, "unmeasured ceiling B runs before the first pass (ClickHouse inserts run faster after idle until about 1M rows went in)")
	rate := flag.Int("rate", 1000, "steady stream rate, events/s")
	steady := flag.Duration("steady", 10*time.Second, "steady stream duration (0: no freshness pass)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of each consumer server pass (not the ceilings) to `file`.<pass>")
	cfg := consumer.DefaultConfig()
	flag.IntVar(&cfg.BatchSize, "batch-size", cfg.BatchSize, "events per batch at most (the consumer server's --batch-size; ceiling B's batches too)")
	flag.IntVar(&cfg.BatchBytes, "batch-bytes", cfg.BatchBytes, "payload bytes per batch at most (--batch-bytes; ceiling B's batches too)")
	flag.Parse()
	if err := run(context.Background(), cfg, *events, *passes, *warmups, *rate, *steady, *cpuprofile); err != nil {
		fmt.Fprintln(os.Stderr, "consumer bench:", err)
		os.Exit(1)
	}
}

var log = slog.New(slog.NewTextHandler(io.Discard, nil))

// passFigures are one pass's measurements, taken one after the other on
// the same topic so the machine's load hits them alike: each ceiling is
// measured just before and just after the consumer, and is the mean of the
// two (the load of a shared machine drifts within a pass).
type passFigures struct {
	acks, inserts [2]float64 // ceilings A and B before and after the consumer, events/s
	ack, insert   float64    // their means
	cons          serverFigures
}

func (p passFigures) lower() float64 { return min(p.ack, p.insert) }
func (p passFigures) ratio() float64 { return p.cons.rate / p.lower() }

func run(ctx context.Context, cfg consumer.Config, n, passes, warmups, rate int, steady time.Duration, cpuprofile string) error {
	if passes < 1 || n < 1 {
		return fmt.Errorf("need -events >= 1 and -passes >= 1")
	}
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
	var sizes []int // payload bytes per event
	var wg sync.WaitGroup
	var sendErr error
	var mu sync.Mutex
	// Subscriptions must exist before the messages, or the topic keeps nothing.
	subs := map[string]pulsar.Consumer{}
	for pass := range passes {
		for _, name := range []string{fmt.Sprintf("ack-only-%d-a", pass), fmt.Sprintf("ack-only-%d-b", pass), fmt.Sprintf("consumer-%d", pass)} {
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
	}
	for i := range n {
		ev := outboxtest.Event("shard-0", int64(1_000_000+i), now)
		rows = append(rows, consumer.ToRow(ev, 0, now.UnixMilli()))
		b, _ := proto.Marshal(ev)
		sizes = append(sizes, len(b))
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

	// Ceiling B inserts the rows in the batches the consumer cuts.
	batches := cutBatches(rows, sizes, cfg)
	// Ceiling B: raw batched inserts of the same rows, one after the
	// other, in the consumer's batches.
	ceilingB := func() (float64, error) {
		proj, drop, err := newDB()
		if err != nil {
			return 0, err
		}
		defer drop()
		start := time.Now()
		for _, b := range batches {
			if err := proj.Insert(ctx, b); err != nil {
				return 0, err
			}
		}
		return float64(n) / time.Since(start).Seconds(), nil
	}
	// Warm-up, not measured: inserts into a ClickHouse that was idle run
	// faster than the ones after the first million rows or so (measured:
	// 352,128/s in a first warm-up, 158,555/s just before the first pass's
	// consumer, 87,035/s after it, 80,000-90,000/s from then on), which
	// made the first pass's ceiling B an outlier.
	for i := range warmups {
		r, err := ceilingB()
		if err != nil {
			return err
		}
		fmt.Printf("warm-up %d: ceiling B %.0f/s (not measured)\n", i+1, r)
	}
	var figs []passFigures
	// What each stage costs the machine: CPU of this process (the ceilings
	// and the consumer server run in it), ClickHouse and the broker.
	meter := benchkit.CPUMeter{"this process": os.Getpid()}
	for _, name := range []string{"clickhouse", "pulsar"} {
		if pid, ok := benchkit.StackPID(name); ok {
			meter[name] = pid
		}
	}
	stages := map[string]*stageCPU{"A": {}, "B": {}, "consumer": {}}
	measured := func(stage string, f func() (float64, error)) (float64, error) {
		before := meter.Read()
		r, err := f()
		if err == nil {
			stages[stage].add(meter.Since(before), n)
		}
		return r, err
	}
	for pass := range passes {
		var f passFigures
		// Ceiling A: consume and acknowledge only.
		ceilingA := func(sub string) (float64, error) {
			start := time.Now()
			c := subs[sub]
			defer c.Close()
			for range n {
				m, err := c.Receive(ctx)
				if err != nil {
					return 0, err
				}
				if _, err := consumer.Decode(m.Payload()); err != nil {
					return 0, err
				}
				_ = c.Ack(m)
			}
			return float64(n) / time.Since(start).Seconds(), nil
		}
		if f.acks[0], err = measured("A", func() (float64, error) { return ceilingA(fmt.Sprintf("ack-only-%d-a", pass)) }); err != nil {
			return err
		}
		if f.inserts[0], err = measured("B", ceilingB); err != nil {
			return err
		}
		// The consumer server, built as services/consumer builds it, on the
		// pre-filled subscription; the time includes its start.
		prof := ""
		if cpuprofile != "" {
			prof = fmt.Sprintf("%s.%d", cpuprofile, pass+1)
		}
		before := meter.Read()
		if f.cons, err = serverPass(ctx, cfg, topic, fmt.Sprintf("consumer-%d", pass), n, prof); err != nil {
			return err
		}
		stages["consumer"].add(meter.Since(before), n)
		if f.inserts[1], err = measured("B", ceilingB); err != nil {
			return err
		}
		if f.acks[1], err = measured("A", func() (float64, error) { return ceilingA(fmt.Sprintf("ack-only-%d-b", pass)) }); err != nil {
			return err
		}
		f.ack, f.insert = (f.acks[0]+f.acks[1])/2, (f.inserts[0]+f.inserts[1])/2
		figs = append(figs, f)
		fmt.Printf("pass %d: ceiling A %.0f/s (%.0f before, %.0f after), ceiling B %.0f/s (%.0f before, %.0f after), consumer %.0f/s = %.1f%% of the lower ceiling\n",
			pass+1, f.ack, f.acks[0], f.acks[1], f.insert, f.inserts[0], f.inserts[1], f.cons.rate, 100*f.ratio())
	}

	fmt.Printf("\nconsumer: %d events, Pulsar standalone + ClickHouse 18.16 on one 2-core machine, batches of at most %d events / %d KiB / %s; "+
		"each pass measures ceiling A, ceiling B, the consumer server, ceiling B, ceiling A one after the other\n",
		n, cfg.BatchSize, cfg.BatchBytes>>10, cfg.BatchWait)
	fmt.Printf("%-4s %13s %9s %9s %7s | %10s %6s %7s %7s %7s %7s\n", "pass", "A consume+ack", "B insert", "consumer", "ratio",
		"from start", "ratio", "start", "insert", "rcv blk", "wr idle")
	for i, f := range figs {
		ms := func(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
		fmt.Printf("%-4d %13.0f %9.0f %9.0f %6.1f%% | %10.0f %5.1f%% %7s %7s %7s %7s\n", i+1, f.ack, f.insert, f.cons.rate, 100*f.ratio(),
			f.cons.fromStart, 100*f.cons.fromStart/f.lower(), ms(f.cons.startup), ms(f.cons.insert), ms(f.cons.recvBlocked), ms(f.cons.writerIdle))
	}
	ratios := make([]float64, len(figs))
	for i, f := range figs {
		ratios[i] = f.ratio()
	}
	lo, md, hi := spread(ratios)
	for _, l := range []string{
		"A: consume + ack, no write, on a subscription active since before the fill; B: raw inserts of the same rows, one",
		"after the other, in the consumer's batches (each ceiling the mean of its runs just before and just after the consumer);",
		"consumer: the server's throughput once running (the events after its first batch, from that batch applied to the last);",
		"from start: all events over the time since consumersvc.New; start: New to the first batch applied (it includes the",
		"broker's activeConsumerFailoverDelayTimeMillis, 1s by default, before it dispatches to a new active consumer of a",
		"Failover subscription); insert: time in ClickHouse inserts; rcv blk: receiving blocked because a cut batch was",
		"already waiting for the writer; wr idle: the writer waiting for a batch (the last three from the consumer's metrics)",
	} {
		fmt.Println("  " + l)
	}
	printStageCPU(stages, meter, figs)
	fmt.Printf("ratio consumer / lower ceiling over %d passes: min %.1f%%, median %.1f%%, max %.1f%%\n", len(figs), 100*lo, 100*md, 100*hi)
	verdict := benchkit.Verdict(lo >= 0.7)
	fmt.Printf("target: consumer >= 70%% of the lower ceiling in each pass: %s (worst pass %.1f%%)\n", verdict, 100*lo)
	var inserts float64
	var elapsed time.Duration
	for _, f := range figs {
		inserts, elapsed = inserts+f.cons.inserts, elapsed+f.cons.elapsed
	}
	fmt.Printf("ClickHouse inserts at full load: %.1f/s (%.0f inserts over the passes' %s)\n", inserts/elapsed.Seconds(), inserts, elapsed.Round(time.Millisecond))
	benchkit.Summary("consumer", fmt.Sprintf("consumer, worst of %d passes", len(figs)), fmt.Sprintf("%.1f%% of ceiling", 100*lo), "lower of A/B per pass",
		fmt.Sprintf("%.1f%%", 100*lo), ">= 70%", verdict)
	benchkit.Summary("consumer", "ClickHouse inserts/s at full load", fmt.Sprintf("%.1f/s", inserts/elapsed.Seconds()), "-", "-", "-", "-")

	if steady > 0 {
		p50, p99, total, err := freshness(ctx, client, newDB, rate, steady)
		if err != nil {
			return err
		}
		fmt.Printf("freshness at %d events/s for %s (%d events): commit -> visible p50 %s, p99 %s (target p99 < 1s)\n",
			rate, steady, total, p50.Round(time.Millisecond), p99.Round(time.Millisecond))
	}
	return nil
}

// cutBatches splits rows as the consumer cuts batches from a backlog: at
// most cfg.BatchSize events and cfg.BatchBytes of payload each (sizes holds
// each event's payload bytes).
func cutBatches(rows []chstore.Row, sizes []int, cfg consumer.Config) [][]chstore.Row {
	var out [][]chstore.Row
	var cur []chstore.Row
	bytes := 0
	for i, r := range rows {
		if len(cur) > 0 && bytes+sizes[i] > cfg.BatchBytes {
			out, cur, bytes = append(out, cur), nil, 0
		}
		cur = append(cur, r)
		bytes += sizes[i]
		if len(cur) >= cfg.BatchSize || bytes >= cfg.BatchBytes {
			out, cur, bytes = append(out, cur), nil, 0
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// stageCPU is the CPU a stage used over its runs, per process.
type stageCPU struct {
	cpu    map[string]time.Duration
	events int
}

func (s *stageCPU) add(used map[string]time.Duration, events int) {
	if s.cpu == nil {
		s.cpu = map[string]time.Duration{}
	}
	for k, v := range used {
		s.cpu[k] += v
	}
	s.events += events
}

// perEvent is the stage's CPU per event in process name (all processes:
// name "").
func (s *stageCPU) perEvent(name string) time.Duration {
	if s.events == 0 {
		return 0
	}
	var t time.Duration
	for k, v := range s.cpu {
		if name == "" || k == name {
			t += v
		}
	}
	return t / time.Duration(s.events)
}

// printStageCPU prints each stage's CPU per event and what the two ceilings'
// stages together allow on this machine's cores: a consumer runs both (it
// receives while it inserts), so where the stages share the cores the rate
// is bounded by cores / (A's + B's CPU per event), below the lower ceiling
// measured alone. A reference line: the verdict stays against the lower
// ceiling.
func printStageCPU(stages map[string]*stageCPU, meter benchkit.CPUMeter, figs []passFigures) {
	names := make([]string, 0, len(meter))
	for k := range meter {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Printf("CPU per event (us), over every run of the stage:\n%-9s", "stage")
	for _, k := range names {
		fmt.Printf(" %13s", k)
	}
	fmt.Printf(" %8s\n", "total")
	for _, st := range []string{"A", "B", "consumer"} {
		fmt.Printf("%-9s", st)
		for _, k := range names {
			fmt.Printf(" %13.1f", float64(stages[st].perEvent(k).Nanoseconds())/1e3)
		}
		fmt.Printf(" %8.1f\n", float64(stages[st].perEvent("").Nanoseconds())/1e3)
	}
	both := stages["A"].perEvent("") + stages["B"].perEvent("")
	if both <= 0 || len(figs) == 0 {
		return
	}
	bound := float64(runtime.NumCPU()) * float64(time.Second) / float64(both)
	var rate float64
	for _, f := range figs {
		rate += f.cons.rate
	}
	rate /= float64(len(figs))
	fmt.Printf("A + B together on %d cores: at most %.0f/s (cores / A's + B's CPU per event); the consumer's mean %.0f/s is %.1f%% of that, spending %.1f%% of A's + B's CPU per event\n",
		runtime.NumCPU(), bound, rate, 100*rate/bound, 100*float64(stages["consumer"].perEvent(""))/float64(both))
}

// serverFigures are what one consumer server pass measured.
type serverFigures struct {
	// rate is the throughput once running: the events applied after the
	// first batch over the time from the first batch applied to the last.
	rate        float64
	fromStart   float64       // n over the time from the server's start to the last event applied
	startup     time.Duration // server start to the first batch applied
	insert      time.Duration // time in ClickHouse inserts
	recvBlocked time.Duration // receiving blocked because the writer had a batch waiting
	writerIdle  time.Duration // writer waiting for a batch, after the first
	inserts     float64       // ClickHouse inserts (parts made per partition of the table)
	elapsed     time.Duration // server start to the last event applied
}

// serverPass runs the consumer server (consumersvc) on subscription until it
// applied n events, on a fresh projection database, with a CPU profile of
// the pass written to prof when set. The consumer's own time accounting is
// read from the server's metrics endpoint.
func serverPass(ctx context.Context, cc consumer.Config, topic, subscription string, n int, prof string) (serverFigures, error) {
	var f serverFigures
	d, drop, err := infratest.CreateClickHouseDatabase(ctx, "rs_bench", true)
	if err != nil {
		return f, err
	}
	defer drop()
	cfg, err := consumersvc.Load([]string{"--grpc-addr=127.0.0.1:0", "--http-addr=127.0.0.1:0", "--auth-tokens=" + auth.DevTokens,
		"--pulsar-url=" + infratest.PulsarURL(), "--topic=" + topic, "--subscription=" + subscription, "--dead-letter-topic=" + topic + "-DLQ",
		"--clickhouse-addr=" + infratest.ClickHouseAddr(), "--clickhouse-database=" + d.Name,
		fmt.Sprintf("--batch-size=%d", cc.BatchSize), fmt.Sprintf("--batch-bytes=%d", cc.BatchBytes)})
	if err != nil {
		return f, err
	}
	if prof != "" {
		pf, err := os.Create(prof)
		if err != nil {
			return f, err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return f, err
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	svc, err := consumersvc.New(ctx, log, cfg)
	if err != nil {
		return f, err
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- svc.Run(cctx) }()
	var first int64
	for applied := int64(0); applied < int64(n); applied = svc.Lag().Applied() {
		if applied > 0 && first == 0 {
			f.startup, first = time.Since(start), applied
		}
		select {
		case err := <-done:
			return f, fmt.Errorf("consumer server stopped: %w", err)
		case <-time.After(time.Millisecond):
		}
	}
	end := time.Since(start)
	if first == 0 { // everything in one batch
		f.startup, first = end, int64(n)
	}
	f.fromStart = float64(n) / end.Seconds()
	if first < int64(n) {
		f.rate = float64(int64(n)-first) / (end - f.startup).Seconds()
	} else {
		f.rate = f.fromStart
	}
	m, err := scrape(ctx, "http://"+svc.HTTPAddr()+"/metrics")
	if err != nil {
		return f, err
	}
	sec := func(name string) time.Duration { return time.Duration(m[name] * float64(time.Second)) }
	f.insert, f.recvBlocked, f.writerIdle = sec("consumer_insert_seconds_sum"), sec("consumer_receive_blocked_seconds_total"),
		sec("consumer_writer_idle_seconds_total")
	f.inserts, f.elapsed = m["consumer_insert_seconds_count"], end
	cancel()
	return f, <-done
}

// scrape reads the unlabelled samples of a Prometheus text endpoint.
func scrape(ctx context.Context, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping the consumer's metrics: %w", err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if x, err := strconv.ParseFloat(v, 64); err == nil {
			out[name] = x
		}
	}
	return out, sc.Err()
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
	cons, err := consumer.New(log, cfg, consumer.Deps{Sub: sub, Writer: proj, DLQ: nopDLQ{}, Hooks: consumer.Hooks{Applied: func(rows []chstore.Row, at time.Time) {
		mu.Lock()
		for _, r := range rows {
			lat = append(lat, at.Sub(time.UnixMilli(r.SourceCommitMs)))
		}
		mu.Unlock()
	}}})
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

// spread returns the minimum, median and maximum of v (not empty).
func spread(v []float64) (lo, md, hi float64) {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[0], s[len(s)/2], s[len(s)-1]
}
