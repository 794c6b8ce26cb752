// Command reconcile measures first what the bucket aggregates cost the
// writes (commits/s of a correction with and without the campaign_bucket
// triggers, on scratch shard databases of the same server, phases A B B A),
// then a CONTENT reconciliation of one campaign on the
// local MySQL or MariaDB (two shards) and ClickHouse, beside a baseline that streams
// every row of both sides into Go and compares them there, in one run; then
// the systematic-defect case: a campaign whose every result is wrong in
// ClickHouse, reconciled by a stored run (the reconcile server's runner:
// every discrepancy stored in the control database), with its rows/s and
// the process's peak resident memory.
//
//	go run ./bench/reconcile -rows 1000000 -inject 20 -defect-rows 1000000
//	go run ./bench/reconcile -rows 0 -defect-rows 1000000 -trigger-phase 0   # the systematic defect only
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/resultsync/resultsync/bench/internal/benchkit"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

const campaign = 20001

func main() {
	rows := flag.Int("rows", 1_000_000, "results in the campaign (over two shards)")
	inject := flag.Int("inject", 20, "discrepancies injected")
	buckets := flag.Int("buckets", 1024, "buckets")
	defectRows := flag.Int("defect-rows", 1_000_000, "results of the systematic-defect campaign, all wrong (0 skips it)")
	triggerPhase := flag.Duration("trigger-phase", time.Second, "each phase of the bucket triggers' write cost (0 skips it)")
	triggerRounds := flag.Int("trigger-rounds", 8, "A B B A rounds of the write cost's phases (short phases, many rounds: the load of a shared machine moves within seconds)")
	triggerClients := flag.Int("trigger-clients", 16, "connections committing in the write cost's phases")
	triggerTarget := flag.Float64("trigger-target", 0.20, "the largest share of commits/s the bucket triggers may cost (docs/capacity.md)")
	flag.Parse()
	var cost *triggerCostResult
	if *triggerPhase > 0 && *triggerRounds > 0 {
		r, err := triggerCost(context.Background(), *triggerClients, *triggerPhase, *triggerRounds)
		if err != nil {
			fmt.Fprintln(os.Stderr, "reconcile bench (write cost of the bucket triggers):", err)
			os.Exit(1)
		}
		r.summary(*triggerClients, *triggerPhase, *triggerTarget)
		cost = &r
	}
	if *rows > 0 {
		if err := run(context.Background(), *rows, *inject, *buckets, cost); err != nil {
			fmt.Fprintln(os.Stderr, "reconcile bench:", err)
			os.Exit(1)
		}
	}
	if *defectRows > 0 {
		if err := systematic(context.Background(), *defectRows); err != nil {
			fmt.Fprintln(os.Stderr, "reconcile bench (systematic defect):", err)
			os.Exit(1)
		}
	}
}

// databases creates two fresh shards and a fresh projection database;
// drop removes whatever was created.
func databases(ctx context.Context) (src reconcile.MySQLSource, ch *infratest.ClickHouseDatabase, drop func(), err error) {
	var drops []func()
	drop = func() {
		for _, d := range drops {
			d()
		}
	}
	for range 2 {
		d, dropShard, err := infratest.CreateMySQLDatabase(ctx, "rs_bench", schema.Shard, 8)
		if err != nil {
			drop()
			return src, nil, nil, err
		}
		drops = append(drops, dropShard)
		src.Shards = append(src.Shards, d.DB)
	}
	ch, dropCH, err := infratest.CreateClickHouseDatabase(ctx, "rs_bench", true)
	if err != nil {
		drop()
		return src, nil, nil, err
	}
	dropShards := drop
	return src, ch, func() { dropCH(); dropShards() }, nil
}

