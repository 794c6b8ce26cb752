// Command relay measures the outbox relay against the local MySQL (or MariaDB) and
// Pulsar, in one run:
//
//   - raw:  the claim-and-mark-SENT loop of the same database with no
//     publishing (the ceiling), 4 claimers over two shards, run before the
//     drains and again after them (the ceiling is the mean of both);
//
//   - drain: a backlog of events over two shards drained to Pulsar by 1, 2
//     and 4 relay instances (-instances): events/s and claim-to-SENT latency
//     p50/p99; the end of a drain is counted in process (the relays'
//     completions) and then checked in the database. After one uncounted
//     warm-up drain (the first drain of a run pays the topic's creation and
//     cold caches), the counts are drained -rounds times, forward then
//     backward (1,2,4,4,2,1): a drift of the machine within the run weighs
//     on every count alike instead of on the last one; each count's figure
//     is the mean of its rounds, every drain is printed too;
//
//   - head to head: the fewest and the most instances (-instances' first
//     and last counts) drain two equal backlogs, on two pairs of shards, at
//     the same time, -h2h-rounds times, the pairs swapping fleets every
//     round; each fleet's rate is counted while both drained. Sequential
//     drains of one count differ by up to ±10% from round to round on this
//     machine (the same statements cost the database 70-100us of CPU per
//     event from one minute to the next), more than the counts differ, so
//     the verdict on "4 instances >= 1 instance" is this phase's mean ratio
//     and its 95% interval: met when the interval reaches 100% (no loss
//     the bench can tell from noise) and is at most ±3 points wide (a
//     wider one could hide a loss that size);
//
//   - steady: a stream of events committed at a fixed rate while one relay
//     instance runs: commit-to-SENT latency p50/p99.
//
// Every phase starts from a fresh copy of the filled backlog, once the
// database and the broker have gone quiet (-settle).
//
// With -diag (default) each phase also prints where its time went: CPU of
// the relays, the database server and the broker, client-side claim and
// SENT-update latency, server-wide InnoDB row lock waits and history list
// length, and lock waits sampled in the bench's own databases.
//
//	go run ./bench/relay -events 200000 -rate 1000 -steady 10s
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/outboxtest"
)

// settleLimit bounds the wait for a quiet database and broker before each
// phase (see settle).
var settleLimit = flag.Duration("settle", 30*time.Second, "before each phase, wait at most this long for the database and the broker to go quiet (0: do not wait)")

func main() {
	events := flag.Int("events", 200000, "backlog size over two shards")
	rate := flag.Int("rate", 1000, "steady stream rate, events/s")
	steady := flag.Duration("steady", 10*time.Second, "steady stream duration")
	instances := flag.String("instances", "1,2,4", "relay instance counts of the drain phases")
	slots := flag.Int("slots", relay.DefaultClaimSlots, "claim slots per shard (relay.Config.ClaimSlots)")
	rounds := flag.Int("rounds", 2, "rounds of the drain phases, alternately forward and backward over -instances")
	h2hRounds := flag.Int("h2h-rounds", 6, "rounds of the head-to-head phase (the fewest and the most instances draining at the same time; 0: none)")
	verbose := flag.Bool("diag", true, "print where each phase spent its time (CPU per process, statements, lock waits)")
	flag.Parse()
	var counts []int
	for _, f := range strings.Split(*instances, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "relay bench: -instances wants positive counts, got", *instances)
			os.Exit(2)
		}
		counts = append(counts, n)
	}
	if *rounds < 1 || *h2hRounds < 0 {
		fmt.Fprintln(os.Stderr, "relay bench: -rounds wants at least 1 and -h2h-rounds at least 0, got", *rounds, *h2hRounds)
		os.Exit(2)
	}
	if err := run(context.Background(), *events, *rate, *steady, counts, *rounds, *h2hRounds, *slots, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "relay bench:", err)
		os.Exit(1)
	}
}

type shardDB struct {
	db   *sql.DB
	name string
	repo *outbox.Repo
}

