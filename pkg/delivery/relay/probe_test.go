package relay_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
)

// countingRepo is the shard's outbox.Repo (its claim slots included)
// counting the claim transactions opened and the eligibility probes asked.
type countingRepo struct {
	*outbox.Repo
	claims, probes atomic.Int64
}

func (c *countingRepo) Eligible(ctx context.Context) (bool, error) {
	c.probes.Add(1)
	return c.Repo.Eligible(ctx)
}

func (c *countingRepo) ClaimBatch(ctx context.Context, spec outbox.ClaimSpec) (outbox.Claim, error) {
	c.claims.Add(1)
	return c.Repo.ClaimBatch(ctx, spec)
}

// An idle loop asks the one-statement probe (outbox.Repo.Eligible) before
// each claim and opens no claim transaction while there is nothing to
// claim; it keeps probing at its backed-off pace (counted as empty claims),
// the shard's loops share the answers (about one question per
// MaxIdleInterval, not one per loop), and an event committed meanwhile is
// claimed and SENT at once.
func TestIdleLoopsProbeInsteadOfOpeningClaims(t *testing.T) {
	s := newShard(t, "shard-0")
	tp := newTopic(t)
	cfg := testConfig()
	cfg.PollInterval, cfg.MaxIdleInterval = 10*time.Millisecond, 100*time.Millisecond
	reg := prometheus.NewRegistry()
	repo := &countingRepo{Repo: s.repo}
	r, err := relay.New(quiet, cfg, tp.publisher(t, time.Second), []relay.Store{repo}, relay.NewMetrics(reg), nil)
	if err != nil {
		t.Fatal(err)
	}
	runUntil(t, r)
	empty := func() float64 { return counterValue(t, reg, "relay_empty_claims_total") }

	// Past IdleAfter and the ramp (10+20+40+80 ms), the loops only probe.
	deadline := time.Now().Add(20 * time.Second)
	for empty() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%v empty claims in 20s", empty())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Idle (past IdleAfter since the start): the loops have begun to probe.
	for repo.probes.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d probes in 20s: the idle loops never probed", repo.probes.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	claims, idle, asked := repo.claims.Load(), empty(), repo.probes.Load()
	const window = 2 * time.Second
	time.Sleep(window)
	if n := repo.claims.Load() - claims; n != 0 {
		t.Errorf("%d claim transactions opened in %s on an idle shard, want none (the probe found nothing)", n, window)
	}
	if n := empty() - idle; n < float64(relay.DefaultClaimSlots) {
		t.Errorf("%v idle claims in %s, want at least one per loop (%d): the loops stopped looking", n, window, relay.DefaultClaimSlots)
	}
	// Shared: about window/MaxIdleInterval questions (20), +50% for the
	// phases of the loops; unshared it would be one per loop each (40).
	// Load only lowers the count.
	n := repo.probes.Load() - asked
	if limit := int64(3 * window / cfg.MaxIdleInterval / 2); n > limit {
		t.Errorf("%d probes in %s by %d loops, want at most %d (the loops share the answers)", n, window, relay.DefaultClaimSlots, limit)
	}
	if n < 1 {
		t.Errorf("no probe in %s: the loops stopped asking", window)
	}

	// Work is still found: an event committed now is SENT within a few
	// idle waits, by a claim the probe let through.
	s.fill(t, 900000, 3)
	s.waitCounts(t, 20*time.Second, "the 3 events SENT", allSent(3))
	if repo.claims.Load() == claims {
		t.Error("the events were SENT without a claim")
	}
	tp.col.WaitDistinct(t, 3, 10*time.Second)
}
