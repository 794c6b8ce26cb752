package reconcileapi_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/reconcileapitest"
)

// defectRecords is the size of the whole-campaign defect (RS_RECONCILE_DEFECT_RECORDS).
func defectRecords(t *testing.T) int {
	n, err := strconv.Atoi(infratest.Env("RS_RECONCILE_DEFECT_RECORDS", "200000"))
	if err != nil || n < 1000 {
		t.Fatalf("RS_RECONCILE_DEFECT_RECORDS must be a number >= 1000")
	}
	return n
}

// loadDefect writes n records to the shards through multi-row statements
// (the shards' triggers keep the bucket aggregates), and each record to the
// projection with the same id and version and the wrong school: a mapping
// defect over the whole campaign. The two shards and the projection are
// loaded concurrently; nothing of it is kept in memory.
func (f *fixture) loadDefect(t *testing.T, n int) {
	t.Helper()
	ctx := context.Background()
	record := func(i int) (id, school int64, result string) {
		return int64(1_000_000 + i), int64(10 + i%20), fmt.Sprintf("%d.%03d", 1+i%3, i%1000)
	}
	var g group
	for s := range 2 {
		g.Go(func() error {
			const step = 4000
			for start := 0; start < n; start += step {
				var sb strings.Builder
				var args []any
				for i := start; i < min(start+step, n); i++ {
					id, school, result := record(i)
					if int(school%2) != s {
						continue
					}
					if sb.Len() == 0 {
						sb.WriteString(`INSERT INTO fitness_result (data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time) VALUES `)
					} else {
						sb.WriteString(",")
					}
					sb.WriteString("(?, 10001, 4, 3, ?, 5, ?, 'm', 1, 0, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))")
					args = append(args, id, school, result)
				}
				if _, err := f.shards[s].DB.ExecContext(ctx, sb.String(), args...); err != nil {
					return err
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		var rows []chstore.Row
		for i := range n {
			id, school, result := record(i)
			rows = append(rows, chstore.Row{DetectID: 10001, DataID: id, UserID: 4, ProjectID: 3, SchoolID: school + 1000, Grade: 5,
				Version: 1, Result: result, Unit: "m", EventID: fmt.Sprintf("fitness-result-%d-v1", id), ShardID: "s"})
			if len(rows) == 50_000 || i == n-1 {
				if err := f.proj.Insert(ctx, rows); err != nil {
					return err
				}
				rows = rows[:0]
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestWholeCampaignDefect: every record of a 200,000-record campaign is
// wrong in the projection (a mapping defect: right id and version, wrong
// school). A CONTENT run completes, stores every CONTENT_MISMATCH in batches
// and lists them all through ListDiscrepancies, page by page, while the
// resident memory of the process that runs the reconcile service stays
// bounded: the comparison holds one bucket step (reconcile.ChunkRows
// records per side) at a time, never the discrepancies.
func TestWholeCampaignDefect(t *testing.T) {
	n := defectRecords(t)
	cfg := fastConfig()
	cfg.Buckets = reconcile.StoredBuckets // the aggregates the shards keep at write time
	f := newFixture(t, cfg)
	ctx := context.Background()
	loadStart := time.Now()
	f.loadDefect(t, n)
	t.Logf("loaded %d records (shards and projection) in %s", n, time.Since(loadStart).Round(time.Millisecond))

	watch := infratest.StartMemoryWatch(20 * time.Millisecond)
	heapBefore := heapMiB()
	runStart := time.Now()
	runID := reconcileapitest.Start(t, f.client, context.Background, &fitnessv1.ReconcileScope{DetectId: 10001}, fitnessv1.ReconcileDepth_RECONCILE_DEPTH_CONTENT)
	seen := f.watchFor(t, runID, 10*time.Minute)
	runTime := time.Since(runStart)
	mem := watch.Stop()
	final := seen[len(seen)-1]
	if final.GetState() != fitnessv1.RunState_RUN_STATE_SUCCEEDED || final.GetDiscrepancyCount() != int64(n) || final.GetInFlightCount() != 0 {
		t.Fatalf("final run = %v; want SUCCEEDED with %d discrepancies", final, n)
	}
	// Progress was streamed while the discrepancies were stored.
	var partial int
	for _, r := range seen {
		if c := r.GetDiscrepancyCount(); c > 0 && c < int64(n) {
			partial++
		}
	}
	if partial == 0 {
		t.Errorf("the watch showed no progress between 0 and %d stored discrepancies (%d updates)", n, len(seen))
	}

	// Every discrepancy, page by page, in data_id order.
	listStart := time.Now()
	var total int
	last := int64(0)
	token := ""
	for {
		page, err := f.client.ListDiscrepancies(ctx, &fitnessv1.ListDiscrepanciesRequest{RunId: final.GetRunId(), PageSize: 1000, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range page.GetDiscrepancies() {
			if d.GetClass() != fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_CONTENT_MISMATCH || d.GetDataId() <= last ||
				d.GetSource().GetVersion() != 1 || d.GetTarget().GetVersion() != 1 {
				t.Fatalf("discrepancy after %d = %v", last, d)
			}
			last = d.GetDataId()
		}
		total += len(page.GetDiscrepancies())
		if token = page.GetNextPageToken(); token == "" {
			break
		}
	}
	if total != n {
		t.Errorf("listed %d discrepancies, want %d", total, n)
	}
	runtime.GC()
	listed := infratest.ProcStatusMiB("VmRSS")
	t.Logf("CONTENT run over %d records, all wrong: %s (%.0f records/s), %d CONTENT_MISMATCH listed in %s; "+
		"resident memory of the process serving the reconcile service: %.1f MiB before the run, peak %.1f MiB during it (+%.1f MiB), %.1f MiB after it, %.1f MiB after listing; "+
		"Go heap %.1f MiB before, peak %.1f MiB sampled",
		n, runTime.Round(time.Millisecond), float64(n)/runTime.Seconds(), total, time.Since(listStart).Round(time.Millisecond),
		mem.Before, mem.Peak, mem.Peak-mem.Before, mem.After, listed, heapBefore, mem.HeapPeak)
	// Holding the discrepancies would take well over 200 B each (two records
	// with canonical strings, plus the row maps around them); the run holds
	// one bucket step. The bound leaves room for the race detector's shadow
	// memory and the gRPC and database buffers, not for the discrepancies.
	if mem.Before > 0 && mem.Peak-mem.Before > 256 {
		t.Errorf("resident memory grew by %.1f MiB during the run (%.1f -> %.1f MiB); want at most 256 MiB", mem.Peak-mem.Before, mem.Before, mem.Peak)
	}
}

func heapMiB() float64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}

// group runs functions concurrently and keeps the first error.
type group struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

func (g *group) Go(fn func() error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := fn(); err != nil {
			g.mu.Lock()
			g.errs = append(g.errs, err)
			g.mu.Unlock()
		}
	}()
}

func (g *group) Wait() error {
	g.wg.Wait()
	return errors.Join(g.errs...)
}