func run(ctx context.Context, events, rate int, steady time.Duration, counts []int, rounds, h2hRounds, slots int, verbose bool) error {
	pair, err := shardPair(ctx, 0, events)
	if err != nil {
		return err
	}
	defer pair.drop()
	shards := pair.shards
	schemas := []string{shards[0].name, shards[1].name}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	client, err := pulsarbus.NewClient(log, pulsarbus.Options{URL: infratest.PulsarURL()})
	if err != nil {
		return err
	}
	defer client.Close()
	cfg := relay.DefaultConfig()
	cfg.ClaimSlots = slots

	// Raw ceiling: claim + mark SENT, no publishing, 2 claimers per shard;
	// measured before the relay phases and again after them (the mean is
	// the ceiling: the load of a shared machine drifts within a run).
	rawPhase := func(label string) (float64, error) {
		if err := resetNew(ctx, shards); err != nil {
			return 0, err
		}
		quiet := settle(ctx, *settleLimit)
		start := time.Now()
		var wg sync.WaitGroup
		// A claimer that fails stops, and the phase fails: a ceiling
		// drained by fewer claimers than it says would be too low.
		var errMu sync.Mutex
		var claimErrs []error
		fail := func(err error) {
			errMu.Lock()
			claimErrs = append(claimErrs, err)
			errMu.Unlock()
		}
		a := snapshot(ctx, shards[0].db, schemas)
		for _, s := range shards {
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						c, err := s.repo.Claim(ctx, cfg.BatchSize, cfg.Lease)
						if err != nil {
							fail(fmt.Errorf("claiming: %w", err))
							return
						}
						if len(c.Rows) == 0 {
							return
						}
						ids := make([]int64, len(c.Rows))
						for i, r := range c.Rows {
							ids[i] = r.ID
						}
						if _, err := s.repo.MarkSent(ctx, c.Token, ids); err != nil {
							fail(fmt.Errorf("marking SENT: %w", err))
							return
						}
					}
				}()
			}
		}
		wg.Wait()
		if err := errors.Join(claimErrs...); err != nil {
			return 0, fmt.Errorf("raw phase %s: a claimer failed: %w", label, err)
		}
		r := float64(events) / time.Since(start).Seconds()
		if verbose {
			fmt.Printf("raw claim+mark SENT (%s), after %s waiting for a quiet machine:\n", label, quiet.Round(100*time.Millisecond))
			report(a, snapshot(ctx, shards[0].db, schemas), events)
		}
		if err := checkAllSent(ctx, shards, events); err != nil {
			return 0, fmt.Errorf("raw phase %s: %w", label, err)
		}
		return r, nil
	}
	rawBefore, err := rawPhase("before")
	if err != nil {
		return err
	}
	var wg sync.WaitGroup

	type phase struct {
		instances int
		rate      float64
		p50, p99  time.Duration
	}
	// The warm-up drain, then the rounds: forward, backward, forward, ...
	order := []int{counts[0]}
	for r := range rounds {
		for i := range counts {
			if r%2 == 0 {
				order = append(order, counts[i])
			} else {
				order = append(order, counts[len(counts)-1-i])
			}
		}
	}
	var phases []phase
	for k, n := range order {
		if err := resetNew(ctx, shards); err != nil {
			return err
		}
		quiet := settle(ctx, *settleLimit)
		a := snapshot(ctx, shards[0].db, schemas)
		locks := sampleLocks(ctx, shards[0].db, schemas, 50*time.Millisecond)
		topic := pulsarbus.Topic("public", "default", "bench-relay-"+infratest.Suffix())
		obs := &latencies{claimed: map[string]time.Time{}, target: int64(events), done: make(chan struct{})}
		var stores []relay.Store
		timing := &storeTiming{}
		for _, s := range shards {
			stores = append(stores, timedStore{Repo: s.repo, t: timing})
		}
		start := time.Now()
		f, err := startFleet(ctx, log, client, cfg, n, topic, stores, obs)
		if err != nil {
			return err
		}
		// Done when the relays report every event SENT (counted in
		// process: polling COUNT(*) of the SENT rows every few milliseconds
		// cost the database as much as the relays' own statements), or
		// when a once-a-second count finds them all (a SENT update whose
		// answer was lost is not counted in process).
		if err := waitAllSent(ctx, shards, events, obs.done); err != nil {
			f.stop()
			return err
		}
		elapsed := time.Since(start)
		locks.stop()
		f.stop()
		if err := checkAllSent(ctx, shards, events); err != nil {
			return fmt.Errorf("%d instance(s): %w", n, err)
		}
		p50, p99 := obs.percentiles()
		label := fmt.Sprintf("round %d", (k-1)/len(counts)+1)
		if k == 0 {
			label = "warm-up, not counted"
		} else {
			phases = append(phases, phase{n, float64(events) / elapsed.Seconds(), p50, p99})
		}
		if verbose {
			fmt.Printf("relay, %d instance(s), %s: %.0f events/s, claim->SENT p50 %s, p99 %s (after %s waiting for a quiet machine)\n", n, label,
				float64(events)/elapsed.Seconds(), p50.Round(time.Millisecond), p99.Round(time.Millisecond), quiet.Round(100*time.Millisecond))
			report(a, snapshot(ctx, shards[0].db, schemas), events)
			timing.report()
			locks.report()
			if entries, err := brokerEntries(ctx, topic); err != nil {
				fmt.Printf("    broker: %v\n", err)
			} else {
				fmt.Printf("    broker: %d entries stored, %.1f events per entry\n", entries, float64(events)/float64(max(entries, 1)))
			}
		}
	}

	// Head to head: the fewest and the most instances draining two equal
	// backlogs at the same time (see headToHead), on a second pair of
	// shards filled like the first.
	var h2h []abRound
	if h2hRounds > 0 {
		more, err := shardPair(ctx, 2, events)
		if err != nil {
			return err
		}
		defer more.drop()
		if h2h, err = headToHead(ctx, log, client, cfg, [2][]shardDB{shards, more.shards}, counts[0], counts[len(counts)-1], h2hRounds, events); err != nil {
			return err
		}
	}

	rawAfter, err := rawPhase("after")
	if err != nil {
		return err
	}
	rawRate := (rawBefore + rawAfter) / 2

	// Steady stream: commit events at `rate` while one relay runs; commit-to-SENT from the rows.
	if err := truncate(ctx, shards); err != nil {
		return err
	}
	topic := pulsarbus.Topic("public", "default", "bench-relay-steady-"+infratest.Suffix())
	pub, err := relay.NewPulsarPublisher(client, topic, cfg.PublishTimeout)
	if err != nil {
		return err
	}
	defer pub.Close()
	var stores []relay.Store
	for _, s := range shards {
		stores = append(stores, s.repo)
	}
	r, err := relay.New(log, cfg, pub, stores, nil, nil)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithCancel(ctx)
	wg.Add(1)
	go func() { defer wg.Done(); _ = r.Run(rctx) }()
	total, err := produceSteady(ctx, shards, rate, steady)
	if err != nil {
		cancel()
		return err
	}
	for {
		n, err := sentCount(ctx, shards)
		if err != nil {
			cancel()
			return err
		}
		if n == total {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	sp50, sp99, err := commitToSent(ctx, shards)
	if err != nil {
		return err
	}

	fmt.Printf("\nrelay: %d events over 2 shards, batch %d, %d claim slots per shard, %s + Pulsar standalone on one 2-core machine\n",
		events, cfg.BatchSize, cfg.ClaimSlots, infratest.MySQLEngine())
	fmt.Printf("%-34s %12s %14s %14s\n", "phase", "events/s", "claim->SENT p50", "p99")
	fmt.Printf("%-34s %12.0f   (%.0f before the relay phases, %.0f after)\n", "raw claim+mark SENT (no publish)", rawRate, rawBefore, rawAfter)
	// Each count: the mean of its rounds.
	var means []phase
	for _, n := range counts {
		m := phase{instances: n}
		var rates []string
		k := 0
		for _, p := range phases {
			if p.instances != n {
				continue
			}
			m.rate += p.rate
			m.p50 += p.p50
			m.p99 += p.p99
			rates = append(rates, fmt.Sprintf("%.0f", p.rate))
			k++
		}
		m.rate /= float64(k)
		m.p50 /= time.Duration(k)
		m.p99 /= time.Duration(k)
		means = append(means, m)
		fmt.Printf("%-34s %12.0f %14s %14s   (rounds: %s)\n", fmt.Sprintf("relay, %d instance(s)", n), m.rate, m.p50.Round(time.Millisecond),
			m.p99.Round(time.Millisecond), strings.Join(rates, ", "))
	}
	last, first := means[len(means)-1], means[0]
	met := map[bool]string{true: "met", false: "NOT met"}
	fmt.Printf("%d instances: %.1f%% of the raw rate (target >= 70%%), %.1f%% of %d instance(s) drained one after the other, claim->SENT p99 %.2fx (target <= 2x)\n",
		last.instances, 100*last.rate/rawRate, 100*last.rate/first.rate, first.instances, float64(last.p99)/float64(max(first.p99, 1)))
	fmt.Printf("SUMMARY|relay|relay, %d instances|%.0f/s|%.0f/s raw claim|%.1f%%|>= 70%%|%s\n", last.instances, last.rate, rawRate, 100*last.rate/rawRate, met[last.rate >= 0.7*rawRate])
	if len(h2h) >= 2 {
		// The verdict on "more instances never cost throughput": the
		// head-to-head ratio, whose rounds share the machine's minute,
		// not the sequential drains, whose rounds of one count differ by
		// more than the counts do.
		ratios := make([]float64, len(h2h))
		for i, r := range h2h {
			ratios[i] = 100 * r.many / r.few
		}
		// An interval wider than h2hResolution could hide a real loss of
		// that size: no verdict then (too few rounds, or a noisy run).
		const h2hResolution = 3.0
		mean, half := interval95(ratios)
		fmt.Printf("head to head: %d instances drained at %.1f%% of the rate of %d instance(s) (rounds %.1f-%.1f%%; 95%% interval %.1f-%.1f%%)\n",
			last.instances, mean, first.instances, slices.Min(ratios), slices.Max(ratios), mean-half, mean+half)
		// The target is >= 100%: met when the measured ratio (the mean of
		// the rounds) is at least 100%; the interval says how sure that is,
		// and one wider than h2hResolution gives no verdict.
		verdict := met[mean >= 100]
		if half > h2hResolution {
			verdict = fmt.Sprintf("NOT met: the interval is wider than ±%.0f points, run more -h2h-rounds", h2hResolution)
		}
		fmt.Printf("SUMMARY|relay|relay, %d vs %d instance(s), head to head (%d rounds)|%.1f%%|95%% interval %.1f-%.1f%%|%.1f%%|>= 100%% (mean of the rounds; interval at most ±%.0f points)|%s\n",
			last.instances, first.instances, len(h2h), mean, mean-half, mean+half, mean, h2hResolution, verdict)
	} else {
		fmt.Printf("SUMMARY|relay|relay, %d vs %d instance(s)|%.0f/s|%.0f/s|%.1f%%|>= 100%%|%s\n", last.instances, first.instances, last.rate, first.rate,
			100*last.rate/first.rate, met[last.rate >= first.rate])
	}
	ratio := float64(last.p99) / float64(max(first.p99, 1))
	fmt.Printf("SUMMARY|relay|claim->SENT p99, %d vs %d instance(s)|%s|%s|%.2fx|<= 2x|%s\n", last.instances, first.instances,
		last.p99.Round(time.Millisecond), first.p99.Round(time.Millisecond), ratio, met[ratio <= 2])
	fmt.Printf("steady %d events/s for %s (%d events), 1 instance: commit->SENT p50 %s, p99 %s (target p99 < 500ms)\n",
		rate, steady, total, sp50.Round(time.Millisecond), sp99.Round(time.Millisecond))
	return nil
}

// latencies records claim-to-completion time per claimed row, and closes
// done once target rows were marked SENT.
type latencies struct {
	mu      sync.Mutex
	claimed map[string]time.Time
	d       []time.Duration
	sent    int64
	target  int64
	done    chan struct{}
}

func (l *latencies) Claimed(_ string, c outbox.Claim) {
	l.mu.Lock()
	l.claimed[c.Token] = time.Now()
	l.mu.Unlock()
}

func (l *latencies) Completed(_ string, c outbox.Claim, sent, _, _ int64) {
	l.mu.Lock()
	d := time.Since(l.claimed[c.Token])
	for range sent {
		l.d = append(l.d, d)
	}
	if l.done != nil && l.sent < l.target && l.sent+sent >= l.target {
		close(l.done)
	}
	l.sent += sent
	l.mu.Unlock()
}

// sentSoFar is how many rows were marked SENT so far.
func (l *latencies) sentSoFar() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent
}

