package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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
	// Engine crashes (kill -9, then a start that recovers): at most maxCrash
	// of each engine, counted in crashes by script.
	maxCrash int
	crashes  map[string]int

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
		// The engines crash mid-load: SIGKILL, no shutdown of any kind
		// (MySQL recovers from its redo log at the next start, ClickHouse
		// drops what it had not committed as a part). The MySQL server holds
		// both shards and the control database here, so every server loses
		// its databases at once.
		{"kill -9 MySQL server", 1, func(ctx context.Context, c *chaos, _ *rand.Rand) string {
			return c.crashInBackground(ctx, mysqlEngine())
		}},
		{"kill -9 ClickHouse server", 1, func(ctx context.Context, c *chaos, _ *rand.Rand) string {
			return c.crashInBackground(ctx, clickhouseEngine())
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

// engine is a shared server of deploy/local the schedule crashes.
type engine struct {
	script  string // deploy/local script that starts it
	target  string // its name in the journal
	pidFile string
}

func mysqlEngine() engine {
	state := envOr("RS_STATE", ".local")
	if envOr("RS_MYSQL_ENGINE", "mysql") == "mariadb" {
		return engine{"mariadb.sh", "mariadbd", filepath.Join(state, "mariadb", "mariadb.pid")}
	}
	return engine{"mysql.sh", "mysqld", filepath.Join(state, "mysql", "mysql.pid")}
}

func clickhouseEngine() engine {
	return engine{"clickhouse.sh", "clickhouse-server", filepath.Join(envOr("RS_STATE", ".local"), "clickhouse", "clickhouse-server.pid")}
}

// crashInBackground kills e with SIGKILL, waits for the process to be gone,
// and starts it again with its deploy/local script (which waits until it
// answers), in the background, at most maxCrash times per engine and never
// while the same server is being restarted; "" when not injected.
func (c *chaos) crashInBackground(ctx context.Context, e engine) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashes[e.script] >= c.maxCrash || c.restarting[e.script] {
		return ""
	}
	pid, err := readPid(e.pidFile)
	if err != nil {
		c.log.Error("not crashing", "server", e.target, "err", err)
		return ""
	}
	c.crashes[e.script]++
	c.restarting[e.script] = true
	start := time.Now()
	c.restarts.Go(func() {
		if err := killAndWait(pid, 30*time.Second); err != nil {
			c.log.Error("killing", "server", e.target, "pid", pid, "err", err)
		}
		// The start is retried: a port may stay taken for a moment after
		// the process is gone.
		for attempt := 1; ; attempt++ {
			err := runScript(ctx, e.script, "start")
			if err == nil {
				break
			}
			c.log.Error("starting after the crash", "server", e.target, "attempt", attempt, "err", err)
			if attempt == 5 {
				break
			}
			time.Sleep(2 * time.Second)
		}
		c.mu.Lock()
		c.restarting[e.script] = false
		fmt.Fprintf(c.journal, "%28s %s (pid %d, killed) back after %.1fs\n", "", e.target, pid, time.Since(start).Seconds())
		c.mu.Unlock()
	})
	return fmt.Sprintf("%s (pid %d)", e.target, pid)
}

// readPid reads a server's pid file and checks that the process is alive.
func readPid(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return 0, fmt.Errorf("pid file %s: %q is not a pid", path, strings.TrimSpace(string(b)))
	}
	if err := syscall.Kill(pid, 0); err != nil {
		return 0, fmt.Errorf("pid %d of %s: %w", pid, path, err)
	}
	return pid, nil
}

// alive reports whether pid is a process that may still hold its ports and
// files. A killed server whose parent is not this process stays a zombie
// until something reaps it; it counts as gone once its other threads have
// exited too (they outlive the zombie leader for a moment, holding the
// listening sockets).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) || b[i+2] != 'Z' {
		return true
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	return err == nil && len(tasks) > 1
}

// killAndWait sends SIGKILL to pid and waits, up to timeout, until the
// process is gone.
func killAndWait(pid int, timeout time.Duration) error {
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("SIGKILL: %w", err)
	}
	deadline := time.Now().Add(timeout)
	for alive(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d still alive %s after SIGKILL", pid, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
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
