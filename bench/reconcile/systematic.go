package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// systematic loads a campaign of n results whose every projection row is
// wrong (a mapping defect: right id and version, wrong school) and runs one
// stored CONTENT reconciliation through the runner the reconcile server
// uses, storing every discrepancy; it prints rows/s and the peak resident
// memory of this process during the run.
func systematic(ctx context.Context, n int) error {
	src, ch, drop, err := databases(ctx)
	if err != nil {
		return err
	}
	defer drop()
	control, dropControl, err := infratest.CreateMySQLDatabase(ctx, "rs_bench", schema.Control, 8)
	if err != nil {
		return err
	}
	defer dropControl()
	proj := chstore.NewProjection(ch.Conn)

	fmt.Printf("\nsystematic defect: loading %d results, every one wrong in the projection...\n", n)
	t0 := time.Now()
	if err := load(ctx, src.Shards, proj, n, 1000); err != nil {
		return err
	}
	fmt.Printf("loaded in %s\n", time.Since(t0).Round(time.Second))

	runs := reconcile.NewRunStore(control.DB)
	cfg := reconcile.DefaultRunnerConfig()
	cfg.Grace = 0
	runner := reconcile.NewRunner(slog.New(slog.NewTextHandler(io.Discard, nil)), cfg, src, src, reconcile.ClickHouseTarget{Conn: ch.Conn}, runs, nil)
	r, err := runs.Create(ctx, reconcile.Scope{DetectID: campaign}, reconcile.DepthContent, 0, "bench")
	if err != nil {
		return err
	}

	watch := infratest.StartMemoryWatch(50 * time.Millisecond)
	start := time.Now()
	r = runner.Execute(ctx, r)
	elapsed := time.Since(start)
	mem := watch.Stop()
	if r.State != reconcile.StateSucceeded {
		return fmt.Errorf("run ended %s: %s %s", r.State, r.Error, r.Message)
	}
	var stored int64
	if err := control.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM discrepancy WHERE run_id = ?", r.ID).Scan(&stored); err != nil {
		return err
	}
	fmt.Printf("\nsystematic defect: CONTENT run over %d results, all wrong, %s + %s on one 2-core machine\n", n, infratest.MySQLEngine(), infratest.ClickHouseEngine())
	fmt.Printf("%-28s %10s %14s %16s %22s %18s\n", "case", "time", "records/s", "discrepancies", "RSS before/peak (MiB)", "Go heap peak (MiB)")
	fmt.Printf("%-28s %10s %14.0f %16d %22s %18.1f\n", "every result wrong", elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), stored,
		fmt.Sprintf("%.1f / %.1f", mem.Before, mem.Peak), mem.HeapPeak)
	return nil
}
