package main

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"time"

	"github.com/resultsync/resultsync/bench/internal/benchkit"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/write/resultstore"
)

// bucketTriggers are the triggers that keep campaign_bucket (shard
// migrations 0003 and 0007); the deletion-record and purged-id triggers
// (0004, 0005) are not part of the bucket aggregates and stay.
var bucketTriggers = []string{"fitness_result_bucket_ins", "fitness_result_bucket_upd", "fitness_result_bucket_del"}

// triggerRecords is how many results each client corrects in turn in one
// phase (as bench/writepath).
const triggerRecords = 8

// triggerCostResult is what the write-cost phases measured: commits/s of
// each phase, with (A) and without (B) the bucket triggers.
type triggerCostResult struct {
	with, without []float64
	// rounds is each A B B A round's with/without: (A1 + A2) / (B1 + B2).
	rounds []float64
	// cost is the share of commits/s the triggers take: 1 - the median of
	// the rounds' with/without.
	cost float64
}

// triggerCost measures what the campaign_bucket triggers cost the write
// path: two scratch shard databases migrated as every shard (schema.Shard,
// so A has the bucket triggers exactly as a shard has them), B the same
// with the three bucket triggers dropped (only on this scratch copy, never
// on a database anything else uses), on the same server in the same run;
// clients connections commit a correction's statements in one round trip
// (benchkit.RawBatch with the outbox insert, on a pool opened as the
// results service opens its own) for phase each, in the order A B B A,
// rounds times, each phase after a quarter of its length unmeasured (a linear drift of the shared machine's load falls equally on
// both sides of a round). The cost is 1 - the median over the rounds of
// (A1 + A2) / (B1 + B2): the share of commits/s the triggers take.
func triggerCost(ctx context.Context, clients int, phase time.Duration, rounds int) (triggerCostResult, error) {
	var res triggerCostResult
	var dbs [2]*sql.DB
	for i := range dbs {
		d, drop, err := infratest.CreateMySQLDatabase(ctx, "rs_bench", schema.Shard, 2)
		if err != nil {
			return res, err
		}
		defer drop()
		db, err := mysqldb.Open(ctx, d.DSN, resultstore.PoolOptions(clients))
		if err != nil {
			return res, fmt.Errorf("opening the scratch shard %s: %w", d.Name, err)
		}
		defer db.Close()
		dbs[i] = db
	}
	for _, t := range bucketTriggers {
		if _, err := dbs[1].ExecContext(ctx, "DROP TRIGGER "+t); err != nil {
			return res, fmt.Errorf("dropping %s on the scratch copy: %w", t, err)
		}
	}
	var left int
	if err := dbs[1].QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME LIKE 'fitness_result_bucket%'").Scan(&left); err != nil {
		return res, err
	}
	if left != 0 {
		return res, fmt.Errorf("%d bucket triggers left on the scratch copy", left)
	}

	n := 0 // phases so far: each phase corrects its own records
	measure := func(db *sql.DB) (float64, error) {
		n++
		base := int64(2_000_000_000 + 1_000_000*n)
		for c := range clients {
			for k := range triggerRecords {
				if _, err := db.ExecContext(ctx, `INSERT INTO fitness_result (data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
					VALUES (?, ?, 1, 3, 1, 5, 2.21, 'm', 1, 0, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`, base+int64(1000*c+k), campaign); err != nil {
					return 0, fmt.Errorf("seeding the write-cost phase: %w", err)
				}
			}
		}
		return benchkit.Measure(clients, phase, phase/4, func(c, i int) error {
			return benchkit.RawBatch(ctx, db, base+int64(1000*c+i%triggerRecords), i, true)
		})
	}
	for range rounds {
		for _, b := range []int{0, 1, 1, 0} {
			r, err := measure(dbs[b])
			if err != nil {
				return res, err
			}
			if b == 0 {
				res.with = append(res.with, r)
			} else {
				res.without = append(res.without, r)
			}
		}
	}
	res.rounds, res.cost = benchkit.WriteCost(res.with, res.without)
	return res, nil
}

func medianOf(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// summary prints the write cost's lines: what it measured and its SUMMARY
// line, judged against target (the largest share of commits/s the triggers
// may take, docs/capacity.md).
func (r triggerCostResult) summary(clients int, phase time.Duration, target float64) {
	fmt.Printf("write cost of the bucket triggers (%d clients, a correction in one round trip, phases of %s in the order A B B A x %d):\n", clients, phase, len(r.with)/2)
	fmt.Printf("  A, with the campaign_bucket triggers:    %s commits/s (median %.0f)\n", rates(r.with), medianOf(r.with))
	fmt.Printf("  B, the same shard without them:          %s commits/s (median %.0f)\n", rates(r.without), medianOf(r.without))
	var rr []float64
	for _, x := range r.rounds {
		rr = append(rr, 100*x)
	}
	fmt.Printf("  A/B per round: %s%%; the triggers cost %.1f%% of the commits/s, 1 - the median round (target <= %.0f%%)\n", rates(rr), 100*r.cost, 100*target)
	benchkit.Summary("reconcile", fmt.Sprintf("write cost of the bucket triggers, %d clients, A B B A x %d", clients, len(r.with)/2),
		fmt.Sprintf("%.1f%% fewer commits/s", 100*r.cost), fmt.Sprintf("%.0f commits/s without", medianOf(r.without)),
		fmt.Sprintf("%.1f%%", 100*(1-r.cost)), fmt.Sprintf("<= %.0f%% fewer", 100*target), benchkit.Verdict(r.cost <= target))
}

func rates(v []float64) string {
	s := ""
	for i, x := range v {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%.0f", x)
	}
	return s
}
