// Package scale runs the whole platform on three MySQL shards with relay and
// consumer instances added and removed while writes flow: nothing is lost,
// nothing stalls, and a reconciliation and a repair work across all three
// shards. It prints the figures of each phase (events committed and
// applied, commit-to-visible p50/p99/max, events per consumer instance).
//
// The phases last RS_SCALE_PHASE each (default 8s); the writers aim at
// RS_SCALE_RATE events/s (default 1000) and the test prints the rate they
// reached. Correctness is asserted, never the rates.
package scale

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
	"github.com/resultsync/resultsync/pkg/service/relaysvc"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/platformtest"
	"github.com/resultsync/resultsync/pkg/testkit/reconcileapitest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

const (
	shards     = 3
	partitions = 4
	school     = 8
	writers    = 16
)

var campaigns = []int64{61001, 61002, 61003}

func envDuration(key string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(key)); err == nil && v > 0 {
		return v
	}
	return def
}

func envInt(key string, def int) int {
	var n int
	if _, err := fmt.Sscan(os.Getenv(key), &n); err == nil && n > 0 {
		return n
	}
	return def
}

// applied records what the consumer instances wrote: every (data_id,
// version) once with its commit-to-visible delay, the duplicates, and the
// events per instance.
type applied struct {
	mu      sync.Mutex
	seen    map[[2]int64]bool
	samples []sample
	dups    int
	byInst  map[string]int
}

type sample struct {
	commit time.Time
	delay  time.Duration
}

func (a *applied) hook(inst string) func([]chstore.Row, time.Time) {
	return func(rows []chstore.Row, at time.Time) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.byInst[inst] += len(rows)
		for _, r := range rows {
			k := [2]int64{r.DataID, r.Version}
			if a.seen[k] {
				a.dups++
				continue
			}
			a.seen[k] = true
			commit := time.UnixMilli(r.SourceCommitMs)
			a.samples = append(a.samples, sample{commit: commit, delay: at.Sub(commit)})
		}
	}
}

// window returns the count and the p50, p99 and max delay of the events
// committed in [from, to).
func (a *applied) window(from, to time.Time) (int, time.Duration, time.Duration, time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var d []time.Duration
	for _, s := range a.samples {
		if !s.commit.Before(from) && s.commit.Before(to) {
			d = append(d, s.delay)
		}
	}
	if len(d) == 0 {
		return 0, 0, 0, 0
	}
	slices.Sort(d)
	return len(d), d[len(d)/2], d[min(len(d)-1, len(d)*99/100)], d[len(d)-1]
}

// startConsumer runs one more consumer instance (platformtest.RunConsumer)
// whose batches a sees under name.
func startConsumer(t *testing.T, p *platformtest.Platform, a *applied, name string) (stop func()) {
	t.Helper()
	return p.RunConsumer(consumer.Hooks{Applied: a.hook(name)}, "--batch-wait=50ms")
}

// startRelay runs one more relay server on the platform's shards and topic.
func startRelay(t *testing.T, p *platformtest.Platform, name string) (stop func()) {
	t.Helper()
	_, stop = platformtest.ServeStoppable(t, name, func(ctx context.Context) (servertest.Runner, error) {
		cfg, err := relaysvc.Load(p.Args("--control-dsn="+p.Control.DSN, "--pulsar-url="+infratest.PulsarURL(), "--topic="+p.Topic,
			"--poll-interval=20ms"))
		if err != nil {
			return nil, err
		}
		return relaysvc.New(ctx, p.Log, cfg)
	})
	return stop
}

// phaseFig is one phase: its time and the events produced during it.
type phaseFig struct {
	name     string
	from, to time.Time
	events   int64
}

// runPhase lets a phase run for d and counts what counter gained.
func runPhase(name string, d time.Duration, counter *atomic.Int64) phaseFig {
	from, n0 := time.Now(), counter.Load()
	time.Sleep(d)
	return phaseFig{name: name, from: from, to: time.Now(), events: counter.Load() - n0}
}

// state is what the writers know was committed: per record, the last
// acknowledged version and result.
type state struct {
	mu      sync.Mutex
	records map[int64]acked
	writes  atomic.Int64
}

type acked struct {
	detect  int64
	version int64
	result  string
}