func (l *latencies) percentiles() (time.Duration, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return pct(l.d, 0.50), pct(l.d, 0.99)
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[int(p*float64(len(d)-1))]
}

func sentCount(ctx context.Context, shards []shardDB) (int, error) {
	total := 0
	for _, s := range shards {
		var n int
		if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM outbox_event WHERE status = 'SENT'").Scan(&n); err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

func waitAllSent(ctx context.Context, shards []shardDB, want int, done <-chan struct{}) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-done:
			return nil
		case <-t.C:
			n, err := sentCount(ctx, shards)
			if err != nil {
				return err
			}
			if n == want {
				return nil
			}
		}
	}
}

func checkAllSent(ctx context.Context, shards []shardDB, want int) error {
	n, err := sentCount(ctx, shards)
	if err != nil {
		return err
	}
	if n != want {
		return fmt.Errorf("%d rows SENT, want %d", n, want)
	}
	return nil
}

// pair is two shard databases holding events/2 NEW events each, and the
// copy of that backlog every phase starts from: reset in place (an UPDATE
// of every row back to NEW), the table's indexes filled with delete-marked
// entries and split pages, and every phase ran slower than the one before
// it (raw 26,057/s before the drains, 22,418/s after; 21,424 down to
// 16,317/s over five drains).
type pair struct {
	shards []shardDB
	drops  []func()
}

