package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// fault is one kind of failure the schedule injects.
type fault struct {
	kind   string
	weight int
	apply  func(ctx context.Context, c *chaos, rng *rand.Rand) string // returns the target, for the log
}

// chaos runs the seeded fault schedule against a stack.
type chaos struct {
	s        *stack
	log      *slog.Logger
	journal  *os.File
	maxBreak int // broker restarts at most
	breaks   int
	maxCH    int // ClickHouse restarts at most
	chBreaks int

	mu         sync.Mutex // counts, total, breaks, chBreaks, restarting, the journal
	counts     map[string]int
	total      int
	restarting map[string]bool
	restarts   sync.WaitGroup

	runs, repairs atomic.Int64
	rec           fitnessv1.ReconcileServiceClient
	rep           fitnessv1.RepairServiceClient
	campaigns     []int64
	bg            sync.WaitGroup
}

// pause is a fault's duration: 0.5-3 s.
func pause(rng *rand.Rand) time.Duration {
	return 500*time.Millisecond + time.Duration(rng.Int64N(int64(2500*time.Millisecond)))
}

func killAndRestart(names ...string) func(context.Context, *chaos, *rand.Rand) string {
	return func(ctx context.Context, c *chaos, rng *rand.Rand) string {
		name := names[rng.IntN(len(names))]
		c.s.kill(name)
		time.Sleep(pause(rng) / 2)
		if err := c.s.start(name); err != nil {
			c.log.Error("restarting", "server", name, "err", err)
		}
		return name
	}
}

// runScript runs a deploy/local script (stop or start of a shared server).
func runScript(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, "deploy/local/"+name, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("deploy/local/%s %s: %w: %s", name, strings.Join(args, " "), err, tail(string(out), 400))
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// holdThenCut holds a path's traffic (hold) for 0.5-3 s, then cuts its
// connections and lets new ones through: whatever was in flight (requests,
// acknowledgments) is lost.
func holdThenCut(path func(*stack) *infratest.Proxy, hold func(*infratest.Proxy), target string) func(context.Context, *chaos, *rand.Rand) string {
	return func(_ context.Context, c *chaos, rng *rand.Rand) string {
		px := path(c.s)
		hold(px)
		time.Sleep(pause(rng))
		px.Down()
		px.Resume()
		px.Up()
		return target
	}
}

func faults() []fault {
	return []fault{
		{"kill -9 relay", 3, killAndRestart("relay-1", "relay-2")},
		{"kill -9 consumer", 3, killAndRestart("consumer-1", "consumer-2")},
		{"kill -9 repair", 1, killAndRestart("repair")},
		{"kill -9 reconcile", 1, killAndRestart("reconcile")},
		{"kill -9 results", 1, killAndRestart("results")},
		// The relays' broker path hangs, then is cut: publish acknowledgments
		// are lost (the rows are published again, identical).
		{"relay->broker acks lost", 2, holdThenCut(func(s *stack) *infratest.Proxy { return s.relayBroker }, (*infratest.Proxy).Pause, "relays")},
		// The consumers' acknowledgments to the broker are held, then cut:
		// messages already written to ClickHouse are delivered again.
		{"consumer->broker acks lost", 2, holdThenCut(func(s *stack) *infratest.Proxy { return s.consumerBroker }, (*infratest.Proxy).HoldToServer, "consumers")},
		// ClickHouse hangs for the consumers, then their connections are cut
		// (an insert may or may not have landed).
		{"consumer->ClickHouse paused", 2, holdThenCut(func(s *stack) *infratest.Proxy { return s.consumerCH }, (*infratest.Proxy).Pause, "consumers")},
		// Shard 1's database goes away for every server: connections reset,
		// new ones refused, for 1-6 s.
		{"shard-1 database down", 2, func(_ context.Context, c *chaos, rng *rand.Rand) string {
			c.s.shard1.Down()
			time.Sleep(2 * pause(rng))
			c.s.shard1.Up()
			return "shard-1"
		}},
		// The real servers are stopped and started in the background (a
		// Pulsar restart takes most of a minute here): the schedule goes on,
		// so other faults hit the platform while they are down.
		{"ClickHouse restart", 1, func(ctx context.Context, c *chaos, _ *rand.Rand) string {
			return c.restartInBackground(ctx, "clickhouse.sh", "clickhouse-server", &c.chBreaks, c.maxCH)
		}},
		{"Pulsar broker restart", 1, func(ctx context.Context, c *chaos, _ *rand.Rand) string {
			return c.restartInBackground(ctx, "pulsar.sh", "pulsar standalone", &c.breaks, c.maxBreak)
		}},
		// A reconciliation of a campaign while all this happens; what it
		// finds is repaired (replays of existing versions: harmless if the
		// finding was the moment's lag).
		{"reconciliation + repair", 2, func(_ context.Context, c *chaos, rng *rand.Rand) string {
			detect := c.campaigns[rng.IntN(len(c.campaigns))]
			c.bg.Go(func() { c.reconcileAndRepair(detect) })
			return fmt.Sprint("campaign ", detect)
		}},
	}
}

// restartInBackground stops and starts a shared server with its
// deploy/local script, in the background, at most max times and never twice
// at once; "" when not injected.
func (c *chaos) restartInBackground(ctx context.Context, script string, target string, count *int, max int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *count >= max || c.restarting[script] {
		return ""
	}
	*count++
	c.restarting[script] = true
	start := time.Now()
	c.restarts.Go(func() {
		if err := runScript(ctx, script, "stop"); err != nil {
			c.log.Error("stopping", "server", target, "err", err)
		}
		if err := runScript(ctx, script, "start"); err != nil {
			c.log.Error("starting", "server", target, "err", err)
		}
		c.mu.Lock()
		c.restarting[script] = false
		fmt.Fprintf(c.journal, "%28s %s back after %.1fs\n", "", target, time.Since(start).Seconds())
		c.mu.Unlock()
	})
	return target
}

// schedule injects faults every `every` (±50%) until ctx ends.
func (c *chaos) schedule(ctx context.Context, seed uint64, every time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 0x6368616f73))
	fs := faults()
	sum := 0
	for _, f := range fs {
		sum += f.weight
	}
	start := time.Now()
	for {
		wait := every/2 + time.Duration(rng.Int64N(int64(every)))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		k := rng.IntN(sum)
		var f fault
		for _, f = range fs {
			if k < f.weight {
				break
			}
			k -= f.weight
		}
		at := time.Since(start)
		target := f.apply(context.WithoutCancel(ctx), c, rng)
		if target == "" {
			continue
		}
		c.mu.Lock()
		c.counts[f.kind]++
		c.total++
		fmt.Fprintf(c.journal, "%8.1fs %-28s %s (%.1fs)\n", at.Seconds(), f.kind, target, (time.Since(start) - at).Seconds())
		c.mu.Unlock()
	}
}

