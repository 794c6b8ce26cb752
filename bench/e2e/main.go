// Command e2e measures the whole pipeline sustained end to end on the local
// MySQL (or MariaDB, RS_MYSQL_ENGINE), Pulsar and ClickHouse, in one run:
//
//   - setup: two fresh shards, a control database, a fresh topic and a fresh
//     projection; the results server (resultssvc.New, as services/results
//     builds it) and the relay server (relaysvc.New) run in this process, and
//     the projection consumer (pkg/delivery/consumer, wired as services/consumer wires
//     it, with a hook that sees when ClickHouse acknowledged each batch);
//
//   - ceilings, with the relay and the consumer stopped, each measured before
//     and after the sustained run and averaged (a shared machine's load
//     drifts within a run): the raw transaction (UPDATE result + INSERT outbox
//     row on direct connections, as bench/writepath) and the write path's own
//     rate (CorrectResult over gRPC), both at -clients clients;
//
//   - sustained: -clients clients, one gRPC connection each, call the results
//     server as fast as it answers for -duration (after -warmup): every tenth
//     call records a new result (RecordResult), the others correct the
//     client's own results (CorrectResult), while the relay publishes and the
//     consumer writes the projection. Committed events/s is the rate of
//     acknowledged calls; commit-to-visible is, for every call acknowledged
//     in the window, the time from the client receiving the acknowledgement
//     to ClickHouse acknowledging the consumer's insert of that version
//     (0 when the insert was acknowledged first). After the window the
//     clients stop and the run waits until every acknowledged version is
//     visible (-drain-timeout).
//
// It prints a table and SUMMARY lines (bench/run.sh collects them).
//
//	go run ./bench/e2e -duration 60s -clients 16
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/resultsync/resultsync/bench/internal/benchkit"
	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/service/relaysvc"
	"github.com/resultsync/resultsync/pkg/service/resultssvc"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// recordsPerClient is how many results each client cycles its corrections
// over (as bench/writepath).
const recordsPerClient = 8

// detectID is the campaign every result of the run belongs to.
const detectID = 10001

type options struct {
	duration     time.Duration
	warmup       time.Duration
	clients      int
	ceilingDur   time.Duration
	relays       int
	batchWait    time.Duration
	drainTimeout time.Duration
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "sustained end-to-end measuring time")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Second, "unmeasured load before the sustained window (and 1s before each ceiling)")
	flag.IntVar(&o.clients, "clients", 16, "concurrent clients, one gRPC connection each")
	flag.DurationVar(&o.ceilingDur, "ceiling-duration", 10*time.Second, "measuring time of each ceiling phase (each runs before and after the sustained run)")
	flag.IntVar(&o.relays, "relays", 1, "relay server instances")
	flag.DurationVar(&o.batchWait, "batch-wait", consumer.DefaultConfig().BatchWait, "consumer batch wait (--batch-wait of the consumer server)")
	flag.DurationVar(&o.drainTimeout, "drain-timeout", 2*time.Minute, "longest wait, after the window, for every acknowledged version to be visible")
	flag.Parse()
	if o.clients < 1 || o.duration <= 0 || o.relays < 1 {
		fmt.Fprintln(os.Stderr, "e2e: -clients and -relays must be positive and -duration > 0")
		os.Exit(2)
	}
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
}

// ---- the measurement ----

// key is one committed version.
type key struct{ id, version int64 }

// observer records when ClickHouse acknowledged each version's insert.
type observer struct {
	mu      sync.Mutex
	visible map[key]time.Time
}

func (o *observer) applied(rows []chstore.Row, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range rows {
		k := key{r.DataID, r.Version}
		if _, ok := o.visible[k]; !ok {
			o.visible[k] = at
		}
	}
}

// ack is one acknowledged call.
type ack struct {
	key
	at time.Time
}

// clients drive the results server: each owns its results (new ones from
// RecordResult, corrected by CorrectResult) and keeps the acknowledgements
// made while measuring is set.
type clients struct {
	rpc       []fitnessv1.ResultServiceClient
	seq       atomic.Int64 // request ids
	nextID    atomic.Int64 // data ids of new results
	measuring atomic.Bool
	count     atomic.Int64
	acks      [][]ack
	owned     [][]key // per client: its results and their current versions
}

func newClients(rpc []fitnessv1.ResultServiceClient, firstID int64) *clients {
	c := &clients{rpc: rpc, acks: make([][]ack, len(rpc)), owned: make([][]key, len(rpc))}
	c.nextID.Store(firstID)
	return c
}

