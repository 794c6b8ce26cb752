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
//     visible (-drain-timeout);
//
//   - paced: the same calls offered at a fixed rate for -paced-duration by
//     -paced-clients clients, each on its own schedule (one that falls
//     behind calls at once until it has caught up): -rate events/s (target:
//     commit-to-visible p99 <= 150 ms), then -share of the write ceiling, the
//     write path's rate measured alone just before (target p99 <= 400 ms);
//     a phase that commits under 95% of what it offered is NOT met.
//
// Every phase checks that every acknowledged version (warm-up included)
// became visible and that ClickHouse holds every record at its last
// acknowledged version, and prints ClickHouse inserts/s per table of the
// projection during its window (the part rate, from system.parts' block
// numbers), and where its commit-to-visible went: acknowledged -> SENT (the
// outbox's sent_time), SENT -> the consumer's insert began, the insert. It
// prints a table and SUMMARY lines (bench/run.sh collects them).
//
//	go run ./bench/e2e -duration 60s -clients 16
package main

import (
	"context"
	"errors"
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
	rate         int
	share        float64
	pacedDur     time.Duration
	pacedClients int
}

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 60*time.Second, "sustained end-to-end measuring time")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Second, "unmeasured load before the sustained window (and 1s before each ceiling)")
	flag.IntVar(&o.clients, "clients", 16, "concurrent clients, one gRPC connection each")
	flag.DurationVar(&o.ceilingDur, "ceiling-duration", 10*time.Second, "measuring time of each ceiling phase (each runs before and after the sustained run)")
	flag.IntVar(&o.relays, "relays", 1, "relay server instances")
	flag.DurationVar(&o.batchWait, "batch-wait", consumer.DefaultConfig().BatchWait, "consumer batch wait (--batch-wait of the consumer server)")
	flag.DurationVar(&o.drainTimeout, "drain-timeout", 2*time.Minute, "longest wait, after each phase, for every acknowledged version to be visible")
	flag.IntVar(&o.rate, "rate", 1000, "events/s offered in the first paced phase (target: commit->visible p99 <= 150ms)")
	flag.Float64Var(&o.share, "share", 0.8, "share of the write ceiling (the write path alone, measured before) offered in the second paced phase (target: p99 <= 400ms)")
	flag.DurationVar(&o.pacedDur, "paced-duration", 20*time.Second, "measuring time of each paced phase (0 skips them)")
	flag.IntVar(&o.pacedClients, "paced-clients", 32, "clients of the paced phases")
	flag.Parse()
	if o.clients < 1 || o.pacedClients < 1 || o.duration < 0 || o.relays < 1 || o.rate < 1 || o.share <= 0 {
		fmt.Fprintln(os.Stderr, "e2e: -clients, -paced-clients, -relays, -rate and -share must be positive and -duration >= 0")
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

// observer records when ClickHouse acknowledged each version's insert, and
// when the consumer began that insert (the attempt that succeeded).
type observer struct {
	mu      sync.Mutex
	visible map[key]time.Time
	ingest  map[key]int64 // unix ms
}

func (o *observer) applied(rows []chstore.Row, at time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range rows {
		k := key{r.DataID, r.Version}
		if _, ok := o.visible[k]; !ok {
			o.visible[k] = at
			o.ingest[k] = r.IngestMs
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
	acks      [][]ack // per client: the acknowledgements made while measuring
	all       [][]key // per client: every acknowledged version, warm-up included
	owned     [][]key // per client: its results and their current versions
	prefix    string  // of the request ids: the phase's own
}

func newClients(rpc []fitnessv1.ResultServiceClient, firstID int64) *clients {
	c := &clients{rpc: rpc, acks: make([][]ack, len(rpc)), all: make([][]key, len(rpc)), owned: make([][]key, len(rpc)), prefix: fmt.Sprintf("e2e-%d-", firstID)}
	c.nextID.Store(firstID)
	return c
}

// record creates a new result for client c.
func (cl *clients) record(ctx context.Context, c int) (key, error) {
	id := cl.nextID.Add(1)
	resp, err := cl.rpc[c].RecordResult(ctx, &fitnessv1.RecordResultRequest{
		RequestId: fmt.Sprintf("%s%d", cl.prefix, cl.seq.Add(1)), DataId: id, DetectId: detectID, UserId: int64(c + 1),
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
			RequestId: fmt.Sprintf("%s%d", cl.prefix, cl.seq.Add(1)), SchoolId: int64(c + 2), DataId: own[j].id,
			ExpectedVersion: own[j].version, Result: fmt.Sprintf("2.%02d", i%100), Unit: "m",
		})
		if err != nil {
			return fmt.Errorf("correcting result %d at version %d: %w", own[j].id, own[j].version, err)
		}
		k = key{own[j].id, resp.GetResult().GetVersion()}
		own[j] = k
	}
	at := time.Now()
	cl.all[c] = append(cl.all[c], k)
	if cl.measuring.Load() {
		cl.count.Add(1)
		cl.acks[c] = append(cl.acks[c], ack{k, at})
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
	for range max(o.clients, o.pacedClients) {
		conn, err := grpc.NewClient(resSvc.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()), benchkit.Operator())
		if err != nil {
			return err
		}
		defer conn.Close()
		rpc = append(rpc, fitnessv1.NewResultServiceClient(conn))
	}

	fmt.Printf("e2e on %s + Pulsar standalone + %s, %d cores shared with the other engineers' work: %d clients, ceilings %s each before and after, sustained %s after %s warm-up, paced phases %s at %d events/s and at %.0f%% of the write ceiling (%d clients), %d relay instance(s)\n",
		infratest.MySQLEngine(), infratest.ClickHouseEngine(), runtime.NumCPU(), o.clients, o.ceilingDur, o.duration, o.warmup, o.pacedDur, o.rate, 100*o.share, o.pacedClients, o.relays)

	cs := &ceilings{st: st, rpc: rpc[:o.clients], clients: o.clients, d: o.ceilingDur, warm: time.Second}
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

	obs, stopPipeline, err := startPipeline(ctx, log, st, o)
	if err != nil {
		return err
	}
	// The write ceiling of the paced phase: the write path alone, measured
	// in this run just before (CorrectResult over gRPC, relay and consumer
	// stopped, as bench/writepath's CorrectResult phase).
	ceiling := wpBefore
	phases := []phaseSpec{
		{name: "closed loop", clients: o.clients, d: o.duration, warm: o.warmup, firstID: 1},
		{name: fmt.Sprintf("paced %d events/s", o.rate), clients: o.pacedClients, rate: float64(o.rate), d: o.pacedDur, warm: 2 * time.Second,
			firstID: 100_000_000, target: 150 * time.Millisecond},
		{name: fmt.Sprintf("paced %.0f%% of the write ceiling", 100*o.share), clients: o.pacedClients, rate: o.share * ceiling, d: o.pacedDur, warm: 2 * time.Second,
			firstID: 200_000_000, target: 400 * time.Millisecond, ceiling: fmt.Sprintf("write path %.0f/s (this run, before)", ceiling)},
	}
	var results []phaseResult
	for _, ph := range phases {
		if ph.d <= 0 {
			continue
		}
		r, err := runPhase(ctx, st, rpc, obs, ph, o.drainTimeout)
		if err != nil {
			stopPipeline()
			return fmt.Errorf("%s: %w", ph.name, err)
		}
		results = append(results, r)
	}
	stopPipeline()

	rawAfter, err := cs.raw(ctx)
	if err != nil {
		return fmt.Errorf("raw ceiling: %w", err)
	}
	wpAfter, err := cs.writePath(ctx)
	if err != nil {
		return fmt.Errorf("write-path ceiling: %w", err)
	}
	raw, wp := (rawBefore+rawAfter)/2, (wpBefore+wpAfter)/2

	fmt.Printf("\nend to end, RecordResult 1 in 10, CorrectResult otherwise, %s + Pulsar standalone + %s, %d cores (loaded by other work: noisy)\n",
		infratest.MySQLEngine(), infratest.ClickHouseEngine(), runtime.NumCPU())
	fmt.Printf("%-40s %12s   %s\n", "phase", "commits/s", "")
	fmt.Printf("%-40s %12.0f   (%.0f before, %.0f after)\n", "raw transaction (ceiling)", raw, rawBefore, rawAfter)
	fmt.Printf("%-40s %12.0f   (%.0f before, %.0f after; the paced phase's ceiling is the one before)\n", "write path alone, CorrectResult", wp, wpBefore, wpAfter)
	for _, r := range results {
		offered := "as fast as answered"
		if r.spec.rate > 0 {
			offered = fmt.Sprintf("offered %.0f/s", r.spec.rate)
		}
		fmt.Printf("%-40s %12.0f   %s, %d clients, %d acknowledged calls\n", r.spec.name, r.rate, offered, r.spec.clients, r.n)
		fmt.Printf("%-40s commit -> visible p50 %s, p99 %s, max %s (%d visible before the client had the acknowledgement, counted as 0)\n", "", r.p50, r.p99, r.max, r.early)
		fmt.Printf("%-40s of which (p50 / p99): acknowledged -> SENT %s / %s, SENT -> consumer's insert began %s / %s (acknowledged -> insert %s / %s), the insert %s / %s\n", "",
			r.toSent[0], r.toSent[1], r.sentToInsert[0], r.sentToInsert[1], r.toInsert[0], r.toInsert[1], r.inInsert[0], r.inInsert[1])
		fmt.Printf("%-40s ClickHouse inserts/s per table (parts made): %s\n", "", r.partsText())
		fmt.Printf("%-40s backlog when the clients stopped: %d versions not yet visible; %s\n", "", r.backlog, r.drainText())
	}
	for _, r := range results {
		problems := r.problems()
		if r.spec.rate == 0 {
			ratioWP, ratioRaw := r.rate/wp, r.rate/raw
			fmt.Printf("closed loop: end to end = %.1f%% of the write path's own rate (target >= 80%%), %.1f%% of the raw transaction rate; commit->visible p99 %s (target <= 1s)\n",
				100*ratioWP, 100*ratioRaw, r.p99)
			summary("e2e", "sustained events/s vs write path", fmt.Sprintf("%.0f/s", r.rate), fmt.Sprintf("%.0f/s", wp), ratioWP, ">= 80%, every event applied",
				benchkit.Verdict(ratioWP >= 0.8, problems...))
			summary("e2e", "sustained events/s vs raw txn", fmt.Sprintf("%.0f/s", r.rate), fmt.Sprintf("%.0f/s", raw), ratioRaw, "-", "-")
			summary("e2e", "commit->visible p99, closed loop", r.p99.String(), "1s", float64(r.p99)/float64(time.Second), "<= 1s, every event applied",
				benchkit.Verdict(r.p99 <= time.Second, problems...))
			summary("e2e", "commit->visible p50 / max, closed loop", r.p50.String()+" / "+r.max.String(), "-", -1, "-", "-")
			continue
		}
		achieved := r.rate / r.spec.rate
		fmt.Printf("%s: commit->visible p99 %s (target <= %s), %.0f/s committed of %.0f/s offered; ClickHouse inserts/s %s\n",
			r.spec.name, r.p99, r.spec.target, r.rate, r.spec.rate, r.partsText())
		ceil := r.spec.ceiling
		if ceil == "" {
			ceil = "-"
		}
		summary("e2e", "commit->visible p99, "+r.spec.name, r.p99.String(), ceil, achieved,
			fmt.Sprintf("<= %s at >= 95%% of %.0f/s, every event applied", r.spec.target, r.spec.rate),
			benchkit.PacedVerdict(r.p99, r.spec.target, r.rate, r.spec.rate, problems...))
		summary("e2e", "ClickHouse inserts/s per table, "+r.spec.name, r.partsText(), "-", -1, "-", "-")
	}
	return nil
}

// summary prints one machine-readable line for bench/run.sh:
// SUMMARY|bench|figure|value|ceiling|ratio|target|verdict (a negative
// ratio: none).
func summary(bench, figure, value, ceiling string, ratio float64, target, verdict string) {
	r := "-"
	if ratio >= 0 {
		r = fmt.Sprintf("%.1f%%", 100*ratio)
	}
	benchkit.Summary(bench, figure, value, ceiling, r, target, verdict)
}

// startPipeline runs the relay instance(s) and the consumer on the stack;
// the observer sees every batch ClickHouse acknowledged.
func startPipeline(ctx context.Context, log *slog.Logger, st *benchkit.Stack, o options) (*observer, func(), error) {
	var stops []func()
	stopAll := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	for i := range o.relays {
		cfg, err := relaysvc.Load(st.Args("--control-dsn="+st.Control.DSN, "--pulsar-url="+infratest.PulsarURL(), "--topic="+st.Topic))
		if err != nil {
			stopAll()
			return nil, nil, err
		}
		svc, err := relaysvc.New(ctx, log, cfg)
		if err != nil {
			stopAll()
			return nil, nil, fmt.Errorf("relay instance %d: %w", i, err)
		}
		stop := benchkit.Serve(ctx, svc)
		stops = append(stops, func() {
			if err := stop(); err != nil {
				fmt.Fprintln(os.Stderr, "relay server:", err)
			}
		})
	}
	obs := &observer{visible: map[key]time.Time{}, ingest: map[key]int64{}}
	stopConsumer, err := benchkit.StartConsumer(ctx, log, st, o.batchWait, obs.applied)
	if err != nil {
		stopAll()
		return nil, nil, err
	}
	stops = append(stops, stopConsumer)
	return obs, stopAll, nil
}

// phaseSpec is one phase of load through the running pipeline: closed loop
// (rate 0: every client calls again as soon as it is answered) or paced
// (rate events/s offered over the clients, each on its own schedule; a
// client that falls behind calls at once until it has caught up).
type phaseSpec struct {
	name    string
	clients int
	rate    float64
	d, warm time.Duration
	firstID int64         // the phase's new results get data ids from here on
	target  time.Duration // the commit->visible p99 target of a paced phase
	ceiling string        // the ceiling the rate derives from, if any
}

type phaseResult struct {
	spec                 phaseSpec
	rate                 float64
	n, early, backlog    int
	p50, p99, max, drain time.Duration
	// toInsert is acknowledged -> the consumer's insert began (relay,
	// broker, batch cut, a wait for the writer), inInsert that insert's
	// own time, p50 and p99 each (a reference split of commit -> visible).
	toInsert, inInsert [2]time.Duration
	// toSent is acknowledged -> the relay marked the event SENT (the
	// outbox's sent_time), sentToInsert SENT -> the consumer's insert
	// began, p50 and p99 each.
	toSent, sentToInsert [2]time.Duration
	// notVisible is how many acknowledged versions (warm-up included) never
	// became visible within the drain timeout; wrongState how many records
	// ClickHouse holds at another version than the last acknowledged one.
	notVisible, wrongState, records int
	parts                           map[string]float64 // ClickHouse inserts/s per table in the window
}

// problems are the phase's correctness failures (for benchkit.Verdict).
func (r phaseResult) problems() []string {
	return []string{benchkit.Problem("acknowledged versions never visible", int64(r.notVisible), 0),
		benchkit.Problem(fmt.Sprintf("records of %d not at their last acknowledged version in ClickHouse", r.records), int64(r.wrongState), 0)}
}

func (r phaseResult) partsText() string {
	tables := make([]string, 0, len(r.parts))
	for t := range r.parts {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	out := ""
	for i, t := range tables {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s %.1f", t, r.parts[t])
	}
	if out == "" {
		return "none"
	}
	return out
}

func (r phaseResult) drainText() string {
	if r.notVisible > 0 {
		return fmt.Sprintf("%d never visible within the drain timeout", r.notVisible)
	}
	return fmt.Sprintf("all visible %s later", r.drain)
}

// blocks is, per table of the projection database, the highest block
// number of its parts: each insert makes a part with the next block number
// (one per partition; the projection's tables have none), and a merged part
// keeps the highest of its sources, so the difference of two readings is
// the number of inserts in between — the part rate ClickHouse merges away.
func blocks(ctx context.Context, st *benchkit.Stack) (map[string]int64, error) {
	rows, err := st.CH.Conn.Query(ctx, "SELECT table, toInt64(max(max_block_number)) FROM system.parts WHERE database = ? GROUP BY table", st.CH.Name)
	if err != nil {
		return nil, fmt.Errorf("reading the projection's parts: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var t string
		var b int64
		if err := rows.Scan(&t, &b); err != nil {
			return nil, err
		}
		if t != "schema_migrations" {
			out[t] = b
		}
	}
	return out, rows.Err()
}

func runPhase(ctx context.Context, st *benchkit.Stack, rpc []fitnessv1.ResultServiceClient, obs *observer, ph phaseSpec, drainTimeout time.Duration) (phaseResult, error) {
	res := phaseResult{spec: ph}
	cl := newClients(rpc[:ph.clients], ph.firstID)
	stop := make(chan struct{})
	op := func(c, i int) error { return cl.op(ctx, c, i) }
	if ph.rate > 0 {
		start := time.Now()
		interval := time.Duration(float64(time.Second) * float64(ph.clients) / ph.rate)
		op = func(c, i int) error {
			// Client c's call i is due at start + (i + c/clients) intervals.
			time.Sleep(time.Until(start.Add(time.Duration(i)*interval + time.Duration(c)*interval/time.Duration(ph.clients))))
			return cl.op(ctx, c, i)
		}
	}
	wait := benchkit.Drive(ph.clients, op, stop)
	time.Sleep(ph.warm)
	before, err := blocks(ctx, st)
	if err != nil {
		close(stop)
		_ = wait()
		return res, err
	}
	cl.measuring.Store(true)
	start := time.Now()
	time.Sleep(ph.d)
	cl.measuring.Store(false)
	elapsed := time.Since(start)
	after, err := blocks(ctx, st)
	close(stop)
	if werr := wait(); werr != nil {
		return res, werr
	}
	if err != nil {
		return res, err
	}
	stopped := time.Now()
	res.rate = float64(cl.count.Load()) / elapsed.Seconds()
	res.parts = map[string]float64{}
	for t, b := range after {
		res.parts[t] = float64(b-before[t]) / elapsed.Seconds()
	}

	var all []key
	last := map[int64]int64{}
	for _, ks := range cl.all {
		all = append(all, ks...)
		for _, k := range ks {
			last[k.id] = max(last[k.id], k.version)
		}
	}
	var measured []ack
	for _, a := range cl.acks {
		measured = append(measured, a...)
	}
	res.n = len(measured)
	pending := func(keys []key) int {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		n := 0
		for _, k := range keys {
			if _, ok := obs.visible[k]; !ok {
				n++
			}
		}
		return n
	}
	res.backlog = pending(all)
	deadline := stopped.Add(drainTimeout)
	for res.notVisible = pending(all); res.notVisible > 0 && time.Now().Before(deadline); res.notVisible = pending(all) {
		time.Sleep(20 * time.Millisecond)
	}
	res.drain = time.Since(stopped).Round(time.Millisecond)

	// Every record at its last acknowledged version in ClickHouse (the
	// versions table's highest version of each; a record never acknowledged
	// at a version higher than ClickHouse holds, nor lower).
	res.records = len(last)
	rows, err := st.CH.Conn.Query(ctx, "SELECT data_id, max(version) FROM fitness_result_versions WHERE detect_id = ? AND data_id >= ? AND data_id < ? GROUP BY data_id",
		int64(detectID), ph.firstID, ph.firstID+100_000_000)
	if err != nil {
		return res, fmt.Errorf("reading the phase's records from ClickHouse: %w", err)
	}
	seen := 0
	for rows.Next() {
		var id, v int64
		if err := rows.Scan(&id, &v); err != nil {
			rows.Close()
			return res, err
		}
		if want, ok := last[id]; ok {
			seen++
			if v != want {
				res.wrongState++
			}
		} else {
			res.wrongState++ // a record nobody acknowledged
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return res, err
	}
	res.wrongState += len(last) - seen

	sent, err := sentTimes(ctx, st, start.Add(-ph.warm-time.Minute))
	if err != nil {
		return res, err
	}
	lat := make([]time.Duration, 0, len(measured))
	var toInsert, inInsert, toSent, sentToInsert []time.Duration
	obs.mu.Lock()
	for _, a := range measured {
		at, ok := obs.visible[a.key]
		if !ok {
			continue // counted in notVisible
		}
		d := at.Sub(a.at)
		if d < 0 {
			d = 0
			res.early++
		}
		lat = append(lat, d)
		began := time.UnixMilli(obs.ingest[a.key])
		toInsert = append(toInsert, max(0, began.Sub(a.at)))
		inInsert = append(inInsert, max(0, at.Sub(began)))
		if s, ok := sent[a.key]; ok {
			toSent = append(toSent, max(0, s.Sub(a.at)))
			sentToInsert = append(sentToInsert, max(0, began.Sub(s)))
		}
	}
	obs.mu.Unlock()
	if len(lat) == 0 {
		return res, fmt.Errorf("no call was acknowledged and made visible in the %s window", ph.d)
	}
	res.p50, res.p99, res.max = quantiles(lat)
	res.toInsert[0], res.toInsert[1], _ = quantiles(toInsert)
	res.inInsert[0], res.inInsert[1], _ = quantiles(inInsert)
	if len(toSent) > 0 {
		res.toSent[0], res.toSent[1], _ = quantiles(toSent)
		res.sentToInsert[0], res.sentToInsert[1], _ = quantiles(sentToInsert)
	}
	return res, nil
}

// sentTimes reads when the relay marked each event SENT since since, from
// every shard's outbox.
func sentTimes(ctx context.Context, st *benchkit.Stack, since time.Time) (map[key]time.Time, error) {
	out := map[key]time.Time{}
	for i, db := range st.DBs {
		rows, err := db.QueryContext(ctx, "SELECT data_id, version, sent_time FROM outbox_event WHERE sent_time >= ?", since)
		if err != nil {
			return nil, fmt.Errorf("reading the sent times of shard %d: %w", i, err)
		}
		for rows.Next() {
			var k key
			var at time.Time
			if err := rows.Scan(&k.id, &k.version, &at); err != nil {
				rows.Close()
				return nil, fmt.Errorf("reading the sent times of shard %d: %w", i, err)
			}
			out[k] = at
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, fmt.Errorf("reading the sent times of shard %d: %w", i, err)
		}
	}
	return out, nil
}

// quantiles sorts ds and returns its p50, p99 and max, rounded to the
// millisecond.
func quantiles(ds []time.Duration) (p50, p99, maxD time.Duration) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)*99/100].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond)
}