// reconcileAndRepair starts a CONTENT run of detect and repairs what it
// finds (REPLAY and TOMBSTONE start at once; removals would wait for an
// approval nobody gives, and are cancelled).
func (c *chaos) reconcileAndRepair(detect int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	octx, ocancel := operator(ctx)
	r, err := c.rec.StartReconciliationRun(octx, &fitnessv1.StartReconciliationRunRequest{
		Scope: &fitnessv1.ReconcileScope{DetectId: detect}, Depth: fitnessv1.ReconcileDepth_RECONCILE_DEPTH_CONTENT})
	ocancel()
	if err != nil {
		return // the reconcile server may be down at this moment: that is the chaos
	}
	c.runs.Add(1)
	id := r.GetRun().GetRunId()
	for ctx.Err() == nil {
		time.Sleep(500 * time.Millisecond)
		octx, ocancel := operator(ctx)
		g, err := c.rec.GetReconciliationRun(octx, &fitnessv1.GetReconciliationRunRequest{RunId: id})
		ocancel()
		if err != nil {
			continue
		}
		switch g.GetRun().GetState() {
		case fitnessv1.RunState_RUN_STATE_SUCCEEDED:
			if g.GetRun().GetDiscrepancyCount() == 0 {
				return
			}
			octx, ocancel := operator(ctx)
			created, err := c.rep.CreateRepair(octx, &fitnessv1.CreateRepairRequest{RunId: id, Reason: "chaos", RequestId: "chaos-" + id})
			ocancel()
			if err != nil {
				return
			}
			for _, rp := range created.GetRepairs() {
				c.repairs.Add(1)
				if rp.GetRequiresApproval() {
					octx, ocancel := operator(ctx)
					_, _ = c.rep.CancelRepair(octx, &fitnessv1.CancelRepairRequest{RepairId: rp.GetRepairId(), Reason: "chaos: no approver"})
					ocancel()
				}
			}
			return
		case fitnessv1.RunState_RUN_STATE_FAILED, fitnessv1.RunState_RUN_STATE_BOUNDARY_NOT_REACHED:
			return
		}
	}
}

// summary is "kind N, ..." sorted by kind.
func (c *chaos) summary() (int, int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var kinds []string
	for k := range c.counts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, c.counts[k]))
	}
	return c.total, len(kinds), strings.Join(parts, ", ")
}

func dial(addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
}