// record creates a new result for client c.
func (cl *clients) record(ctx context.Context, c int) (key, error) {
	id := cl.nextID.Add(1)
	resp, err := cl.rpc[c].RecordResult(ctx, &fitnessv1.RecordResultRequest{
		RequestId: fmt.Sprintf("e2e-%d", cl.seq.Add(1)), DataId: id, DetectId: detectID, UserId: int64(c + 1),
		ProjectId: 3, SchoolId: int64(c + 2), Grade: 5, Result: "2.21", Unit: "m",
	})
	if err != nil {
		return key{}, fmt.Errorf("recording result %d: %w", id, err)
	}
	return key{id, resp.GetResult().GetVersion()}, nil
}

// op is call i of client c: every tenth a new result, the others a
// correction of one of the client's results.
func (cl *clients) op(ctx context.Context, c, i int) error {
	var k key
	var err error
	own := cl.owned[c]
	if i%10 == 0 || len(own) < recordsPerClient {
		if k, err = cl.record(ctx, c); err != nil {
			return err
		}
		if len(own) < recordsPerClient {
			cl.owned[c] = append(own, k)
		} else {
			own[i/10%recordsPerClient] = k
		}
	} else {
		j := i % recordsPerClient
		resp, err := cl.rpc[c].CorrectResult(ctx, &fitnessv1.CorrectResultRequest{
			RequestId: fmt.Sprintf("e2e-%d", cl.seq.Add(1)), SchoolId: int64(c + 2), DataId: own[j].id,
			ExpectedVersion: own[j].version, Result: fmt.Sprintf("2.%02d", i%100), Unit: "m",
		})
		if err != nil {
			return fmt.Errorf("correcting result %d at version %d: %w", own[j].id, own[j].version, err)
		}
		k = key{own[j].id, resp.GetResult().GetVersion()}
		own[j] = k
	}
	if cl.measuring.Load() {
		cl.count.Add(1)
		cl.acks[c] = append(cl.acks[c], ack{k, time.Now()})
	}
	return nil
}

// ---- the ceilings ----

type ceilings struct {
	st      *benchkit.Stack
	rpc     []fitnessv1.ResultServiceClient
	clients int
	d, warm time.Duration
	phase   int
}

// ceilingID is a data id of the ceiling phases, far from the sustained run's.
func ceilingID(phase, c, k int) int64 { return int64(1_000_000_000 + 1_000_000*phase + 1000*c + k) }

func (cs *ceilings) seed(ctx context.Context) (int, error) {
	cs.phase++
	for c := range cs.clients {
		for k := range recordsPerClient {
			id := ceilingID(cs.phase, c, k)
			if _, err := cs.st.DBs[cs.st.Map.Owner(id)].ExecContext(ctx, `INSERT INTO fitness_result
				(data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
				VALUES (?, ?, ?, 3, ?, 5, 2.21, 'm', 1, 0, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`, id, detectID, c+1, c+2); err != nil {
				return 0, fmt.Errorf("seeding the ceiling phase: %w", err)
			}
		}
	}
	return cs.phase, nil
}

// raw is the bare transaction on direct connections, as bench/writepath's raw phase.
func (cs *ceilings) raw(ctx context.Context) (float64, error) {
	p, err := cs.seed(ctx)
	if err != nil {
		return 0, err
	}
	return benchkit.Measure(cs.clients, cs.d, cs.warm, func(c, i int) error {
		id := ceilingID(p, c, i%recordsPerClient)
		return benchkit.RawTransaction(ctx, cs.st.DBs[cs.st.Map.Owner(id)], id, i)
	})
}

// writePath is CorrectResult over gRPC with the relay and the consumer stopped.
func (cs *ceilings) writePath(ctx context.Context) (float64, error) {
	p, err := cs.seed(ctx)
	if err != nil {
		return 0, err
	}
	versions := make([][]int64, cs.clients)
	for c := range versions {
		versions[c] = make([]int64, recordsPerClient)
		for k := range versions[c] {
			versions[c][k] = 1
		}
	}
	return benchkit.Measure(cs.clients, cs.d, cs.warm, func(c, i int) error {
		k := i % recordsPerClient
		_, err := cs.rpc[c].CorrectResult(ctx, &fitnessv1.CorrectResultRequest{
			RequestId: fmt.Sprintf("ceil%d-%d-%d", p, c, i), SchoolId: int64(c + 2), DataId: ceilingID(p, c, k),
			ExpectedVersion: versions[c][k], Result: fmt.Sprintf("2.%02d", i%100), Unit: "m",
		})
		if err == nil {
			versions[c][k]++
		}
		return err
	})
}

