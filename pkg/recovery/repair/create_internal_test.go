package repair

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// noEditor is the TargetEditor of tests whose repairs only replay.
type noEditor struct{}

func (noEditor) Origins(context.Context, int64, int64) ([]chstore.Row, error) { return nil, nil }
func (noEditor) RemoveAbove(context.Context, int64, int64, int64) (int64, error) {
	return 0, errors.New("no removals here")
}

// createEnv is a control database with a SUCCEEDED run of n
// MISSING_IN_TARGET discrepancies, and a Manager creating repairs of it in
// batches of batch items.
type createEnv struct {
	db    *sql.DB
	store *Store
	mgr   *Manager
	run   reconcile.Run
}

func newCreateEnv(t *testing.T, n, batch int, lease time.Duration) *createEnv {
	t.Helper()
	db := infratest.NewMySQLDatabase(t, schema.Control).DB
	ctx := context.Background()
	runs := reconcile.NewRunStore(db)
	run, err := runs.Create(ctx, reconcile.Scope{DetectID: 10001}, reconcile.DepthContent, 0, "otto")
	if err != nil {
		t.Fatal(err)
	}
	ds := make([]reconcile.Discrepancy, n)
	for i := range ds {
		id := int64(500000 + i)
		ds[i] = reconcile.Discrepancy{Class: reconcile.MissingInTarget, DataID: id, Source: &reconcile.Record{DataID: id, Version: 1, DetectID: 10001}}
	}
	for i := 0; i < n; i += 5000 {
		if err := runs.AddDiscrepancies(ctx, run.ID, 10001, ds[i:min(i+5000, n)]); err != nil {
			t.Fatal(err)
		}
	}
	run.State, run.Discrepancies, run.Ended = reconcile.StateSucceeded, int64(n), time.Now()
	if err := runs.Update(ctx, run); err != nil {
		t.Fatal(err)
	}
	store := NewStore(db)
	mgr, err := NewManager(ManagerConfig{CreateBatch: batch, CreateLease: lease}, Deps{Store: store, Runs: runs, Editor: noEditor{},
		Source: reconcile.MySQLSource{}, Target: reconcile.ClickHouseTarget{}, ShardOf: func(int64) string { return "shard-0" }})
	if err != nil {
		t.Fatal(err)
	}
	return &createEnv{db: db, store: store, mgr: mgr, run: run}
}

// count runs a COUNT query on another connection than the creator's.
func (e *createEnv) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	if err := e.db.QueryRowContext(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// CreateRepair of thousands of items commits them in bounded batches: after
// each batch the items so far are visible to other connections (committed)
// while the repair is PLANNING, which the executor does not run; the last
// commit moves it to EXECUTING with every item, numbered 1..n once.
func TestCreateCommitsItemsInBatches(t *testing.T) {
	const n, batch = 5000, 1000
	e := newCreateEnv(t, n, batch, time.Minute)
	var seen []string
	e.store.afterBatch = func(stored int) error {
		items := e.count(t, "SELECT COUNT(*) FROM repair_item")
		planning := e.count(t, "SELECT COUNT(*) FROM repair WHERE state = 'PLANNING'")
		runnable, err := e.store.runnable(context.Background(), repairSubject, "someone", 10)
		if err != nil {
			t.Error(err)
		}
		seen = append(seen, fmt.Sprintf("stored %d: %d committed items, %d PLANNING, %d runnable", stored, items, planning, len(runnable)))
		return nil
	}
	rs, err := e.mgr.Create(context.Background(), CreateRequest{Selection: Selection{RunID: e.run.ID}, RequestID: "big", Reason: "lost batch", By: "otto"})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for k := batch; k <= n; k += batch {
		want = append(want, fmt.Sprintf("stored %d: %d committed items, 1 PLANNING, 0 runnable", k, k))
	}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("after each batch:\n got %v\nwant %v", seen, want)
	}
	if len(rs) != 1 || rs[0].State != StateExecuting || rs[0].ItemsTotal != n || rs[0].Message != "" {
		t.Fatalf("created %+v, want one EXECUTING repair of %d items", rs, n)
	}
	if got := e.count(t, "SELECT COUNT(DISTINCT seq) FROM repair_item WHERE repair_id = ? AND seq BETWEEN 1 AND ?", rs[0].ID, n); got != n {
		t.Errorf("%d distinct item numbers 1..%d, want %d", got, n, n)
	}
	if got := e.count(t, "SELECT COUNT(*) FROM repair WHERE lease_owner IS NOT NULL"); got != 0 {
		t.Errorf("%d repairs still hold the creator's lease", got)
	}
	// Idempotent by request id as before.
	again, err := e.mgr.Create(context.Background(), CreateRequest{Selection: Selection{RunID: e.run.ID}, RequestID: "big", Reason: "lost batch", By: "otto"})
	if err != nil || len(again) != 1 || again[0].ID != rs[0].ID {
		t.Fatalf("the same request again = %v, %v; want repair %s", again, err, rs[0].ID)
	}
}

