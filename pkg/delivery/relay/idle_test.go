package relay_test

import (
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
)

// claimTimes records when claims found rows.
type claimTimes struct {
	mu sync.Mutex
	at []time.Time
}

func (c *claimTimes) Claimed(string, outbox.Claim) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = append(c.at, time.Now())
}

func (c *claimTimes) Completed(string, outbox.Claim, int64, int64, int64) {}

func (c *claimTimes) last() (time.Time, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.at) == 0 {
		return time.Time{}, 0
	}
	return c.at[len(c.at)-1], len(c.at)
}

// counterValue is the sum of a counter family's series in reg.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				v += m.GetCounter().GetValue()
			}
		}
	}
	return v
}

// An idle shard is claimed at most once per MaxIdleInterval per claim slot
// once the loops have backed off (after IdleAfter without work; not every
// PollInterval), and a claim
// that finds rows resets the backoff: the next claim follows at once. The
// bounds checked are the ones the load of a shared machine cannot break:
// a ceiling on the number of idle claims (load only lowers it) and, for
// the reset, a next claim well within the backed-off interval.
func TestIdleClaimLoopsBackOffAndWorkResetsThem(t *testing.T) {
	s := newShard(t, "shard-0")
	tp := newTopic(t)
	cfg := testConfig()
	cfg.PollInterval, cfg.MaxIdleInterval = 10*time.Millisecond, 2*time.Second
	reg := prometheus.NewRegistry()
	times := &claimTimes{}
	r, err := relay.New(quiet, cfg, tp.publisher(t, time.Second), []relay.Store{s.repo}, relay.NewMetrics(reg), times)
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, r)
	empty := func() float64 { return counterValue(t, reg, "relay_empty_claims_total") }

	// Backed off: IdleAfter (1 s) of empty claims every 10 ms, then
	// 10+20+...+1280 ms (2.55 s) of ramp; then at most one claim per loop
	// per 2 s. Measure over 4 s once the ramp is surely over.
	deadline := time.Now().Add(20 * time.Second)
	for empty() < 2 { // both loops started
		if time.Now().After(deadline) {
			t.Fatalf("%v empty claims in 20s", empty())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(relay.IdleAfter + 3*time.Second)
	before := empty()
	const window = 4 * time.Second
	time.Sleep(window)
	idle := empty() - before
	// Two loops (the default claim slots), one claim per 2 s each: at most
	// 2 per loop in a 4 s window, +1 each for the edges.
	if limit := float64(relay.DefaultClaimSlots * 3); idle > limit {
		t.Errorf("%v empty claims in %s of idleness, want at most %v (without backoff: %d)", idle, window, limit, int(window/cfg.PollInterval)*relay.DefaultClaimSlots)
	}
	// Backed off, not stopped: every loop still claims within the window.
	if idle < float64(relay.DefaultClaimSlots) {
		t.Errorf("%v empty claims in %s of idleness, want at least one per loop (%d): the loops stopped claiming", idle, window, relay.DefaultClaimSlots)
	}

	// Work resets the backoff of the loop that found it: its next claim
	// follows at once (an empty one, counted), not 2 s later.
	s.fill(t, 900000, 3)
	s.waitCounts(t, 20*time.Second, "the 3 events SENT", allSent(3))
	at, _ := times.last()
	before = empty()
	for empty() == before {
		if time.Since(at) > 10*time.Second {
			t.Fatal("no claim within 10s of a claim that found rows")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if gap := time.Since(at); gap > cfg.MaxIdleInterval/2 {
		t.Errorf("the claim after a claim that found rows came %s later, want at once (the backoff reset; backed off it is %s)", gap, cfg.MaxIdleInterval)
	}
	tp.col.WaitDistinct(t, 3, 10*time.Second)
}

// A loop without a claim slot waits for one in a blocking GET_LOCK on the
// shard (not a poll every second), and a relay standing by that way stops
// at once: its wait (StandbyWait, 5 s with a 60 s lease) is interrupted, not
// waited out.
func TestStandbyWaitsInGetLockAndStopsPromptly(t *testing.T) {
	s := newShard(t, "shard-0")
	tp := newTopic(t)
	cfg := testConfig()
	cfg.Lease, cfg.ClaimSlots = 60*time.Second, 1
	start := func() func() {
		r, err := relay.New(quiet, cfg, tp.publisher(t, time.Second), []relay.Store{s.repo}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return runUntil(t, r)
	}
	start()         // holds the only slot
	stop := start() // stands by
	s.db.WaitRunning(t, "SELECT GET_LOCK(", 1, 10*time.Second)

	// Standing by costs nothing else: events are still SENT by the holder.
	s.fill(t, 900000, 5)
	s.waitCounts(t, 20*time.Second, "the 5 events SENT", allSent(5))

	begin := time.Now()
	stop()
	if took := time.Since(begin); took >= relay.StandbyWait-time.Second {
		t.Errorf("a standing-by relay took %s to stop, want well under its %s GET_LOCK wait", took, relay.StandbyWait)
	}
	tp.col.WaitDistinct(t, 5, 10*time.Second)
}