func run(ctx context.Context, n, inject, nb int, cost *triggerCostResult) error {
	src, ch, drop, err := databases(ctx)
	if err != nil {
		return err
	}
	defer drop()
	conn := ch.Conn
	proj := chstore.NewProjection(conn)
	dst := reconcile.ClickHouseTarget{Conn: conn}

	fmt.Printf("loading %d results over two shards and the projection...\n", n)
	t0 := time.Now()
	if err := load(ctx, src.Shards, proj, n, 0); err != nil {
		return err
	}
	// Injected discrepancies, spread over the id range: every class.
	step := n / (inject + 1)
	var injected []int64
	for k := 1; k <= inject; k++ {
		id := int64(1_000_000 + k*step)
		db := src.Shards[shardOf(id)]
		var err error
		switch k % 4 {
		case 0: // stale target: source corrected
			_, err = db.ExecContext(ctx, "UPDATE fitness_result SET version = version + 1, result = 3.333 WHERE data_id = ?", id)
		case 1: // missing in target: source-only record
			id = int64(50_000_000 + k)
			_, err = src.Shards[shardOf(id)].ExecContext(ctx, `INSERT INTO fitness_result (data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
				VALUES (?, ?, 1, 3, ?, 5, 2.21, 'm', 1, 0, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`, id, campaign, shardOf(id))
		case 2: // deletion not applied
			_, err = db.ExecContext(ctx, "UPDATE fitness_result SET version = version + 1, is_deleted = 1 WHERE data_id = ?", id)
		case 3: // same version, wrong school in the projection
			err = proj.Insert(ctx, []chstore.Row{row(id, 1, 999)})
		}
		if err != nil {
			return err
		}
		injected = append(injected, id)
	}
	fmt.Printf("loaded in %s; %d discrepancies injected\n", time.Since(t0).Round(time.Second), len(injected))

	// Let ClickHouse finish the background merges of the load first, as a
	// campaign that is reconciled has been at rest for a while.
	for i := 0; i < 600; i++ {
		var merges uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM system.merges").Scan(&merges); err != nil || merges == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The pushed-down comparison (median of three passes).
	var res reconcile.Result
	var confirmed []reconcile.Discrepancy
	var passes []time.Duration
	for range 3 {
		start := time.Now()
		res, err = reconcile.Compare(ctx, src, dst, reconcile.Scope{DetectID: campaign}, reconcile.DepthContent, nb, nil, nil)
		if err != nil {
			return err
		}
		confirmed, err = reconcile.Recheck(ctx, src, dst, reconcile.Scope{DetectID: campaign}, reconcile.DepthContent, res.Discrepancies)
		if err != nil {
			return err
		}
		passes = append(passes, time.Since(start))
	}
	pushed := median(passes)

	// Where the time goes (one more pass, phase by phase).
	sc := reconcile.Scope{DetectID: campaign}
	t1 := time.Now()
	if _, err := src.Buckets(ctx, sc, nb); err != nil {
		return err
	}
	t2 := time.Now()
	if _, err := dst.Buckets(ctx, sc, nb); err != nil {
		return err
	}
	t3 := time.Now()
	var drill []int
	for _, d := range res.Discrepancies {
		drill = append(drill, int(d.DataID%int64(nb)))
	}
	if _, err := src.Records(ctx, sc, nb, drill, nil); err != nil {
		return err
	}
	t4 := time.Now()
	if _, err := dst.Records(ctx, sc, nb, drill, nil); err != nil {
		return err
	}
	t5 := time.Now()
	fmt.Printf("phases: source buckets %s, target buckets %s, source drill-down %s, target drill-down %s\n",
		t2.Sub(t1).Round(time.Millisecond), t3.Sub(t2).Round(time.Millisecond), t4.Sub(t3).Round(time.Millisecond), t5.Sub(t4).Round(time.Millisecond))

	// Baseline: stream every row of both sides into Go and compare (median of three).
	var baseFound int
	passes = passes[:0]
	for range 3 {
		start := time.Now()
		if baseFound, err = baseline(ctx, src, conn); err != nil {
			return err
		}
		passes = append(passes, time.Since(start))
	}
	base := median(passes)

	found := map[int64]bool{}
	for _, d := range confirmed {
		found[d.DataID] = true
	}
	missed := 0
	for _, id := range injected {
		if !found[id] {
			missed++
		}
	}
	records := float64(n)
	fmt.Printf("\nCONTENT reconciliation of %d results (2 shards, %d buckets), %s + ClickHouse 18.16 on one 2-core machine, median of 3 passes\n", n, nb, infratest.MySQLEngine())
	fmt.Printf("%-46s %10s %16s %18s\n", "method", "time", "records/s", "rows compared/s")
	fmt.Printf("%-46s %10s %16.0f %18.0f\n", "bucket digests pushed down + drill-down", pushed.Round(time.Millisecond), records/pushed.Seconds(), 2*records/pushed.Seconds())
	fmt.Printf("%-46s %10s %16.0f %18.0f\n", "baseline: stream both sides into Go", base.Round(time.Millisecond), records/base.Seconds(), 2*records/base.Seconds())
	fmt.Printf("speed-up %.1fx (target >= 5x); found %d of %d injected (baseline found %d), %d other discrepancies\n",
		base.Seconds()/pushed.Seconds(), len(injected)-missed, len(injected), baseFound, len(confirmed)-(len(injected)-missed))
	if cost != nil {
		fmt.Printf("reconcile speed-up %.1fx; write cost of the bucket triggers: %.1f%% fewer commits/s\n", base.Seconds()/pushed.Seconds(), 100*cost.cost)
	}
	// The speed-up counts only if the pushed-down run found every injected
	// discrepancy.
	benchkit.Summary("reconcile", fmt.Sprintf("CONTENT pushed down, %d results", n), fmt.Sprintf("%.0f records/s", records/pushed.Seconds()),
		fmt.Sprintf("%.0f records/s streamed", records/base.Seconds()), fmt.Sprintf("%.1fx", base.Seconds()/pushed.Seconds()), ">= 5x, every injected discrepancy found",
		benchkit.Verdict(base >= 5*pushed, benchkit.Problem("injected discrepancies missed", int64(missed), 0)))
	return nil
}

func shardOf(id int64) int { return int(id % 2) }

func row(id, version, school int64) chstore.Row {
	return chstore.Row{DetectID: campaign, DataID: id, UserID: 1, ProjectID: 3, SchoolID: school, Grade: 5, Version: version,
		Result: fmt.Sprintf("%d.%03d", 1+id%3, id%1000), Unit: "m", EventID: fmt.Sprintf("fitness-result-%d-v%d", id, version), ShardID: "s"}
}

// load writes n results to the shards and to the projection, identical but
// for the projection's school, moved by defect (0: none; else a mapping
// defect that makes every result wrong).
func load(ctx context.Context, shards []*sql.DB, proj *chstore.Projection, n int, defect int64) error {
	var chRows []chstore.Row
	for start := 0; start < n; start += 2000 {
		end := min(start+2000, n)
		var sb [2]strings.Builder
		var args [2][]any
		for i := start; i < end; i++ {
			id := int64(1_000_000 + i)
			r := row(id, 1, id%2)
			s := shardOf(id)
			if sb[s].Len() == 0 {
				sb[s].WriteString(`INSERT INTO fitness_result (data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time) VALUES `)
			} else {
				sb[s].WriteString(",")
			}
			sb[s].WriteString("(?, ?, 1, 3, ?, 5, ?, 'm', 1, 0, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))")
			args[s] = append(args[s], id, campaign, r.SchoolID, r.Result)
			r.SchoolID += defect
			chRows = append(chRows, r)
		}
		for s := range 2 {
			if sb[s].Len() > 0 {
				if _, err := shards[s].ExecContext(ctx, sb[s].String(), args[s]...); err != nil {
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
	return nil
}

type state struct {
	version int64
	deleted bool
	digest  uint64
}

// baseline streams (id, version, deleted, digest) of every record from both
// sides into Go and compares them there; it returns how many differ.
func baseline(ctx context.Context, src reconcile.MySQLSource, conn driver.Conn) (int, error) {
	source := map[int64]state{}
	for _, db := range src.Shards {
		rows, err := db.QueryContext(ctx, "SELECT data_id, version, is_deleted, content_digest FROM fitness_result WHERE detect_id = ?", campaign)
		if err != nil {
			return 0, err
		}
		for rows.Next() {
			var id int64
			var st state
			if err := rows.Scan(&id, &st.version, &st.deleted, &st.digest); err != nil {
				rows.Close()
				return 0, err
			}
			source[id] = st
		}
		if err := rows.Close(); err != nil {
			return 0, err
		}
	}
	rows, err := conn.Query(ctx, "SELECT data_id, version, is_deleted, content_digest FROM fitness_result_versions FINAL WHERE detect_id = ?", int64(campaign))
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	diff := 0
	seen := map[int64]bool{}
	for rows.Next() {
		var id int64
		var st state
		var del uint8
		if err := rows.Scan(&id, &st.version, &del, &st.digest); err != nil {
			return 0, err
		}
		st.deleted = del == 1
		seen[id] = true
		if s, ok := source[id]; !ok || s != st {
			diff++
		}
	}
	for id := range source {
		if !seen[id] {
			diff++
		}
	}
	return diff, rows.Err()
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