// ---- the run ----

func run(ctx context.Context, o options) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := benchkit.NewStack(ctx, "bench-e2e-", 64)
	if err != nil {
		return err
	}
	defer st.Close()

	resCfg, err := resultssvc.Load(st.Args("--max-conns-per-shard=64"))
	if err != nil {
		return err
	}
	resSvc, err := resultssvc.New(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), resCfg)
	if err != nil {
		return err
	}
	stopResults := benchkit.Serve(ctx, resSvc)
	defer func() {
		if err := stopResults(); err != nil {
			fmt.Fprintln(os.Stderr, "results server:", err)
		}
	}()
	var rpc []fitnessv1.ResultServiceClient
	for range o.clients {
		conn, err := grpc.NewClient(resSvc.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()), benchkit.Operator())
		if err != nil {
			return err
		}
		defer conn.Close()
		rpc = append(rpc, fitnessv1.NewResultServiceClient(conn))
	}

	fmt.Printf("e2e on %s + Pulsar standalone + %s, %d cores shared with the other engineers' work: %d clients, ceilings %s each before and after, sustained %s after %s warm-up, %d relay instance(s)\n",
		infratest.MySQLEngine(), infratest.ClickHouseEngine(), runtime.NumCPU(), o.clients, o.ceilingDur, o.duration, o.warmup, o.relays)

	cs := &ceilings{st: st, rpc: rpc, clients: o.clients, d: o.ceilingDur, warm: time.Second}
	rawBefore, err := cs.raw(ctx)
	if err != nil {
		return fmt.Errorf("raw ceiling: %w", err)
	}
	wpBefore, err := cs.writePath(ctx)
	if err != nil {
		return fmt.Errorf("write-path ceiling: %w", err)
	}
	fmt.Printf("before: raw transaction %.0f/s, write path %.0f/s\n", rawBefore, wpBefore)
	// The ceiling phases left NEW outbox rows (the raw phase's payloads are
	// not events) that the sustained run does not look at; mark them SENT so
	// that the relay starts on an empty backlog.
	for i, db := range st.DBs {
		if _, err := db.ExecContext(ctx, "UPDATE outbox_event SET status = 'SENT', sent_time = UTC_TIMESTAMP(3) WHERE status <> 'SENT'"); err != nil {
			return fmt.Errorf("clearing the ceiling phases' backlog on shard %d: %w", i, err)
		}
	}

	sus, err := sustained(ctx, log, st, rpc, o)
	if err != nil {
		return err
	}

	rawAfter, err := cs.raw(ctx)
	if err != nil {
		return fmt.Errorf("raw ceiling: %w", err)
	}
	wpAfter, err := cs.writePath(ctx)
	if err != nil {
		return fmt.Errorf("write-path ceiling: %w", err)
	}
	raw, wp := (rawBefore+rawAfter)/2, (wpBefore+wpAfter)/2

	fmt.Printf("\nsustained end to end, %d clients for %s (RecordResult 1 in 10, CorrectResult otherwise), %s + Pulsar standalone + %s, %d cores (loaded by other work: noisy)\n",
		o.clients, o.duration, infratest.MySQLEngine(), infratest.ClickHouseEngine(), runtime.NumCPU())
	fmt.Printf("%-40s %12s   %s\n", "phase", "commits/s", "")
	fmt.Printf("%-40s %12.0f   (%.0f before, %.0f after)\n", "raw transaction (ceiling)", raw, rawBefore, rawAfter)
	fmt.Printf("%-40s %12.0f   (%.0f before, %.0f after)\n", "write path alone, CorrectResult", wp, wpBefore, wpAfter)
	fmt.Printf("%-40s %12.0f   %d acknowledged calls\n", "end to end, relay + consumer running", sus.rate, sus.n)
	fmt.Printf("commit -> visible over %d versions: p50 %s, p99 %s, max %s (%d visible before the client had the acknowledgement, counted as 0)\n",
		sus.n, sus.p50, sus.p99, sus.max, sus.early)
	fmt.Printf("backlog when the clients stopped: %d versions not yet visible; all visible %s later\n", sus.backlog, sus.drain)
	ratioWP, ratioRaw := sus.rate/wp, sus.rate/raw
	fmt.Printf("end to end = %.1f%% of the write path's own rate (target >= 80%%), %.1f%% of the raw transaction rate; commit->visible p99 %s (target <= 1s, moonshot 250ms)\n",
		100*ratioWP, 100*ratioRaw, sus.p99)
	summary("e2e", "sustained events/s vs write path", fmt.Sprintf("%.0f/s", sus.rate), fmt.Sprintf("%.0f/s", wp), ratioWP, ">= 80%", met(ratioWP >= 0.8))
	summary("e2e", "sustained events/s vs raw txn", fmt.Sprintf("%.0f/s", sus.rate), fmt.Sprintf("%.0f/s", raw), ratioRaw, "-", "-")
	summary("e2e", "commit->visible p99", sus.p99.String(), "1s", float64(sus.p99)/float64(time.Second), "<= 1s (moonshot 250ms)", met(sus.p99 <= time.Second))
	summary("e2e", "commit->visible p50 / max", sus.p50.String()+" / "+sus.max.String(), "-", -1, "-", "-")
	return nil
}