// shardPair creates and fills shards first and first+1.
func shardPair(ctx context.Context, first, events int) (*pair, error) {
	p := &pair{}
	fmt.Printf("filling %d events over shards %d and %d...\n", events, first, first+1)
	for i := first; i < first+2; i++ {
		d, drop, err := infratest.CreateMySQLDatabase(ctx, "rs_bench", schema.Shard, 16)
		if err != nil {
			p.drop()
			return nil, err
		}
		p.drops = append(p.drops, drop)
		s := shardDB{db: d.DB, name: d.Name, repo: outbox.NewRepo(fmt.Sprintf("shard-%d", i), d.DB)}
		p.shards = append(p.shards, s)
		if _, err := outboxtest.Fill(ctx, s.db, s.repo.ShardID(), int64(10_000_000*(i+1)), events/2); err != nil {
			p.drop()
			return nil, err
		}
	}
	if err := keepPristine(ctx, p.shards); err != nil {
		p.drop()
		return nil, err
	}
	return p, nil
}

func (p *pair) drop() {
	for _, d := range p.drops {
		d()
	}
}

// interval95 returns the mean of xs and the half-width of its 95%
// confidence interval (Student's t; len(xs) >= 2).
func interval95(xs []float64) (mean, half float64) {
	n := float64(len(xs))
	for _, x := range xs {
		mean += x
	}
	mean /= n
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / (n - 1))
	// t(0.975, df) for df 1-10; beyond, 2 + 2.5/df stays just above it.
	t := []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228}
	df := len(xs) - 1
	tv := 2 + 2.5/float64(df)
	if df <= len(t) {
		tv = t[df-1]
	}
	return mean, tv * sd / math.Sqrt(n)
}

