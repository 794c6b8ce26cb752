// Command chaos is the chaos soak of the whole platform on this machine: the
// server binaries as processes (results, two relays, two consumers,
// reconcile, repair, gateway) over fresh databases on the local MySQL (two
// shards, control), ClickHouse and a fresh 4-partition topic on the local
// Pulsar, a workload of records, corrections (stale ones too, which must be
// refused) and deletions over three campaigns, and a seeded schedule of
// faults: kill -9 and restart of relays, consumers, repair, reconcile and
// results; publish and consume acknowledgments lost (a proxy holds, then cuts
// the path); ClickHouse paused for the consumers; shard 1's database gone
// for every server (its proxy refuses and resets connections: both shards
// live on one MySQL server here); the real ClickHouse server and the real
// Pulsar broker stopped and started; reconciliation runs and repairs
// started while it happens.
//
// Then: every fault undone, the workload's last commands answered (each
// command is retried with its request id until the write path answers), a
// bounded wait for convergence, and an independent check — plain SQL on the
// shards and on ClickHouse, not the reconcile service — of every record
// (missing, wrong, unexpected) and of the workload's log against the shards
// (no acknowledged write lost, no refused write applied); then a CONTENT
// reconciliation of every campaign through the reconcile server must report
// zero. It prints the figures and exits non-zero on any failure, keeping its
// run directory (every server's log, the fault journal) and databases.
//
//	go run ./test/chaos -duration 3m -seed 42     (make chaos CHAOS_SEED=42)
//
// It stops and starts the shared ClickHouse and Pulsar of deploy/local: run
// it alone.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func run() error {
	defDuration, _ := time.ParseDuration(envOr("CHAOS_DURATION", "3m"))
	var seed uint64
	_, _ = fmt.Sscan(envOr("CHAOS_SEED", fmt.Sprint(time.Now().UnixNano()%1_000_000)), &seed)
	duration := flag.Duration("duration", defDuration, "how long faults are injected (CHAOS_DURATION)")
	flag.Uint64Var(&seed, "seed", seed, "seed of the workload and the fault schedule (CHAOS_SEED)")
	every := flag.Duration("fault-every", 2*time.Second, "mean time between the end of a fault and the next (CHAOS_FAULT_EVERY)")
	writers := flag.Int("writers", 8, "concurrent writers")
	brokerRestarts := flag.Int("broker-restarts", 2, "Pulsar broker restarts at most (0: none; they stop the shared broker)")
	chRestarts := flag.Int("clickhouse-restarts", 4, "ClickHouse server restarts at most (0: none; they stop the shared server)")
	engineCrashes := flag.Int("engine-crashes", 2, "kill -9 of the shared MySQL server and of the shared ClickHouse server, at most this many of each (0: none)")
	converge := flag.Duration("converge-timeout", 3*time.Minute, "longest wait for the projection to converge after the last fault")
	flag.Parse()

	ctx := context.Background()
	dir := filepath.Join(envOr("RS_STATE", ".local"), "chaos", fmt.Sprintf("seed-%d-%s", seed, time.Now().UTC().Format("150405")))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	fmt.Printf("chaos: seed %d, %s of faults every ~%s, %d writers; run directory %s\n", seed, *duration, *every, *writers, dir)

	t0 := time.Now()
	s, err := newStack(ctx, dir)
	if err != nil {
		return fmt.Errorf("starting the stack: %w", err)
	}
	fmt.Printf("stack up in %s: shards %s, %s; control %s; ClickHouse %s; topic %s\n", time.Since(t0).Round(time.Millisecond),
		s.shards[0].Name, s.shards[1].Name, s.control.Name, s.ch.Name, s.topic)
	ok := false
	defer func() {
		s.close(ok)
		if !ok {
			fmt.Printf("kept for investigation: %s (logs, faults.txt) and the databases above\n", dir)
		}
	}()

	campaigns := campaignsOf(seed)
	w, closeW, err := newWorkload(s.procs["results"].addr, campaigns, seed)
	if err != nil {
		return err
	}
	defer closeW()
	recConn, err := dial(s.procs["reconcile"].addr)
	if err != nil {
		return err
	}
	defer recConn.Close()
	repConn, err := dial(s.procs["repair"].addr)
	if err != nil {
		return err
	}
	defer repConn.Close()
	journal, err := os.Create(filepath.Join(dir, "faults.txt"))
	if err != nil {
		return err
	}
	defer journal.Close()
	c := &chaos{s: s, log: log, journal: journal, maxBreak: *brokerRestarts, maxCH: *chRestarts, maxCrash: *engineCrashes, crashes: map[string]int{}, counts: map[string]int{}, restarting: map[string]bool{},
		rec: fitnessv1.NewReconcileServiceClient(recConn), rep: fitnessv1.NewRepairServiceClient(repConn), campaigns: campaigns}

	stop, giveUp := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	for i := range *writers {
		wg.Go(func() { w.run(i, stop, giveUp) })
	}
	fctx, fcancel := context.WithTimeout(ctx, *duration)
	c.schedule(fctx, seed, *every)
	fcancel()
	c.restarts.Wait() // a server restart still under way ends first
	lastFault := time.Now()
	faultsN, kinds, byKind := c.summary()
	fmt.Printf("faults injected: %d of %d kinds (%s)\n", faultsN, kinds, byKind)

	// Undo everything: every path open, every server running and SERVING.
	for _, px := range []interface{ Resume() }{s.shard1, s.relayBroker, s.consumerBroker, s.consumerCH} {
		px.Resume()
	}
	s.shard1.Up()
	s.relayBroker.Up()
	s.consumerBroker.Up()
	s.consumerCH.Up()
	for _, name := range s.names() {
		if err := s.start(name); err != nil {
			return err
		}
	}
	for _, name := range s.names() {
		if err := s.waitServing(ctx, name, 2*time.Minute); err != nil {
			return fmt.Errorf("after the faults: %w", err)
		}
	}
	close(stop)
	answered := make(chan struct{})
	go func() { wg.Wait(); close(answered) }()
	select {
	case <-answered:
	case <-time.After(90 * time.Second):
		close(giveUp)
		<-answered
	}
	c.bg.Wait()

	// Convergence, checked independently.
	var v verdict
	var src, proj map[int64]state
	log2, doubt := w.snapshot()
	deadline := time.Now().Add(*converge)
	for {
		if src, err = shardStates(ctx, []*sql.DB{s.shards[0].DB, s.shards[1].DB}, campaigns); err == nil {
			if proj, err = projectionStates(ctx, s.ch.Conn, campaigns); err == nil {
				v = compare(src, proj, log2, doubt)
				if v.clean() {
					break
				}
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	convergedIn := time.Since(lastFault)
	if err != nil {
		return fmt.Errorf("checking: %w", err)
	}
	dups, err := duplicateRows(ctx, s.ch.Conn, campaigns)
	if err != nil {
		return err
	}

	// The reconcile server must agree: CONTENT runs of every campaign, zero.
	var recon []string
	reconTotal := int64(0)
	for _, detect := range campaigns {
		n, state, err := contentRun(ctx, c.rec, detect)
		if err != nil {
			return err
		}
		reconTotal += n
		recon = append(recon, fmt.Sprintf("%d: %s %d", detect, state, n))
	}

	fmt.Printf("commands: sent %d, acknowledged %d, refused as stale %d (expected), retried %d times, in doubt %d\n",
		w.sent.Load(), w.ackedN.Load(), w.refused.Load(), w.retries.Load(), len(v.doubtful))
	fmt.Printf("reconciliation runs %d and repairs %d started during the faults\n", c.runs.Load(), c.repairs.Load())
	fmt.Printf("records checked %d (%d deleted, %d corrected), duplicate deliveries still unmerged in ClickHouse %d\n",
		v.checked, v.deletedChecked, v.correctionsInLog, dups)
	fmt.Printf("lost = %d, wrong = %d, unexpected = %d, missing = %d, refused applied = %d, hard errors = %d\n",
		len(v.lost), len(v.wrong), len(v.unexpected), len(v.missing), len(v.refusedApplied), w.hardErrors.Load())
	fmt.Printf("converged %s after the last fault; CONTENT reconciliation: %s\n", convergedIn.Round(100*time.Millisecond), strings.Join(recon, ", "))
	for _, l := range [][]string{v.lost, v.wrong, v.unexpected, v.missing, v.refusedApplied} {
		for i, s := range l {
			if i == 5 {
				fmt.Printf("  ... %d more\n", len(l)-5)
				break
			}
			fmt.Println("  " + s)
		}
	}
	if h := w.firstHard.Load(); h != nil {
		fmt.Println("  first hard error:", h)
	}
	if !v.clean() || reconTotal != 0 || w.hardErrors.Load() != 0 || len(v.doubtful) != 0 || v.checked == 0 {
		return fmt.Errorf("seed %d FAILED (replay: make chaos CHAOS_SEED=%d CHAOS_DURATION=%s)", seed, seed, *duration)
	}
	ok = true
	fmt.Printf("chaos: seed %d passed: %d faults of %d kinds, lost = 0, wrong = 0, unexpected = 0\n", seed, faultsN, kinds)
	return nil
}

// contentRun runs a CONTENT reconciliation of a campaign to its end (again
// when it cannot reach a stable boundary) and returns its discrepancy count.
func contentRun(ctx context.Context, rec fitnessv1.ReconcileServiceClient, detect int64) (int64, string, error) {
	var last *fitnessv1.ReconciliationRun
	for attempt := 0; attempt < 5; attempt++ {
		octx, cancel := operator(ctx)
		r, err := rec.StartReconciliationRun(octx, &fitnessv1.StartReconciliationRunRequest{
			Scope: &fitnessv1.ReconcileScope{DetectId: detect}, Depth: fitnessv1.ReconcileDepth_RECONCILE_DEPTH_CONTENT})
		cancel()
		if err != nil {
			return 0, "", fmt.Errorf("starting a reconciliation of %d: %w", detect, err)
		}
		id := r.GetRun().GetRunId()
		for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
			octx, cancel := operator(ctx)
			g, err := rec.GetReconciliationRun(octx, &fitnessv1.GetReconciliationRunRequest{RunId: id})
			cancel()
			if err != nil {
				continue
			}
			last = g.GetRun()
			if s := last.GetState(); s == fitnessv1.RunState_RUN_STATE_SUCCEEDED || s == fitnessv1.RunState_RUN_STATE_FAILED ||
				s == fitnessv1.RunState_RUN_STATE_BOUNDARY_NOT_REACHED {
				break
			}
		}
		if last.GetState() == fitnessv1.RunState_RUN_STATE_SUCCEEDED {
			return last.GetDiscrepancyCount(), "SUCCEEDED", nil
		}
		time.Sleep(2 * time.Second)
	}
	return 0, "", fmt.Errorf("no reconciliation of %d succeeded (last %s: %s)", detect, last.GetState(), last.GetErrorMessage())
}