// summary prints one machine-readable line for bench/run.sh:
// SUMMARY|bench|figure|value|ceiling|ratio|target|met (a negative ratio: none).
func summary(bench, figure, value, ceiling string, ratio float64, target, verdict string) {
	r := "-"
	if ratio >= 0 {
		r = fmt.Sprintf("%.1f%%", 100*ratio)
	}
	fmt.Printf("SUMMARY|%s|%s|%s|%s|%s|%s|%s\n", bench, figure, value, ceiling, r, target, verdict)
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

type sustainedResult struct {
	rate                 float64
	n, early, backlog    int
	p50, p99, max, drain time.Duration
}

func sustained(ctx context.Context, log *slog.Logger, st *benchkit.Stack, rpc []fitnessv1.ResultServiceClient, o options) (sustainedResult, error) {
	var res sustainedResult
	for i := range o.relays {
		cfg, err := relaysvc.Load(st.Args("--control-dsn="+st.Control.DSN, "--pulsar-url="+infratest.PulsarURL(), "--topic="+st.Topic))
		if err != nil {
			return res, err
		}
		svc, err := relaysvc.New(ctx, log, cfg)
		if err != nil {
			return res, fmt.Errorf("relay instance %d: %w", i, err)
		}
		stop := benchkit.Serve(ctx, svc)
		defer func() {
			if err := stop(); err != nil {
				fmt.Fprintln(os.Stderr, "relay server:", err)
			}
		}()
	}
	obs := &observer{visible: map[key]time.Time{}}
	stopConsumer, err := benchkit.StartConsumer(ctx, log, st, o.batchWait, obs.applied)
	if err != nil {
		return res, err
	}
	defer stopConsumer()

	cl := newClients(rpc, 1)
	stop := make(chan struct{})
	wait := benchkit.Drive(o.clients, func(c, i int) error { return cl.op(ctx, c, i) }, stop)
	time.Sleep(o.warmup)
	cl.measuring.Store(true)
	start := time.Now()
	time.Sleep(o.duration)
	cl.measuring.Store(false)
	elapsed := time.Since(start)
	close(stop)
	if err := wait(); err != nil {
		return res, fmt.Errorf("sustained run: %w", err)
	}
	stopped := time.Now()
	res.rate = float64(cl.count.Load()) / elapsed.Seconds()

	var all []ack
	for _, a := range cl.acks {
		all = append(all, a...)
	}
	res.n = len(all)
	pending := func() int {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		n := 0
		for _, a := range all {
			if _, ok := obs.visible[a.key]; !ok {
				n++
			}
		}
		return n
	}
	res.backlog = pending()
	deadline := stopped.Add(o.drainTimeout)
	for pending() > 0 {
		if time.Now().After(deadline) {
			return res, fmt.Errorf("%d of %d acknowledged versions still not visible %s after the clients stopped", pending(), len(all), o.drainTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	res.drain = time.Since(stopped).Round(time.Millisecond)

	lat := make([]time.Duration, 0, len(all))
	obs.mu.Lock()
	for _, a := range all {
		d := obs.visible[a.key].Sub(a.at)
		if d < 0 {
			d = 0
			res.early++
		}
		lat = append(lat, d)
	}
	obs.mu.Unlock()
	if len(lat) == 0 {
		return res, fmt.Errorf("no call was acknowledged in the %s window", o.duration)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	res.p50 = lat[len(lat)/2].Round(time.Millisecond)
	res.p99 = lat[len(lat)*99/100].Round(time.Millisecond)
	res.max = lat[len(lat)-1].Round(time.Millisecond)
	return res, nil
}