// A Create that crashes after some batches leaves a repair that is
// recognisably incomplete (PLANNING, never run, not approvable or
// verifiable) and whose items still reserve their records; a retry with the
// same request id while the lease lives waits, and once it expired removes
// the partial repair and stores the request whole; a Create of another
// request id also removes an abandoned one.
func TestCreateAfterACrashMidwayStartsClean(t *testing.T) {
	const n, batch = 3000, 500
	e := newCreateEnv(t, n, batch, 2*time.Second)
	ctx := context.Background()
	req := CreateRequest{Selection: Selection{RunID: e.run.ID}, RequestID: "crashy", Reason: "lost batch", By: "otto"}
	e.store.afterBatch = func(stored int) error {
		if stored == 2*batch {
			return errCrash
		}
		return nil
	}
	if _, err := e.mgr.Create(ctx, req); !errors.Is(err, errCrash) {
		t.Fatalf("create = %v, want the simulated crash", err)
	}
	e.store.afterBatch = nil
	rs, err := e.store.RepairsByRequest(ctx, "crashy")
	if err != nil || len(rs) != 1 {
		t.Fatalf("after the crash: %v, %v", rs, err)
	}
	partial := rs[0]
	if partial.State != StatePlanning || partial.Message != fmt.Sprintf("planning: %d of %d items stored", 2*batch, n) {
		t.Fatalf("after the crash the repair is %s (%q), want PLANNING with %d of %d items", partial.State, partial.Message, 2*batch, n)
	}
	if got := e.count(t, "SELECT COUNT(*) FROM repair_item WHERE repair_id = ?", partial.ID); got != 2*batch {
		t.Fatalf("%d items stored before the crash, want %d", got, 2*batch)
	}
	if ids, err := e.store.runnable(ctx, repairSubject, "executor", 10); err != nil || len(ids) != 0 {
		t.Fatalf("runnable after the crash = %v, %v; want none", ids, err)
	}
	if _, err := e.mgr.Approve(ctx, partial.ID, "alice", "x"); !errors.Is(err, apierr.FailedPrecondition) {
		t.Fatalf("approving a PLANNING repair = %v, want FAILED_PRECONDITION", err)
	}
	if _, _, err := e.mgr.Verify(ctx, partial.ID, "alice"); !errors.Is(err, apierr.FailedPrecondition) {
		t.Fatalf("verifying a PLANNING repair = %v, want FAILED_PRECONDITION", err)
	}

	// The retry waits for the lease (2 s), then removes the partial repair
	// and stores everything.
	start := time.Now()
	var wg sync.WaitGroup
	results := make([][]Repair, 2)
	errs := make([]error, 2)
	for k := range 2 { // two concurrent retries: one repair, the same for both
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[k], errs[k] = e.mgr.Create(ctx, req)
		}()
	}
	wg.Wait()
	for k := range 2 {
		if errs[k] != nil || len(results[k]) != 1 || results[k][0].State != StateExecuting || results[k][0].ItemsTotal != n {
			t.Fatalf("retry %d = %+v, %v; want one EXECUTING repair of %d items", k, results[k], errs[k], n)
		}
	}
	if results[0][0].ID != results[1][0].ID || results[0][0].ID == partial.ID {
		t.Fatalf("retries made repairs %s and %s (partial %s): want one new repair", results[0][0].ID, results[1][0].ID, partial.ID)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("the retry took %s: it did not wait for the crashed call's lease", waited)
	}
	id := results[0][0].ID
	for q, want := range map[string]int{
		"SELECT COUNT(*) FROM repair":                                                    1,
		"SELECT COUNT(*) FROM repair_item":                                               n,
		"SELECT COUNT(*) FROM repair_item WHERE repair_id = '" + id + "'":                n,
		"SELECT COUNT(DISTINCT active_data_id) FROM repair_item":                         n,
		"SELECT COUNT(*) FROM repair_transition WHERE subject_id = '" + partial.ID + "'": 0,
		"SELECT COUNT(*) FROM repair_request":                                            1,
	} {
		if got := e.count(t, q); got != want {
			t.Errorf("%s = %d, want %d", q, got, want)
		}
	}

	// An abandoned request of another id is removed by the next Create.
	e2 := newCreateEnv(t, 1200, 400, time.Second)
	e2.store.afterBatch = func(stored int) error { return errCrash }
	if _, err := e2.mgr.Create(ctx, CreateRequest{Selection: Selection{RunID: e2.run.ID}, RequestID: "gone", By: "otto"}); !errors.Is(err, errCrash) {
		t.Fatalf("create = %v, want the simulated crash", err)
	}
	e2.store.afterBatch = nil
	// While its lease lives, the abandoned items reserve their records.
	if _, err := e2.mgr.Create(ctx, CreateRequest{Selection: Selection{RunID: e2.run.ID}, RequestID: "other", By: "otto"}); err != nil {
		t.Fatal(err)
	}
	if got := e2.count(t, "SELECT COUNT(*) FROM repair_item i JOIN repair r ON r.repair_id = i.repair_id WHERE r.request_id = 'other'"); got != 800 {
		t.Fatalf("while the crashed request's lease lives, the other request got %d items, want the 800 not reserved", got)
	}
	time.Sleep(1100 * time.Millisecond) // the crashed call's lease (1 s) expires
	if _, err := e2.mgr.Create(ctx, CreateRequest{Selection: Selection{RunID: e2.run.ID}, RequestID: "third", By: "otto"}); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]int{
		"SELECT COUNT(*) FROM repair WHERE request_id = 'gone'":         0,
		"SELECT COUNT(*) FROM repair_request WHERE request_id = 'gone'": 0,
		"SELECT COUNT(*) FROM repair_item":                              1200,
		"SELECT COUNT(*) FROM repair WHERE state = 'PLANNING'":          0,
	} {
		if got := e2.count(t, q); got != want {
			t.Errorf("%s = %d, want %d", q, got, want)
		}
	}
}

