// Command schedule measures one full cycle of the reconciliation scheduler
// over one campaign on the local MySQL or MariaDB (two shards) and
// ClickHouse: the whole-campaign run at -depth, then a CONTENT sample whose
// window is every bucket (period = interval), each bucket drilled record by
// record — the most a cycle ever does to a campaign. It prints each run's
// wall time, rows compared, rows/s, and the CPU seconds spent by this
// process and by the database servers (every mysqld/mariadbd and
// clickhouse-server process on the machine, so other load counts too).
//
//	go run ./bench/schedule -rows 1000000
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

const campaign = 30001

func main() {
	rows := flag.Int("rows", 1_000_000, "results in the campaign (over two shards)")
	depth := flag.String("depth", "VERSIONS", "depth of the whole-campaign run")
	flag.Parse()
	if err := run(context.Background(), *rows, *depth); err != nil {
		fmt.Fprintln(os.Stderr, "schedule bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, n int, depthName string) error {
	depth, err := reconcile.ParseDepth(depthName)
	if err != nil {
		return err
	}
	var src reconcile.MySQLSource
	for range 2 {
		d, drop, err := infratest.CreateMySQLDatabase(ctx, "rs_bench", schema.Shard, 8)
		if err != nil {
			return err
		}
		defer drop()
		src.Shards = append(src.Shards, d.DB)
	}
	ch, dropCH, err := infratest.CreateClickHouseDatabase(ctx, "rs_bench", true)
	if err != nil {
		return err
	}
	defer dropCH()
	control, dropControl, err := infratest.CreateMySQLDatabase(ctx, "rs_bench", schema.Control, 4)
	if err != nil {
		return err
	}
	defer dropControl()

	fmt.Printf("loading %d results over two shards and the projection...\n", n)
	t0 := time.Now()
	proj := chstore.NewProjection(ch.Conn)
	var chRows []chstore.Row
	for start := 0; start < n; start += 2000 {
		end := min(start+2000, n)
		var sb [2]strings.Builder
		var args [2][]any
		for i := start; i < end; i++ {
			id := int64(1_000_000 + i)
			r := chstore.Row{DetectID: campaign, DataID: id, UserID: 1, ProjectID: 3, SchoolID: id % 7, Grade: 5, Version: 1,
				Result: fmt.Sprintf("%d.%03d", 1+id%3, id%1000), Unit: "m", EventID: fmt.Sprintf("fitness-result-%d-v1", id), ShardID: "s"}
			s := int(id % 2)
			if sb[s].Len() == 0 {
				sb[s].WriteString(`INSERT INTO fitness_result (data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time) VALUES `)
			} else {
				sb[s].WriteString(",")
			}
			sb[s].WriteString("(?, ?, 1, 3, ?, 5, ?, 'm', 1, 0, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))")
			args[s] = append(args[s], id, campaign, r.SchoolID, r.Result)
			chRows = append(chRows, r)
		}
		for s := range 2 {
			if sb[s].Len() > 0 {
				if _, err := src.Shards[s].ExecContext(ctx, sb[s].String(), args[s]...); err != nil {
					return err
				}
			}
		}
		if len(chRows) >= 100_000 || end == n {
			if err := proj.Insert(ctx, chRows); err != nil {
				return err
			}
			chRows = chRows[:0]
		}
	}
	if err := ch.Conn.Exec(ctx, "OPTIMIZE TABLE fitness_result_versions FINAL"); err != nil {
		return err
	}
	fmt.Printf("loaded in %s\n", time.Since(t0).Round(time.Second))

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	store := reconcile.NewRunStore(control.DB)
	rcfg := reconcile.DefaultRunnerConfig()
	rcfg.Grace = 0
	rn := reconcile.NewRunner(log, rcfg, src, src, reconcile.ClickHouseTarget{Conn: ch.Conn}, store, nil)
	wctx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	go func() { _ = rn.Run(wctx) }() // the scheduler submits its runs to the runner's worker
	// period = interval: the first cycle's sample window is every bucket.
	scfg := reconcile.SchedulerConfig{Interval: time.Hour, Period: time.Hour, Depth: depth, MaxRunsPerCycle: 10, LeaseTTL: time.Minute}
	s, err := reconcile.NewScheduler(log, scfg, rn, store, reconcile.NewScheduleStore(control.DB), src, nil, "bench")
	if err != nil {
		return err
	}
	cpu0, db0 := selfCPU(), serverCPU()
	c0 := time.Now()
	if err := s.Cycle(ctx); err != nil {
		return err
	}
	wall := time.Since(c0)
	cpu, db := selfCPU()-cpu0, serverCPU()-db0
	runs, _, err := store.List(ctx, campaign, 0, 10)
	if err != nil {
		return err
	}
	var total int64
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		d := r.Ended.Sub(r.Created)
		total += r.RowsCompared
		fmt.Printf("run %s depth %d sample %.3f: %s, %d discrepancies, %d rows compared in %s = %.0f rows/s (%s)\n", r.ID[:8], r.Depth, r.SampleRate,
			r.State, r.Discrepancies, r.RowsCompared, d.Round(time.Millisecond), float64(r.RowsCompared)/d.Seconds(), strings.TrimSpace(r.Message))
	}
	fmt.Printf("SUMMARY full cycle over %d records: %s wall, %d rows compared (both sides, both runs) = %.0f rows/s; CPU: bench process %.1fs, database servers %.1fs (%.0f%% of one core over the cycle)\n",
		n, wall.Round(time.Millisecond), total, float64(total)/wall.Seconds(), cpu.Seconds(), db.Seconds(), 100*(cpu+db).Seconds()/wall.Seconds())
	return nil
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU sums the CPU time of every database server process.
func serverCPU() time.Duration {
	var total time.Duration
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		comm, err := os.ReadFile(filepath.Join(d, "comm"))
		if err != nil {
			continue
		}
		switch strings.TrimSpace(string(comm)) {
		case "mysqld", "mariadbd", "clickhouse-serv", "clickhouse-server", "clickhouse":
		default:
			continue
		}
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(u+s) * time.Second / 100 // USER_HZ
	}
	return total
}