// write runs a writer until stop: it records new results and corrects its
// own records (so the versions it expects are exact), within lim.
func write(ctx context.Context, p *platformtest.Platform, st *state, lim *rate.Limiter, w int, stop <-chan struct{}) error {
	rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
	var mine []int64
	next := int64(w+1) * 10_000_000
	for n := 0; ; n++ {
		select {
		case <-stop:
			return nil
		default:
		}
		if err := lim.Wait(ctx); err != nil {
			return err
		}
		res := fmt.Sprintf("%d.%02d", 1+rng.IntN(2), rng.IntN(100)) // a standing long jump (project 3), in metres
		if len(mine) < 20 || rng.IntN(3) == 0 {
			next++
			id, detect := next, campaigns[rng.IntN(len(campaigns))]
			r, err := p.Results.RecordResult(platformtest.Operator(), &fitnessv1.RecordResultRequest{RequestId: fmt.Sprintf("scale-%d", id),
				DataId: id, DetectId: detect, UserId: 41, ProjectId: 3, SchoolId: school, Grade: 5, Result: res, Unit: "m"})
			if err != nil {
				return fmt.Errorf("recording %d: %w", id, err)
			}
			st.mu.Lock()
			st.records[id] = acked{detect: detect, version: r.GetResult().GetVersion(), result: r.GetResult().GetResult()}
			st.mu.Unlock()
			mine = append(mine, id)
		} else {
			id := mine[rng.IntN(len(mine))]
			st.mu.Lock()
			cur := st.records[id]
			st.mu.Unlock()
			r, err := p.Results.CorrectResult(platformtest.Operator(), &fitnessv1.CorrectResultRequest{RequestId: fmt.Sprintf("scale-%d-v%d", id, cur.version+1),
				SchoolId: school, DataId: id, ExpectedVersion: cur.version, Result: res, Unit: "m", Reason: "re-measured"})
			if err != nil {
				return fmt.Errorf("correcting %d at v%d: %w", id, cur.version, err)
			}
			st.mu.Lock()
			st.records[id] = acked{detect: cur.detect, version: r.GetResult().GetVersion(), result: r.GetResult().GetResult()}
			st.mu.Unlock()
		}
		st.writes.Add(1)
	}
}

// TestScaleOutUnderLoad: three shards, a topic of four partitions; writes
// flow at RS_SCALE_RATE events/s through ResultService while the platform
// goes from 1 relay and 1 consumer to 3 and 3, then back to 1 and 1 (the
// first consumer stopped, so its partitions move). Afterwards every record's
// last acknowledged version is the current state in ClickHouse, record by
// record, and every (data_id, version) committed was applied.
func TestScaleOutUnderLoad(t *testing.T) {
	p := platformtest.NewWith(t, platformtest.Options{Shards: shards, Partitions: partitions, NoConsumer: true})
	phase := envDuration("RS_SCALE_PHASE", 8*time.Second)
	target := envInt("RS_SCALE_RATE", 1000)
	a := &applied{seen: map[[2]int64]bool{}, byInst: map[string]int{}}
	st := &state{records: map[int64]acked{}}

	consumers := map[string]func(){"consumer-1": startConsumer(t, p, a, "consumer-1")}
	relays := map[string]func(){}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lim := rate.NewLimiter(rate.Limit(target), max(1, target/50))
	stopWriting := make(chan struct{})
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() { errs <- write(ctx, p, st, lim, w, stopWriting) })
	}

	var figs []phaseFig
	run := func(name string) { figs = append(figs, runPhase(name, phase, &st.writes)) }
	run("1 relay, 1 consumer")
	for _, n := range []string{"consumer-2", "consumer-3"} {
		consumers[n] = startConsumer(t, p, a, n)
	}
	for _, n := range []string{"relay-2", "relay-3"} {
		relays[n] = startRelay(t, p, n)
	}
	run("3 relays, 3 consumers")
	// Back to one of each: the first consumer (active on some partitions
	// since the start) and a second one stop; the third takes over.
	for _, n := range []string{"consumer-1", "consumer-2"} {
		consumers[n]()
	}
	for _, stop := range relays {
		stop()
	}
	run("1 relay, 1 consumer (the third)")
	close(stopWriting)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("writer: %v", err)
		}
	}
	lastWrite := time.Now()

	// Convergence: every record's last acknowledged version is the current
	// state in ClickHouse.
	st.mu.Lock()
	want := maps.Clone(st.records)
	st.mu.Unlock()
	var got map[int64]platformtest.Current
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got = currentStates(t, p)
		if len(diff(want, got)) == 0 {
			break
		}
		if time.Now().After(deadline) {
			d := diff(want, got)
			t.Fatalf("%d of %d records differ in ClickHouse 2 minutes after the last write, e.g. %v", len(d), len(want), d[:min(len(d), 5)])
		}
		time.Sleep(200 * time.Millisecond)
	}
	converged := time.Since(lastWrite)
	perShard := make([]int, shards)
	var versions int64
	for id, w := range want {
		perShard[p.Shards.Owner(id)]++
		versions += w.version
	}
	for i, n := range perShard {
		if n == 0 {
			t.Errorf("no record landed on shard %d", i)
		}
	}
	a.mu.Lock()
	appliedVersions, dups := len(a.seen), a.dups
	byInst := fmt.Sprint(a.byInst)
	a.mu.Unlock()
	if int64(appliedVersions) < versions {
		t.Errorf("%d (data_id, version) pairs applied, %d committed", appliedVersions, versions)
	}

	t.Logf("%d shards %v, %d partitions, %d writers aiming at %d events/s, phases of %s", shards, perShard, partitions, writers, target, phase)
	for _, f := range figs {
		n, p50, p99, mx := a.window(f.from, f.to)
		t.Logf("%-32s committed %5d (%4.0f events/s), applied %5d, commit-to-visible p50 %s p99 %s max %s",
			f.name, f.events, float64(f.events)/f.to.Sub(f.from).Seconds(), n, p50.Round(time.Millisecond), p99.Round(time.Millisecond), mx.Round(time.Millisecond))
	}
	t.Logf("records %d, versions committed %d, applied %d (+%d duplicates delivered), per consumer instance %s; converged %s after the last write",
		len(want), versions, appliedVersions, dups, byInst, converged.Round(time.Millisecond))

	reconcileAndRepairAcrossShards(t, p, want)
}

