// Package repairtest holds the test environment of the repair packages: two
// real shard databases, a real control database and a real ClickHouse
// projection (from pkg/testkit/infratest), a reconciliation that finds real
// discrepancies, and fakes of the three interfaces pkg/recovery/repair consumes
// (Replayer, TargetEditor, Rebuilder) that act on those real databases the
// way the real implementations do, with hooks to delay, drop or fail.
package repairtest

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/model/shard"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/recovery/repair"
	"github.com/resultsync/resultsync/pkg/recovery/replay"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/reconciletest"
)

// DetectID is the campaign every record of the environment belongs to.
const DetectID = 10001

// Env is the test environment.
type Env struct {
	Log     *slog.Logger
	Shards  shard.Map
	ShardDB []*sql.DB
	Control *sql.DB
	CH      *infratest.ClickHouseDatabase
	Proj    *chstore.Projection
	Runs    *reconcile.RunStore
	Store   *repair.Store
	Source  reconcile.MySQLSource
	Target  reconcile.ClickHouseTarget
}

// New creates the databases (dropped when the test ends).
func New(t testing.TB) *Env {
	t.Helper()
	e := &Env{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for i := range 2 {
		db := infratest.NewMySQLDatabase(t, schema.Shard)
		e.Shards.Shards = append(e.Shards.Shards, shard.Shard{ID: fmt.Sprintf("shard-%d", i), DSN: db.DSN})
		e.ShardDB = append(e.ShardDB, db.DB)
	}
	e.Source = reconcile.MySQLSource{Shards: e.ShardDB}
	e.Control = infratest.NewMySQLDatabase(t, schema.Control).DB
	e.CH = infratest.NewClickHouseDatabase(t, true)
	e.Proj = chstore.NewProjection(e.CH.Conn)
	e.Target = reconcile.ClickHouseTarget{Conn: e.CH.Conn}
	e.Runs = reconcile.NewRunStore(e.Control)
	e.Store = repair.NewStore(e.Control)
	return e
}

// ShardOf names the shard owning a data_id.
func (e *Env) ShardOf(dataID int64) string { return e.Shards.Shards[e.Shards.Owner(dataID)].ID }

// Deps returns the dependencies of the repair components over the
// environment, with the given fakes.
func (e *Env) Deps(r repair.Replayer, ed repair.TargetEditor, rb repair.Rebuilder) repair.Deps {
	return repair.Deps{Store: e.Store, Runs: e.Runs, Replayer: r, Editor: ed, Rebuilder: rb, Source: e.Source, Target: e.Target,
		ShardOf: e.ShardOf, Epochs: repair.ProjectionEpochs{Conn: e.CH.Conn}}
}

// Rec is one version of a record.
type Rec struct {
	ID, Version int64
	School      int64  // default 7
	Result      string // default "2.21"
	Deleted     bool
	Epoch       uint16
}

func (r Rec) defaults() Rec {
	if r.School == 0 {
		r.School = 7
	}
	if r.Result == "" {
		r.Result = "2.21"
	}
	return r
}

// Put writes the record's current state on its owning shard.
func (e *Env) Put(t testing.TB, r Rec) {
	t.Helper()
	r = r.defaults()
	if _, err := e.ShardDB[e.Shards.Owner(r.ID)].Exec(`INSERT INTO fitness_result
		(data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
		VALUES (?, ?, 4, 3, ?, 5, ?, 'm', ?, ?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))
		ON DUPLICATE KEY UPDATE school_id = ?, result = ?, version = ?, is_deleted = ?, update_time = UTC_TIMESTAMP(3)`,
		r.ID, DetectID, r.School, r.Result, r.Version, r.Deleted, r.School, r.Result, r.Version, r.Deleted); err != nil {
		t.Fatal(err)
	}
}

// Deliver writes the version into the projection, as the consumer would.
func (e *Env) Deliver(t testing.TB, r Rec) {
	t.Helper()
	if err := e.Proj.Insert(context.Background(), []chstore.Row{row(r.defaults(), e.ShardOf(r.ID))}); err != nil {
		t.Fatal(err)
	}
}

func row(r Rec, shardID string) chstore.Row {
	now := time.Now().UnixMilli()
	return chstore.Row{DetectID: DetectID, DataID: r.ID, UserID: 4, ProjectID: 3, SchoolID: r.School, Grade: 5, Version: r.Version,
		Epoch: r.Epoch, Result: r.Result, Unit: "m", IsDeleted: r.Deleted, EventID: fmt.Sprintf("fitness-result-%d-v%d", r.ID, r.Version),
		ShardID: shardID, SourceCommitMs: now, IngestMs: now}
}

// PutDelivered puts the record and delivers it.
func (e *Env) PutDelivered(t testing.TB, r Rec) {
	t.Helper()
	e.Put(t, r)
	e.Deliver(t, r)
}

// Record ids of Scenario, one per discrepancy class.
const (
	IDMissing    = 900001 // on the shard only
	IDStale      = 900002 // the projection a version behind
	IDDeleted    = 900003 // deleted on the shard, live in the projection
	IDContent    = 900004 // same version, another school in the projection (a mapping defect)
	IDUnexpected = 900005 // in the projection only
	IDAhead      = 900006 // the projection ahead of the shard
)

// Scenario writes consistent records (ids 100 on, put and delivered) and
// one discrepancy of every class (the ID constants), then reconciles the
// campaign (Reconcile) and returns the run.
func (e *Env) Scenario(t testing.TB, consistent int64) reconcile.Run {
	t.Helper()
	for i := range consistent {
		e.PutDelivered(t, Rec{ID: 100 + i, Version: 1})
	}
	e.Put(t, Rec{ID: IDMissing, Version: 1})
	e.Put(t, Rec{ID: IDStale, Version: 2, Result: "2.31"})
	e.Deliver(t, Rec{ID: IDStale, Version: 1})
	e.Put(t, Rec{ID: IDDeleted, Version: 2, Deleted: true})
	e.Deliver(t, Rec{ID: IDDeleted, Version: 1})
	e.Put(t, Rec{ID: IDContent, Version: 1, School: 7})
	e.Deliver(t, Rec{ID: IDContent, Version: 1, School: 9})
	e.Deliver(t, Rec{ID: IDUnexpected, Version: 1})
	e.PutDelivered(t, Rec{ID: IDAhead, Version: 1})
	e.Deliver(t, Rec{ID: IDAhead, Version: 3})
	return e.Reconcile(t)
}

// Reconcile runs a CONTENT reconciliation of the campaign to its end and
// returns the run.
func (e *Env) Reconcile(t testing.TB) reconcile.Run {
	t.Helper()
	return e.ReconcileScope(t, reconcile.Scope{DetectID: DetectID})
}

// ReconcileScope runs a CONTENT reconciliation of scope to its end and
// returns the run.
func (e *Env) ReconcileScope(t testing.TB, scope reconcile.Scope) reconcile.Run {
	t.Helper()
	cfg := reconcile.RunnerConfig{Buckets: 64, Grace: 50 * time.Millisecond, CatchUpWait: 50 * time.Millisecond, MaxBoundaryRetries: 3}
	runner := reconcile.NewRunner(e.Log, cfg, e.Source, e.Source, e.Target, e.Runs, nil)
	r := reconciletest.Execute(t, runner, e.Runs, scope, reconcile.DepthContent, "tester")
	if r.State != reconcile.StateSucceeded {
		t.Fatalf("reconciliation run = %+v", r)
	}
	return r
}

// Discrepancies returns the run's discrepancies by data_id.
func (e *Env) Discrepancies(t testing.TB, runID string) map[int64]reconcile.StoredDiscrepancy {
	t.Helper()
	return reconciletest.Discrepancies(t, e.Runs, runID)
}

// Resolved returns the resolved flag of every discrepancy of a run, by data_id.
func (e *Env) Resolved(t testing.TB, runID string) map[int64]bool {
	t.Helper()
	rows, err := e.Control.Query("SELECT data_id, resolved FROM discrepancy WHERE run_id = ?", runID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]bool{}
	for rows.Next() {
		var id int64
		var r bool
		if err := rows.Scan(&id, &r); err != nil {
			t.Fatal(err)
		}
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// RowCounts returns the row count of every repair table and the audit log
// (to prove that something changed nothing).
func (e *Env) RowCounts(t testing.TB) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"repair_request", "repair", "repair_item", "repair_transition", "rebuild", "audit_log"} {
		var n int
		if err := e.Control.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[table] = n
	}
	var resolved int
	if err := e.Control.QueryRow("SELECT COUNT(*) FROM discrepancy WHERE resolved = 1").Scan(&resolved); err != nil {
		t.Fatal(err)
	}
	out["discrepancy.resolved"] = resolved
	return out
}

// WaitRepair polls the store until the repair satisfies ok, or fails the
// test after timeout.
func (e *Env) WaitRepair(t testing.TB, id string, timeout time.Duration, ok func(repair.Repair) bool) repair.Repair {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r, err := e.Store.GetRepair(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if ok(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("repair %s did not get there within %s: %+v", id, timeout, r)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitState waits until the repair is in state.
func (e *Env) WaitState(t testing.TB, id, state string, timeout time.Duration) repair.Repair {
	t.Helper()
	return e.WaitRepair(t, id, timeout, func(r repair.Repair) bool { return r.State == state })
}

// ---- fakes ----

// Replayer is a fake repair.Replayer that does what the real path does, in
// one step: it reads the record's current state on its owning shard and
// writes that version, with its event id, into the projection (what relay,
// Pulsar and consumer would do). Hooks (set before use): Before runs first
// (a fault: its error is returned, nothing is replayed); After runs once the
// replay is done, before Replay returns (a crash after the side effect:
// its error is returned although the event went out); Delay delivers
// later; Drop never delivers (a lost replay).
type Replayer struct {
	Env    *Env
	Before func(ctx context.Context, dataID int64) error
	After  func(ctx context.Context, dataID int64) error
	Delay  time.Duration
	Drop   func(dataID int64) bool

	mu      sync.Mutex
	batches int
	calls   map[int64]int
	events  map[int64][]string
	times   map[string][]time.Time
	wg      sync.WaitGroup
}

// NewReplayer returns a Replayer over env; pending delayed deliveries end
// before the test's databases are dropped.
func NewReplayer(t testing.TB, env *Env) *Replayer {
	r := &Replayer{Env: env, calls: map[int64]int{}, events: map[int64][]string{}, times: map[string][]time.Time{}}
	t.Cleanup(r.wg.Wait)
	return r
}

// Events returns the event ids replayed per data_id, in order.
func (r *Replayer) Events() map[int64][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[int64][]string{}
	for k, v := range r.events {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// Replay implements repair.Replayer.
func (r *Replayer) Replay(ctx context.Context, dataID int64) (string, int64, string, bool, error) {
	if r.Before != nil {
		if err := r.Before(ctx, dataID); err != nil {
			return "", 0, "", false, err
		}
	}
	shardID := r.Env.ShardOf(dataID)
	var rec Rec
	rec.ID = dataID
	err := r.Env.ShardDB[r.Env.Shards.Owner(dataID)].QueryRowContext(ctx,
		"SELECT school_id, CAST(result AS CHAR), version, is_deleted FROM fitness_result WHERE data_id = ?", dataID).
		Scan(&rec.School, &rec.Result, &rec.Version, &rec.Deleted)
	if err != nil {
		return "", 0, "", false, fmt.Errorf("fake replayer: reading %d: %w", dataID, err)
	}
	ev := fmt.Sprintf("fitness-result-%d-v%d", dataID, rec.Version)
	r.mu.Lock()
	r.calls[dataID]++
	r.events[dataID] = append(r.events[dataID], ev)
	r.times[shardID] = append(r.times[shardID], time.Now())
	r.mu.Unlock()
	deliver := func(ctx context.Context) error { return r.Env.Proj.Insert(ctx, []chstore.Row{row(rec, shardID)}) }
	switch {
	case r.Drop != nil && r.Drop(dataID):
	case r.Delay <= 0:
		if err := deliver(ctx); err != nil {
			return "", 0, "", false, err
		}
	default:
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			time.Sleep(r.Delay)
			_ = deliver(context.Background())
		}()
	}
	if r.After != nil {
		if err := r.After(ctx, dataID); err != nil {
			return "", 0, "", false, err
		}
	}
	return shardID, rec.Version, ev, rec.Deleted, nil
}

// ReplayBatch is Replay of each data id in turn (hooks included), with
// each record's error in its own outcome.
func (r *Replayer) ReplayBatch(ctx context.Context, dataIDs []int64) ([]replay.Outcome, error) {
	r.mu.Lock()
	r.batches++
	r.mu.Unlock()
	out := make([]replay.Outcome, len(dataIDs))
	for i, id := range dataIDs {
		shardID, v, ev, deleted, err := r.Replay(ctx, id)
		out[i] = replay.Outcome{DataID: id, ShardID: shardID, Version: v, EventID: ev, Deleted: deleted, Err: err}
	}
	return out, ctx.Err()
}

// Batches returns the number of ReplayBatch calls.
func (r *Replayer) Batches() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.batches
}

// Calls returns the number of replays per data_id.
func (r *Replayer) Calls() map[int64]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[int64]int{}
	for k, v := range r.calls {
		out[k] = v
	}
	return out
}

// Times returns the time of every replay per shard.
func (r *Replayer) Times() map[string][]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]time.Time{}
	for k, v := range r.times {
		out[k] = append([]time.Time(nil), v...)
	}
	return out
}

// Editor is a fake repair.TargetEditor over the ClickHouse projection:
// Origins reads every stored version of the key, RemoveAbove deletes with an
// ALTER TABLE ... DELETE mutation (asynchronous, as ClickHouse's are).
type Editor struct {
	Env *Env

	mu      sync.Mutex
	removed []string
}

// Origins implements repair.TargetEditor.
func (ed *Editor) Origins(ctx context.Context, detectID, dataID int64) ([]chstore.Row, error) {
	rows, err := ed.Env.CH.Conn.Query(ctx, `SELECT detect_id, data_id, user_id, project_id, school_id, grade, version, epoch,
		toString(result), unit, is_deleted, event_id, shard_id, source_commit_unix_ms, ingest_unix_ms
		FROM fitness_result_versions WHERE detect_id = ? AND data_id = ? ORDER BY version, epoch`, detectID, dataID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []chstore.Row
	for rows.Next() {
		var r chstore.Row
		var del uint8
		if err := rows.Scan(&r.DetectID, &r.DataID, &r.UserID, &r.ProjectID, &r.SchoolID, &r.Grade, &r.Version, &r.Epoch, &r.Result,
			&r.Unit, &del, &r.EventID, &r.ShardID, &r.SourceCommitMs, &r.IngestMs); err != nil {
			return nil, err
		}
		r.IsDeleted = del == 1
		out = append(out, r)
	}
	return out, rows.Err()
}

// RemoveAbove implements repair.TargetEditor.
func (ed *Editor) RemoveAbove(ctx context.Context, detectID, dataID, above int64) (int64, error) {
	var n uint64
	if err := ed.Env.CH.Conn.QueryRow(ctx, "SELECT count() FROM fitness_result_versions WHERE detect_id = ? AND data_id = ? AND version > ?",
		detectID, dataID, above).Scan(&n); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, nil
	}
	if err := ed.Env.CH.Conn.Exec(ctx, fmt.Sprintf("ALTER TABLE fitness_result_versions DELETE WHERE detect_id = %d AND data_id = %d AND version > %d",
		detectID, dataID, above)); err != nil {
		return 0, err
	}
	ed.mu.Lock()
	ed.removed = append(ed.removed, fmt.Sprintf("%d>%d", dataID, above))
	ed.mu.Unlock()
	return int64(n), nil
}

// Removed lists the removals made ("data_id>above").
func (ed *Editor) Removed() []string {
	ed.mu.Lock()
	defer ed.mu.Unlock()
	return append([]string(nil), ed.removed...)
}

// Rebuilder is a fake repair.Rebuilder: it writes every source record of
// the scope into the projection at the epoch (so the rebuilt rows outrank
// equal-version rows of a lower epoch) and reports each phase. Gate (set
// before use) runs after each phase is reported; its error ends the
// rebuild (a gate for cancellation tests).
type Rebuilder struct {
	Env  *Env
	Gate func(ctx context.Context, phase string) error

	mu     sync.Mutex
	phases []string
	calls  int
}

// Rebuild implements repair.Rebuilder.
func (rb *Rebuilder) Rebuild(ctx context.Context, scope reconcile.Scope, epoch uint16, progress func(string, int64, int64)) (int64, error) {
	rb.mu.Lock()
	rb.calls++
	rb.mu.Unlock()
	report := func(p string, done, total int64) error {
		rb.mu.Lock()
		rb.phases = append(rb.phases, p)
		rb.mu.Unlock()
		progress(p, done, total)
		if rb.Gate != nil {
			return rb.Gate(ctx, p)
		}
		return nil
	}
	var rows []chstore.Row
	for i, db := range rb.Env.ShardDB {
		got, err := sourceRows(ctx, db, scope.DetectID, epoch, rb.Env.Shards.Shards[i].ID)
		if err != nil {
			return 0, err
		}
		rows = append(rows, got...)
	}
	total := int64(len(rows))
	if err := report(repair.PhaseBuilding, 0, total); err != nil {
		return 0, err
	}
	if err := rb.Env.Proj.Insert(ctx, rows); err != nil {
		return 0, err
	}
	for _, p := range []string{repair.PhaseCatchingUp, repair.PhaseVerifying, repair.PhaseSwitching, repair.PhaseSwitched} {
		if err := report(p, total, total); err != nil {
			return total, err
		}
	}
	return total, nil
}

// sourceRows reads every record of a campaign on one shard as projection rows at epoch.
func sourceRows(ctx context.Context, db *sql.DB, detectID int64, epoch uint16, shardID string) ([]chstore.Row, error) {
	q, err := db.QueryContext(ctx, "SELECT data_id, school_id, CAST(result AS CHAR), version, is_deleted FROM fitness_result WHERE detect_id = ?", detectID)
	if err != nil {
		return nil, err
	}
	defer q.Close()
	var out []chstore.Row
	for q.Next() {
		r := Rec{Epoch: epoch}
		if err := q.Scan(&r.ID, &r.School, &r.Result, &r.Version, &r.Deleted); err != nil {
			return nil, err
		}
		out = append(out, row(r, shardID))
	}
	return out, q.Err()
}

// Phases lists the phases reported so far.
func (rb *Rebuilder) Phases() []string {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return append([]string(nil), rb.phases...)
}

// Calls is how many times Rebuild was called.
func (rb *Rebuilder) Calls() int {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return rb.calls
}