func resetNew(ctx context.Context, shards []shardDB) error {
	for _, s := range shards {
		for _, q := range []string{"TRUNCATE TABLE outbox_event", "INSERT INTO outbox_event SELECT * FROM " + pristine} {
			if _, err := s.db.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("resetting the backlog of %s: %w", s.name, err)
			}
		}
	}
	return nil
}

// pristine is the copy of the filled backlog every phase starts from.
const pristine = "outbox_event_pristine"

// keepPristine copies the freshly filled backlog aside.
func keepPristine(ctx context.Context, shards []shardDB) error {
	for _, s := range shards {
		for _, q := range []string{"CREATE TABLE " + pristine + " LIKE outbox_event", "INSERT INTO " + pristine + " SELECT * FROM outbox_event"} {
			if _, err := s.db.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("keeping the backlog of %s: %w", s.name, err)
			}
		}
	}
	return nil
}

func truncate(ctx context.Context, shards []shardDB) error {
	for _, s := range shards {
		if _, err := s.db.ExecContext(ctx, "TRUNCATE TABLE outbox_event"); err != nil {
			return err
		}
	}
	return nil
}

// produceSteady commits events at rate per second, alternating shards, in
// one transaction per event (as the write path does).
func produceSteady(ctx context.Context, shards []shardDB, rate int, d time.Duration) (int, error) {
	interval := time.Second / time.Duration(rate)
	next := time.Now()
	end := next.Add(d)
	n := 0
	for time.Now().Before(end) {
		s := shards[n%2]
		now := time.Now().UTC()
		ev := outboxtest.Event(s.repo.ShardID(), int64(50_000_000+n), now)
		if err := outbox.Write(ctx, s.db, ev, now.Truncate(time.Millisecond)); err != nil {
			return n, err
		}
		n++
		next = next.Add(interval)
		if w := time.Until(next); w > 0 {
			time.Sleep(w)
		}
	}
	return n, nil
}