// currentStates reads the current state of every record of the campaigns
// from ClickHouse (FINAL, as readers see it).
func currentStates(t *testing.T, p *platformtest.Platform) map[int64]platformtest.Current {
	t.Helper()
	rows, err := p.CH.Conn.Query(context.Background(),
		"SELECT data_id, version, toInt64(result * 1000), is_deleted FROM fitness_result_versions FINAL WHERE detect_id IN (?, ?, ?)",
		campaigns[0], campaigns[1], campaigns[2])
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]platformtest.Current{}
	for rows.Next() {
		var id, v, milli int64
		var del uint8
		if err := rows.Scan(&id, &v, &milli, &del); err != nil {
			t.Fatal(err)
		}
		out[id] = platformtest.Current{Version: v, Milli: milli, Deleted: del == 1}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// diff lists the records whose ClickHouse state is not the acknowledged one.
func diff(want map[int64]acked, got map[int64]platformtest.Current) []string {
	var out []string
	for id, w := range want {
		g, ok := got[id]
		if !ok || g.Version != w.version || g.Milli != toMilli(w.result) || g.Deleted {
			out = append(out, fmt.Sprintf("%d: want v%d %s, ClickHouse %+v (present %v)", id, w.version, w.result, g, ok))
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			out = append(out, fmt.Sprintf("%d: in ClickHouse, never written", id))
		}
	}
	return out
}

// toMilli is "2.31" as 2310.
func toMilli(s string) int64 {
	var whole, frac int64
	var fs string
	if _, err := fmt.Sscanf(s, "%d.%s", &whole, &fs); err != nil {
		return whole * 1000
	}
	for len(fs) < 3 {
		fs += "0"
	}
	_, _ = fmt.Sscanf(fs[:3], "%d", &frac)
	return whole*1000 + frac
}

// reconcileAndRepairAcrossShards removes one record of each shard from the
// projection (a lost delivery), then a CONTENT reconciliation of the
// campaign finds exactly those three, one per shard; their repair ends
// VERIFIED and a second reconciliation is clean.
func reconcileAndRepairAcrossShards(t *testing.T, p *platformtest.Platform, want map[int64]acked) {
	t.Helper()
	detect := campaigns[0]
	lost := map[int64]int{} // data_id -> shard index
	taken := map[int]bool{}
	ids := slices.Sorted(maps.Keys(want))
	for _, id := range ids {
		if s := p.Shards.Owner(id); want[id].detect == detect && !taken[s] {
			lost[id], taken[s] = s, true
		}
	}
	if len(lost) != shards {
		t.Fatalf("campaign %d has records on %d of %d shards", detect, len(lost), shards)
	}
	for id := range lost {
		if _, err := p.Proj.RemoveAbove(context.Background(), detect, id, 0); err != nil {
			t.Fatal(err)
		}
		p.WaitFor(fmt.Sprintf("record %d gone from the projection", id), 30*time.Second, func() bool { return p.CurrentOf(detect, id).Version == 0 })
	}

	run, found := reconcileRun(t, p, detect)
	got := map[int64]int{}
	for _, d := range found {
		if d.GetClass() != fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_MISSING_IN_TARGET {
			t.Errorf("discrepancy %s of %d; want only MISSING_IN_TARGET", d.GetClass(), d.GetDataId())
		}
		got[d.GetDataId()] = p.Shards.Owner(d.GetDataId())
	}
	if !maps.Equal(got, lost) {
		t.Fatalf("the run found %v (data_id: shard), want %v", got, lost)
	}

	created, err := p.Repair.CreateRepair(platformtest.Operator(), &fitnessv1.CreateRepairRequest{RunId: run, Reason: "lost deliveries", RequestId: "scale-" + run})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range created.GetRepairs() {
		p.WaitFor("repair "+r.GetRepairId()+" VERIFIED", 2*time.Minute, func() bool {
			g, err := p.Repair.GetRepair(platformtest.Viewer(), &fitnessv1.GetRepairRequest{RepairId: r.GetRepairId()})
			if err != nil {
				t.Fatal(err)
			}
			switch g.GetRepair().GetState() {
			case fitnessv1.RepairState_REPAIR_STATE_FAILED, fitnessv1.RepairState_REPAIR_STATE_CANCELLED:
				t.Fatalf("repair %s ended %s: %s", r.GetRepairId(), g.GetRepair().GetState(), g.GetRepair().GetMessage())
			}
			return g.GetRepair().GetState() == fitnessv1.RepairState_REPAIR_STATE_VERIFIED
		})
	}
	for id := range lost {
		if c := p.CurrentOf(detect, id); c.Version != want[id].version {
			t.Errorf("record %d after the repair: %+v, want version %d", id, c, want[id].version)
		}
	}
	if _, again := reconcileRun(t, p, detect); len(again) != 0 {
		t.Errorf("after the repair: %d discrepancies", len(again))
	}
	t.Logf("reconciliation over %d shards found the %d lost records (one per shard) and their repair is VERIFIED; the next run is clean", shards, len(lost))
}

// reconcileRun runs a CONTENT reconciliation of a campaign to its end and
// returns its id and discrepancies.
func reconcileRun(t *testing.T, p *platformtest.Platform, detect int64) (string, []*fitnessv1.Discrepancy) {
	t.Helper()
	id := reconcileapitest.Start(t, p.Reconcile, platformtest.Operator, &fitnessv1.ReconcileScope{DetectId: detect},
		fitnessv1.ReconcileDepth_RECONCILE_DEPTH_CONTENT)
	run := reconcileapitest.Wait(t, p.Reconcile, platformtest.Viewer, id, 2*time.Minute)
	if run.GetState() != fitnessv1.RunState_RUN_STATE_SUCCEEDED {
		t.Fatalf("run %s ended %s: %s", id, run.GetState(), run.GetErrorMessage())
	}
	return id, reconcileapitest.Discrepancies(t, p.Reconcile, platformtest.Viewer, id)
}

// TestConsumersScaleOneThreeOneAt1000PerSecond: events published to a topic
// of four partitions at RS_SCALE_BROKER_RATE events/s (default 1,000; the
// relay's key, properties and bytes, as a relay at that rate would) while
// consumers go 1 → 3 → 1 (the first one stopped, so its partitions move).
// Every event is applied: each record's newest version is its current state
// in ClickHouse, record by record; commit-to-visible p50/p99/max are printed
// per phase. The write path of this machine cannot commit 1,000 events/s
// (TestScaleOutUnderLoad prints what it reaches), hence the broker-level
// load.
func TestConsumersScaleOneThreeOneAt1000PerSecond(t *testing.T) {
	p := platformtest.NewWith(t, platformtest.Options{Shards: 2, Partitions: partitions, NoConsumer: true})
	phase := envDuration("RS_SCALE_PHASE", 8*time.Second)
	target := envInt("RS_SCALE_BROKER_RATE", 1000)
	a := &applied{seen: map[[2]int64]bool{}, byInst: map[string]int{}}
	client := infratest.NewPulsarClient(t)
	pub, err := relay.NewPulsarPublisher(client, p.Topic, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)

	consumers := map[string]func(){"consumer-1": startConsumer(t, p, a, "consumer-1")}
	const detect, records = 62001, 2000
	versions := make([]int64, records) // versions[i]: newest version published of record i
	var published atomic.Int64
	stopPub := make(chan struct{})
	pubErr := make(chan error, 1)
	go func() {
		// Batches of target/20 every 50 ms: target events/s.
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		rng := rand.New(rand.NewPCG(1, 2))
		per := max(1, target/20)
		for {
			select {
			case <-stopPub:
				pubErr <- nil
				return
			case <-tick.C:
			}
			msgs := make([]relay.Message, 0, per)
			for range per {
				i := rng.IntN(records)
				versions[i]++
				id := int64(63_000_000 + i)
				ev := &fitnessv1.FitnessResultChanged{EventId: fmt.Sprintf("fitness-result-%d-v%d", id, versions[i]), DataId: id,
					DetectId: detect, UserId: 41, ProjectId: 3, SchoolId: school, Grade: 5, Version: versions[i],
					Result: fmt.Sprintf("1.%03d", versions[i]%1000), Unit: "m", SchemaVersion: 1,
					SourceCommitTime: timestamppb.Now(), ShardId: p.Shards.Shards[p.Shards.Owner(id)].ID}
				payload, err := proto.MarshalOptions{Deterministic: true}.Marshal(ev)
				if err != nil {
					pubErr <- err
					return
				}
				msgs = append(msgs, relay.Message{Key: fmt.Sprint(id), Payload: payload, EventID: ev.GetEventId(), ShardID: ev.GetShardId(),
					CommitTime: ev.GetSourceCommitTime().AsTime()})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			for _, err := range pub.Publish(ctx, msgs) {
				if err != nil {
					cancel()
					pubErr <- fmt.Errorf("publishing: %w", err)
					return
				}
			}
			cancel()
			published.Add(int64(len(msgs)))
		}
	}()

	var figs []phaseFig
	run := func(name string) { figs = append(figs, runPhase(name, phase, &published)) }
	run("1 consumer")
	consumers["consumer-2"] = startConsumer(t, p, a, "consumer-2")
	consumers["consumer-3"] = startConsumer(t, p, a, "consumer-3")
	run("3 consumers")
	consumers["consumer-1"]()
	consumers["consumer-2"]()
	run("1 consumer (the third)")
	close(stopPub)
	if err := <-pubErr; err != nil {
		t.Fatal(err)
	}
	last := time.Now()

	// Every record's newest version is its current state; every event applied.
	var total int64
	for _, v := range versions {
		total += v
	}
	deadline := time.Now().Add(time.Minute)
	for {
		a.mu.Lock()
		n := len(a.seen)
		a.mu.Unlock()
		if int64(n) >= total {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events applied a minute after the last publish", n, total)
		}
		time.Sleep(100 * time.Millisecond)
	}
	converged := time.Since(last)
	rows, err := p.CH.Conn.Query(context.Background(), "SELECT data_id, version FROM fitness_result_versions FINAL WHERE detect_id = ?", int64(detect))
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]int64{}
	for rows.Next() {
		var id, v int64
		if err := rows.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		got[id] = v
	}
	rows.Close()
	wrong := 0
	for i, v := range versions {
		if v > 0 && got[int64(63_000_000+i)] != v {
			wrong++
		}
	}
	if wrong > 0 {
		t.Errorf("%d records are not at their newest version in ClickHouse", wrong)
	}
	a.mu.Lock()
	dups, byInst := a.dups, fmt.Sprint(a.byInst)
	a.mu.Unlock()
	t.Logf("%d partitions, events published straight to the topic aiming at %d events/s, phases of %s", partitions, target, phase)
	for _, f := range figs {
		n, p50, p99, mx := a.window(f.from, f.to)
		t.Logf("%-24s published %5d (%4.0f events/s), applied %5d, commit-to-visible p50 %s p99 %s max %s",
			f.name, f.events, float64(f.events)/f.to.Sub(f.from).Seconds(), n, p50.Round(time.Millisecond), p99.Round(time.Millisecond), mx.Round(time.Millisecond))
	}
	t.Logf("events %d, applied %d (+%d duplicates delivered), per consumer instance %s; records at their newest version %d of %d; converged %s after the last publish",
		total, len(a.seen), dups, byInst, len(got)-wrong, len(got), converged.Round(time.Millisecond))
}
