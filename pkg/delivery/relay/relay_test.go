package relay_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
	"github.com/resultsync/resultsync/pkg/model/canonical"
)

func testConfig() relay.Config {
	return relay.Config{
		BatchSize: 100, Lease: 2 * time.Second, PublishTimeout: time.Second, PollInterval: 10 * time.Millisecond,
		MaxAttempts: 50, Backoff: outbox.Backoff{Base: 20 * time.Millisecond, Max: 200 * time.Millisecond},
	}
}

func newRelay(t *testing.T, cfg relay.Config, pub relay.Publisher, obs relay.ClaimObserver, stores ...relay.Store) *relay.Relay {
	t.Helper()
	r, err := relay.New(quiet, cfg, pub, stores, nil, obs)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// runUntil runs r in the background until the test ends or stop is called.
func runUntil(t *testing.T, r *relay.Relay) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*relay.Config)
		want   string // substring of the error; "" when valid
	}{
		{"default", func(*relay.Config) {}, ""},
		{"lease covers publish and completion", func(c *relay.Config) {
			c.Lease, c.PublishTimeout, c.CompletionTimeout = 21*time.Second, 10*time.Second, 10*time.Second
		}, ""},
		{"lease equal to publish + completion", func(c *relay.Config) {
			c.Lease, c.PublishTimeout, c.CompletionTimeout = 20*time.Second, 10*time.Second, 10*time.Second
		}, "lease (20s) must be longer than the publish timeout (10s) plus the completion timeout (10s)"},
		{"lease shorter than publish + completion", func(c *relay.Config) {
			c.Lease, c.PublishTimeout, c.CompletionTimeout = 15*time.Second, 10*time.Second, 10*time.Second
		}, "plus the completion timeout (10s)"},
		{"publish timeout equal to the lease", func(c *relay.Config) { c.PublishTimeout = c.Lease }, "must be longer than the publish timeout"},
		{"publish timeout longer than the lease", func(c *relay.Config) { c.PublishTimeout = 2 * c.Lease }, "must be longer than the publish timeout"},
		{"derived completion timeout fits the lease", func(c *relay.Config) {
			c.Lease, c.PublishTimeout, c.CompletionTimeout = 2*time.Second, time.Second, 0
		}, ""},
		{"no room left for a derived completion timeout", func(c *relay.Config) {
			c.Lease, c.PublishTimeout, c.CompletionTimeout = time.Second, time.Second, 0
		}, "plus the completion timeout (0s)"},
		{"negative completion timeout", func(c *relay.Config) { c.CompletionTimeout = -time.Second }, "completion timeout must not be negative"},
		{"zero max attempts", func(c *relay.Config) { c.MaxAttempts = 0 }, "max attempts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := relay.DefaultConfig()
			tc.change(&cfg)
			err := cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// Failure point: the relay crashed after claiming, before publishing. Once
// the lease expires, another instance publishes the events.
func TestCrashBeforePublish(t *testing.T) {
	s := newShard(t, "shard-0")
	ids := s.fill(t, 900000, 100)
	pub, col := pulsarPublisher(t, time.Second)
	ctx := context.Background()

	crashed, err := s.repo.Claim(ctx, 1000, 1500*time.Millisecond) // instance A claims, then dies
	if err != nil || len(crashed.Rows) != len(ids) {
		t.Fatalf("claim by the crashing instance: %d rows, %v", len(crashed.Rows), err)
	}
	b := newRelay(t, testConfig(), pub, nil, s.repo)
	if n, err := b.Cycle(ctx, s.repo); n != 0 || err != nil {
		t.Fatalf("instance B claimed %d rows under a live lease (err %v)", n, err)
	}
	runUntil(t, b)
	s.waitCounts(t, 20*time.Second, "all SENT", allSent(len(ids)))
	col.WaitDistinct(t, len(ids), 10*time.Second)
	for _, id := range ids {
		if len(col.Payloads(id)) == 0 {
			t.Errorf("event %s never reached the broker", id)
		}
	}
}

// Failure point: the broker accepted the event but the acknowledgment was
// lost. The relay publishes it again; the consumer sees identical duplicates.
func TestLostBrokerAck(t *testing.T) {
	s := newShard(t, "shard-0")
	ids := s.fill(t, 900000, 50)
	real, col := pulsarPublisher(t, time.Second)
	f := &faultPublisher{next: real}
	f.lostAcks.Store(1)
	r := newRelay(t, testConfig(), f, nil, s.repo)
	ctx := context.Background()

	if _, err := r.Cycle(ctx, s.repo); err != nil {
		t.Fatal(err)
	}
	if c := s.counts(t); c[outbox.StatusFailed] != len(ids) {
		t.Fatalf("after a lost acknowledgment: %v, want all %d FAILED (delivery uncertain)", c, len(ids))
	}
	runUntil(t, r)
	s.waitCounts(t, 20*time.Second, "all SENT", allSent(len(ids)))
	col.WaitDistinct(t, len(ids), 10*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for col.Total() < 2*len(ids) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	for _, id := range ids {
		p := col.Payloads(id)
		if len(p) != 2 {
			t.Errorf("%s delivered %d times, want 2 (original + retry)", id, len(p))
			continue
		}
		if !bytes.Equal(p[0], p[1]) {
			t.Errorf("%s: the duplicate differs from the original", id)
		}
	}
}

// markSentVia routes MarkSent to another repo (a database that is down).
type markSentVia struct {
	*outbox.Repo
	dead  *outbox.Repo
	fails int
	mu    sync.Mutex
}

func (m *markSentVia) MarkSent(ctx context.Context, token string, ids []int64) (int64, error) {
	m.mu.Lock()
	fail := m.fails > 0
	m.fails--
	m.mu.Unlock()
	if fail {
		return m.dead.MarkSent(ctx, token, ids)
	}
	return m.Repo.MarkSent(ctx, token, ids)
}

// Failure point: publication succeeded but marking SENT failed because the
// database was unavailable at that moment. After the lease expires the
// events are published again; no row stays PROCESSING.
func TestLostSentUpdate(t *testing.T) {
	s := newShard(t, "shard-0")
	ids := s.fill(t, 900000, 40)
	pub, col := pulsarPublisher(t, time.Second)
	st := &markSentVia{Repo: s.repo, dead: deadDB(t), fails: 1}
	cfg := testConfig()
	cfg.Lease = 1500 * time.Millisecond
	r := newRelay(t, cfg, pub, nil, st)
	ctx := context.Background()

	if _, err := r.Cycle(ctx, st); err == nil {
		t.Fatal("cycle reported success although the SENT update failed")
	}
	if c := s.counts(t); c[outbox.StatusProcessing] != len(ids) {
		t.Fatalf("after the lost SENT update: %v, want %d PROCESSING until the lease expires", c, len(ids))
	}
	col.WaitDistinct(t, len(ids), 10*time.Second) // the first publication did happen
	runUntil(t, r)
	c := s.waitCounts(t, 20*time.Second, "all SENT", allSent(len(ids)))
	if c[outbox.StatusProcessing] != 0 {
		t.Errorf("rows left PROCESSING: %v", c)
	}
	deadline := time.Now().Add(10 * time.Second)
	for col.Total() < 2*len(ids) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	for _, id := range ids {
		if n := len(col.Payloads(id)); n != 2 {
			t.Errorf("%s delivered %d times, want 2", id, n)
		}
	}
}

// A stale claimant whose lease expired cannot overwrite the status written
// by the new claimants, who take the rows over one by one.
func TestStaleClaimantCannotOverwrite(t *testing.T) {
	s := newShard(t, "shard-0")
	ids := s.fill(t, 900000, 10)
	ctx := context.Background()
	old, err := s.repo.Claim(ctx, 100, 300*time.Millisecond)
	if err != nil || len(old.Rows) != len(ids) {
		t.Fatalf("first claim: %v %v", len(old.Rows), err)
	}
	time.Sleep(400 * time.Millisecond)
	var cur []outbox.Claim
	var rowIDs []int64
	for range ids {
		c, err := s.repo.Claim(ctx, 100, time.Minute)
		if err != nil || len(c.Rows) != 1 {
			t.Fatalf("reclaim after expiry: %d rows, %v; want each expired row claimed alone", len(c.Rows), err)
		}
		if r := c.Rows[0]; !r.Reclaimed || r.Attempts != 1 || r.LastError != outbox.LeaseExpiredError {
			t.Errorf("reclaimed row %d: reclaimed %v, attempts %d, last error %q; want the expiry counted as an attempt", r.ID, r.Reclaimed, r.Attempts, r.LastError)
		}
		cur, rowIDs = append(cur, c), append(rowIDs, c.Rows[0].ID)
	}
	if n, err := s.repo.MarkSent(ctx, old.Token, rowIDs); err != nil || n != 0 {
		t.Errorf("stale claimant marked %d rows SENT (err %v), want 0", n, err)
	}
	if f, p, err := s.repo.MarkFailed(ctx, old.Token, rowIDs, "stale", 1, outbox.Backoff{Base: time.Millisecond, Max: time.Millisecond}); err != nil || f+p != 0 {
		t.Errorf("stale claimant marked %d failed / %d parked (err %v), want 0", f, p, err)
	}
	if c := s.counts(t); c[outbox.StatusProcessing] != len(ids) {
		t.Fatalf("stale completion changed the new claimants' rows: %v", c)
	}
	for _, c := range cur {
		if n, err := s.repo.MarkSent(ctx, c.Token, []int64{c.Rows[0].ID}); err != nil || n != 1 {
			t.Fatalf("current claimant marked %d SENT (err %v)", n, err)
		}
	}
	if f, p, _ := s.repo.MarkFailed(ctx, old.Token, rowIDs, "late", 1, outbox.Backoff{Base: time.Millisecond, Max: time.Millisecond}); f+p != 0 {
		t.Errorf("late stale failure overwrote SENT rows: %d/%d", f, p)
	}
	if c := s.counts(t); c[outbox.StatusSent] != len(ids) {
		t.Errorf("final statuses %v, want all SENT", c)
	}
}

// Failure point: the broker is down for a while. Events back off, none is
// lost, and all are delivered once it returns. An event that fails past the
// limit is PARKED, stays parked, and a replay publishes it.
func TestBrokerDown(t *testing.T) {
	s := newShard(t, "shard-0")
	ids := s.fill(t, 900000, 200)
	real, col := pulsarPublisher(t, time.Second)
	f := &faultPublisher{next: real}
	f.down.Store(true)
	r := newRelay(t, testConfig(), f, nil, s.repo)
	stop := runUntil(t, r)

	c := s.waitCounts(t, 10*time.Second, "all FAILED with retries", func(c map[string]int) bool {
		return c[outbox.StatusFailed] == len(ids)
	})
	time.Sleep(500 * time.Millisecond)
	var minAttempts, maxDue int
	if err := s.db.DB.QueryRow("SELECT MIN(attempts), TIMESTAMPDIFF(MICROSECOND, MIN(due_time), MAX(due_time)) FROM outbox_event").Scan(&minAttempts, &maxDue); err != nil {
		t.Fatal(err)
	}
	if minAttempts < 2 {
		t.Errorf("while the broker is down, rows were attempted at least %d times, want retries (>= 2)", minAttempts)
	}
	if c[outbox.StatusSent] != 0 || col.Total() != 0 {
		t.Errorf("something was sent while the broker was down: %v, %d messages", c, col.Total())
	}
	f.down.Store(false)
	s.waitCounts(t, 20*time.Second, "all SENT after the broker returned", allSent(len(ids)))
	col.WaitDistinct(t, len(ids), 10*time.Second)
	stop()

	// Past the limit: PARKED, counted, not retried, replayed on request.
	parkedIDs := s.fill(t, 910000, 20)
	cfg := testConfig()
	cfg.MaxAttempts = 3
	f.down.Store(true)
	r2 := newRelay(t, cfg, f, nil, s.repo)
	stop2 := runUntil(t, r2)
	s.waitCounts(t, 10*time.Second, "20 PARKED", func(c map[string]int) bool { return c[outbox.StatusParked] == len(parkedIDs) })
	f.down.Store(false)
	time.Sleep(500 * time.Millisecond)
	if c := s.counts(t); c[outbox.StatusParked] != len(parkedIDs) {
		t.Fatalf("parked events were retried without a replay: %v", c)
	}
	var attempts int
	if err := s.db.DB.QueryRow("SELECT MAX(attempts) FROM outbox_event WHERE status = 'PARKED'").Scan(&attempts); err != nil || attempts != 3 {
		t.Errorf("parked rows carry %d attempts (err %v), want 3", attempts, err)
	}
	replayed, err := s.repo.ReplayParked(context.Background(), nil, 0, 1000)
	if err != nil || len(replayed) != len(parkedIDs) {
		t.Fatalf("replay: %d rows, %v", len(replayed), err)
	}
	s.waitCounts(t, 20*time.Second, "replayed events SENT", allSent(len(ids)+len(parkedIDs)))
	col.WaitDistinct(t, len(ids)+len(parkedIDs), 10*time.Second)
	for _, id := range parkedIDs {
		if len(col.Payloads(id)) != 1 {
			t.Errorf("%s delivered %d times after replay, want 1", id, len(col.Payloads(id)))
		}
	}
	stop2()
}

// Three relay instances over two shards drain 50,000 events: every event is
// published at least once, every row ends SENT, no row is ever held by two
// live leases at once, and no more claims work a shard at once than it has
// claim slots, however many instances run.
func TestThreeRelaysTwoShards(t *testing.T) {
	const perShard = 25000
	shards := []shard{newShard(t, "shard-0"), newShard(t, "shard-1")}
	var all []string
	for i, s := range shards {
		all = append(all, s.fill(t, int64(1_000_000*(i+1)), perShard)...)
	}
	tp := newTopic(t)
	col := tp.col
	log := newClaimLog()
	cfg := testConfig()
	cfg.BatchSize = 500
	cfg.Lease = 20 * time.Second
	cfg.PublishTimeout = 10 * time.Second

	var stops []func()
	for range 3 {
		pub := tp.publisher(t, cfg.PublishTimeout)
		stops = append(stops, runUntil(t, newRelay(t, cfg, pub, log, shards[0].repo, shards[1].repo)))
	}
	for _, s := range shards {
		s.waitCounts(t, 3*time.Minute, "all SENT", allSent(perShard))
	}
	for _, stop := range stops {
		stop()
	}
	col.WaitDistinct(t, len(all), time.Minute)
	if bad := log.overlaps(); len(bad) > 0 {
		t.Errorf("%d rows were claimed while another live lease held them, e.g. %v", len(bad), bad[:min(5, len(bad))])
	}
	for _, s := range shards {
		if got := log.maxInFlight(s.repo.ShardID()); got > relay.DefaultClaimSlots || got < 1 {
			t.Errorf("%s had up to %d claims in flight at once, want 1-%d (its claim slots)", s.repo.ShardID(), got, relay.DefaultClaimSlots)
		}
	}
	rows, claims := log.rows()
	if rows != len(all) {
		t.Errorf("claims touched %d rows, want %d", rows, len(all))
	}
	t.Logf("%d events, %d claims of rows, %d messages received (%d distinct)", len(all), claims, col.Total(), col.Distinct())
	for _, id := range []string{canonical.EventID(1_000_000, 1), canonical.EventID(2_000_000+perShard-1, 1)} {
		if len(col.Payloads(id)) == 0 {
			t.Errorf("%s missing", id)
		}
	}
}

// slowPublisher delays every batch, so that a drain lasts long enough to
// watch the instances.
type slowPublisher struct {
	next  relay.Publisher
	delay time.Duration
}

func (p slowPublisher) Publish(ctx context.Context, msgs []relay.Message) []error {
	time.Sleep(p.delay)
	return p.next.Publish(ctx, msgs)
}

// An added instance costs the shard nothing while its claim slots are held:
// it stands by, and takes a slot over as soon as the holder stops.
func TestStandbyInstanceTakesOver(t *testing.T) {
	const n = 2000
	s := newShard(t, "shard-0")
	s.fill(t, 900000, n)
	tp := newTopic(t)
	cfg := testConfig()
	cfg.ClaimSlots = 1
	logA, logB := newClaimLog(), newClaimLog()
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	start := func(log *claimLog, reg *prometheus.Registry) func() {
		r, err := relay.New(quiet, cfg, slowPublisher{tp.publisher(t, time.Second), 50 * time.Millisecond}, []relay.Store{s.repo}, relay.NewMetrics(reg), log)
		if err != nil {
			t.Fatal(err)
		}
		return runUntil(t, r)
	}
	held := func(reg *prometheus.Registry) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "relay_claim_slots_held" && len(mf.GetMetric()) > 0 {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		return 0
	}
	stopA := start(logA, regA)
	s.waitCounts(t, 20*time.Second, "a first batch SENT", func(c map[string]int) bool { return c[outbox.StatusSent] > 0 })
	start(logB, regB)
	time.Sleep(500 * time.Millisecond)
	if _, claims := logB.rows(); claims != 0 {
		t.Errorf("the second instance claimed %d rows while the only slot was held", claims)
	}
	if a, b := held(regA), held(regB); a != 1 || b != 0 {
		t.Errorf("relay_claim_slots_held: %v for the holder, %v for the standby; want 1 and 0", a, b)
	}
	if c := s.counts(t); c[outbox.StatusSent] == n {
		t.Fatal("the first instance drained everything before it could be stopped; slow it down")
	}
	stopA()
	s.waitCounts(t, 20*time.Second, "all SENT by the standby", allSent(n))
	if _, claims := logB.rows(); claims == 0 {
		t.Error("the standby never took over")
	}
	if b := held(regB); b != 1 {
		t.Errorf("relay_claim_slots_held of the instance that took over: %v, want 1", b)
	}
	tp.col.WaitDistinct(t, n, 10*time.Second)
}