// A renewal of the planning lease that writes what the row already holds
// (the same message, an expiry within the same millisecond: two one-item
// repairs of one request stored back to back) is still the owner's
// renewal. MySQL and MariaDB count only changed rows as affected, and
// reading "0 affected" as "lease lost" made CreateRepair wait out its own
// 30 s lease and start again (seen as TestExecutionAndVerification taking
// 30, 60 and 90 s on MariaDB 10.11). 300 back-to-back renewals with one
// message, in one transaction as storeItems renews, all hold; another
// owner's renewal is refused.
func TestPlanningRenewalThatChangesNothingHoldsTheLease(t *testing.T) {
	e := newCreateEnv(t, 4, 2, time.Minute)
	ctx := context.Background()
	req := CreateRequest{Selection: Selection{RunID: e.run.ID}, RequestID: "same-ms", Reason: "lost batch", By: "otto"}
	var checked bool
	e.store.afterBatch = func(stored int) error {
		if checked {
			return nil
		}
		checked = true
		var owner string
		if err := e.db.QueryRowContext(ctx, "SELECT lease_owner FROM repair WHERE request_id = ? AND state = 'PLANNING' LIMIT 1", req.RequestID).Scan(&owner); err != nil {
			t.Errorf("reading the creator's lease: %v", err)
			return nil
		}
		spec := CreateSpec{RequestID: req.RequestID, Lease: time.Minute}
		err := e.store.inTx(ctx, func(tx *sql.Tx) error {
			for i := range 300 {
				if err := renewPlanning(ctx, tx, spec, owner, "planning: the same message"); err != nil {
					return fmt.Errorf("renewal %d: %w", i+1, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Errorf("the owner's renewals: %v", err)
		}
		err = e.store.inTx(ctx, func(tx *sql.Tx) error { return renewPlanning(ctx, tx, spec, "someone-else", "planning: taken") })
		if !errors.Is(err, errPlanningLost) {
			t.Errorf("another owner's renewal = %v, want errPlanningLost", err)
		}
		return nil
	}
	start := time.Now()
	rs, err := e.mgr.Create(ctx, req)
	if err != nil || len(rs) != 1 || rs[0].State != StateExecuting || rs[0].ItemsTotal != 4 {
		t.Fatalf("Create = %+v, %v; want one EXECUTING repair of 4 items", rs, err)
	}
	if !checked {
		t.Fatal("no batch was stored")
	}
	if got := e.count(t, "SELECT COUNT(*) FROM repair"); got != 1 {
		t.Errorf("%d repairs stored, want 1 (the Create restarted)", got)
	}
	t.Logf("Create took %s", time.Since(start))
}