func commitToSent(ctx context.Context, shards []shardDB) (time.Duration, time.Duration, error) {
	var d []time.Duration
	for _, s := range shards {
		rows, err := s.db.QueryContext(ctx, "SELECT TIMESTAMPDIFF(MICROSECOND, create_time, sent_time) FROM outbox_event")
		if err != nil {
			return 0, 0, err
		}
		for rows.Next() {
			var us int64
			if err := rows.Scan(&us); err != nil {
				rows.Close()
				return 0, 0, err
			}
			d = append(d, time.Duration(us)*time.Microsecond)
		}
		rows.Close()
	}
	return pct(d, 0.50), pct(d, 0.99), nil
}

// timedStore measures the relay's statements from the client side.
type timedStore struct {
	*outbox.Repo
	t *storeTiming
}

type storeTiming struct {
	mu                  sync.Mutex
	claims, claimedRows int64
	claimTime           time.Duration
	marks               int64
	markTime            time.Duration
}

func (s timedStore) ClaimBatch(ctx context.Context, spec outbox.ClaimSpec) (outbox.Claim, error) {
	start := time.Now()
	c, err := s.Repo.ClaimBatch(ctx, spec)
	s.t.mu.Lock()
	s.t.claims++
	s.t.claimedRows += int64(len(c.Rows))
	s.t.claimTime += time.Since(start)
	s.t.mu.Unlock()
	return c, err
}

func (s timedStore) MarkSent(ctx context.Context, token string, ids []int64) (int64, error) {
	start := time.Now()
	n, err := s.Repo.MarkSent(ctx, token, ids)
	s.t.mu.Lock()
	s.t.marks++
	s.t.markTime += time.Since(start)
	s.t.mu.Unlock()
	return n, err
}

func (t *storeTiming) report() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.claims == 0 || t.marks == 0 {
		return
	}
	fmt.Printf("    client side: %d claims (%.0f rows each), %.1fms per claim transaction; %d SENT updates, %.1fms each\n",
		t.claims, float64(t.claimedRows)/float64(t.claims), float64(t.claimTime.Microseconds())/1000/float64(t.claims),
		t.marks, float64(t.markTime.Microseconds())/1000/float64(t.marks))
}
