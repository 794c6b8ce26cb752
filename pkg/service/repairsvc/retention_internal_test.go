package repairsvc

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/model/shard"
	"github.com/resultsync/resultsync/pkg/platform/retention"
	"github.com/resultsync/resultsync/pkg/service/stores"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/metrictest"
)

const day = 24 * time.Hour

// seeder inserts rows as of a fixed now.
type seeder struct {
	t   *testing.T
	db  *sql.DB
	now time.Time
}

func (s seeder) exec(q string, args ...any) {
	s.t.Helper()
	if _, err := s.db.ExecContext(context.Background(), q, args...); err != nil {
		s.t.Fatalf("%s: %v", q, err)
	}
}

func (s seeder) ago(d time.Duration) time.Time { return s.now.Add(-d) }

func (s seeder) requestLog(id string, age time.Duration) {
	s.exec(`INSERT INTO request_log (request_id, method, request_hash, data_id, version, response, create_time)
		VALUES (?, 'RecordResult', REPEAT('0', 64), 1, 1, '', ?)`, id, s.ago(age))
}

func (s seeder) controlRequest(id string, age time.Duration) {
	s.exec(`INSERT INTO control_request (method, request_id, request_hash, caller, state, token, owner, lease_expire, response, create_time, update_time)
		VALUES ('CancelRepair', ?, REPEAT('0', 64), 'op', 'DONE', REPEAT('1', 32), REPEAT('2', 32), ?, '', ?, ?)`, id, s.ago(age), s.ago(age), s.ago(age))
}

func (s seeder) audit(id string, age time.Duration) {
	s.exec(`INSERT INTO audit_log (audit_id, caller, action, scope, reason, outcome, create_time)
		VALUES (?, 'op', 'repair.create', 'x', 'y', 'ok', ?)`, id, s.ago(age))
}

// run stores a run; ended < 0 leaves it running (end_time NULL).
func (s seeder) run(id, state string, ended time.Duration) {
	var end any
	if ended >= 0 {
		end = s.ago(ended)
	}
	s.exec(`INSERT INTO reconcile_run (run_id, detect_id, depth, state, create_time, end_time) VALUES (?, 1, 3, ?, ?, ?)`,
		id, state, s.ago(max(ended, 0)+time.Hour), end)
}

func (s seeder) discrepancy(id, run string, dataID int64, resolved bool) {
	s.exec(`INSERT INTO discrepancy (discrepancy_id, run_id, class, data_id, detect_id, src_present, src_version, src_deleted, src_canonical,
		dst_present, dst_version, dst_deleted, dst_canonical, resolved, create_time) VALUES (?, ?, 1, ?, 1, 1, 1, 0, '', 0, 0, 0, '', ?, ?)`,
		id, run, dataID, resolved, s.now)
}

// repair stores a repair of run under request (action 1 unless the request
// has one already); ended < 0 leaves it running.
func (s seeder) repair(id, request, run, state, rebuild string, action int, ended time.Duration) {
	var end any
	if ended >= 0 {
		end = s.ago(ended)
	}
	created := s.ago(max(ended, 0) + time.Hour)
	s.exec(`INSERT IGNORE INTO repair_request (request_id, request_hash, created_by, create_time) VALUES (?, REPEAT('0', 64), 'op', ?)`, request, created)
	s.exec(`INSERT INTO repair (repair_id, request_id, run_id, detect_id, action, state, requires_approval, reason, created_by, rebuild_id,
		create_time, update_time, state_time, end_time) VALUES (?, ?, ?, 1, ?, ?, 0, 'r', 'op', ?, ?, ?, ?, ?)`,
		id, request, run, action, state, rebuild, created, created, created, end)
}

func (s seeder) item(repair string, seq int, active bool) {
	var activeID any
	if active {
		activeID = int64(1000 + seq)
	}
	s.exec(`INSERT INTO repair_item (repair_id, seq, discrepancy_id, active_data_id, data_id, detect_id, shard_id, class, action, source_version, target_version)
		VALUES (?, ?, 'd', ?, ?, 1, 'shard-0', 1, 1, 1, 0)`, repair, seq, activeID, 1000+seq)
}

func (s seeder) ids(q string) []string {
	s.t.Helper()
	rows, err := s.db.QueryContext(context.Background(), q)
	if err != nil {
		s.t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			s.t.Fatal(err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		s.t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// TestRetention runs the repair server's retention worker, as New builds it
// (a batch of 2 rows), over two real shards, a real control database and a
// real ClickHouse projection
// holding rows on both sides of every retention: each purge removes what is
// older than its setting, in batches of at most 2, and keeps what is newer,
// what has not ended, and what a kept run or repair still needs; the
// worker's metrics count every removed row per table and store.
func TestRetention(t *testing.T) {
	shard0, shard1 := infratest.NewMySQLDatabase(t, schema.Shard), infratest.NewMySQLDatabase(t, schema.Shard)
	control := infratest.NewMySQLDatabase(t, schema.Control)
	ch := infratest.NewClickHouseDatabase(t, true)
	dead := chstore.NewProjection(ch.Conn)
	now := time.Now().UTC().Truncate(time.Millisecond)
	s0, s1, c := seeder{t, shard0.DB, now}, seeder{t, shard1.DB, now}, seeder{t, control.DB, now}

	// request_log: 7 days.
	for i := 1; i <= 5; i++ {
		s0.requestLog(fmt.Sprintf("old-%d", i), 7*day+time.Duration(i)*time.Hour)
	}
	s0.requestLog("new-1", 7*day-time.Hour)
	s0.requestLog("new-2", time.Minute)
	s1.requestLog("old-1", 30*day)
	s1.requestLog("new-1", 6*day)

	// Runs: 90 days.
	for i := 1; i <= 5; i++ {
		id := fmt.Sprintf("run-old-%d", i)
		c.run(id, []string{"SUCCEEDED", "FAILED", "BOUNDARY_NOT_REACHED"}[i%3], 90*day+time.Duration(i)*time.Hour)
		c.discrepancy("d-"+id, id, int64(i), true)
	}
	c.discrepancy("d-run-old-1-b", "run-old-1", 11, true)
	c.discrepancy("d-run-old-1-c", "run-old-1", 12, true)
	c.run("run-unresolved", "SUCCEEDED", 120*day) // an unresolved discrepancy: kept
	c.discrepancy("d-unresolved", "run-unresolved", 20, false)
	c.discrepancy("d-unresolved-b", "run-unresolved", 21, true)
	c.run("run-live-repair", "SUCCEEDED", 300*day) // named by an active repair: kept
	c.discrepancy("d-live", "run-live-repair", 30, true)
	c.run("run-old-repairs", "SUCCEEDED", 300*day) // named by ended repairs only: kept until they go
	c.discrepancy("d-old-repairs", "run-old-repairs", 40, true)
	c.run("run-running", "RUNNING", -1) // started long ago, never ended: kept
	c.exec("UPDATE reconcile_run SET create_time = ? WHERE run_id = 'run-running'", c.ago(200*day))
	c.run("run-new", "SUCCEEDED", 90*day-time.Hour)
	c.discrepancy("d-new", "run-new", 50, true)

	// Repairs: 180 days.
	c.repair("rep-old-1", "req-a", "run-old-repairs", "VERIFIED", "", 1, 181*day)
	c.repair("rep-old-2", "req-a", "run-old-repairs", "FAILED", "", 2, 182*day)
	c.repair("rep-old-3", "req-3", "run-old-repairs", "CANCELLED", "", 1, 183*day)
	c.repair("rep-old-4", "req-4", "run-old-repairs", "VERIFIED", "", 1, 184*day)
	c.repair("rep-old-5", "req-mixed", "run-old-repairs", "VERIFIED", "", 1, 185*day)
	c.repair("rep-new", "req-mixed", "run-new", "VERIFIED", "", 2, 179*day)
	c.repair("rep-active", "req-active", "run-live-repair", "EXECUTING", "", 1, -1)
	c.exec("UPDATE repair SET create_time = ? WHERE repair_id = 'rep-active'", c.ago(400*day))
	c.repair("rep-rebuild", "req-rebuild", "run-live-repair", "VERIFIED", "rb-1", 4, 200*day)
	for seq := range 3 {
		c.item("rep-old-1", seq, false)
	}
	c.item("rep-active", 0, true)
	c.item("rep-active", 1, true)
	c.item("rep-rebuild", 0, false)
	c.exec("INSERT INTO repair_progress (repair_id, slot, items_done, update_time) VALUES ('rep-old-1', 3, 2, ?)", c.ago(181*day))
	for _, id := range []string{"rep-old-1", "rep-old-1", "rep-active", "rep-new"} {
		c.exec(`INSERT INTO repair_transition (subject, subject_id, from_state, to_state, actor, create_time) VALUES ('repair', ?, 'A', 'B', 'op', ?)`, id, now)
	}

	// The control calls' idempotency keys: 7 days, as request_log.
	for i := 1; i <= 3; i++ {
		c.controlRequest(fmt.Sprintf("old-%d", i), 7*day+time.Duration(i)*time.Hour)
	}
	c.controlRequest("new-1", 7*day-time.Hour)

	// Audit: 400 days.
	for i := 1; i <= 5; i++ {
		c.audit(fmt.Sprintf("audit-old-%d", i), 400*day+time.Duration(i)*time.Hour)
	}
	c.audit("audit-new-1", 399*day)
	c.audit("audit-new-2", time.Hour)

	// Dead letters: 30 days.
	for i, age := range []time.Duration{30*day + time.Hour, 30*day + 2*time.Hour, 30*day + 3*time.Hour, 29 * day} {
		if err := dead.InsertDeadLetter(context.Background(), chstore.DeadLetter{Time: now.Add(-age), MessageID: fmt.Sprint(i), EventID: fmt.Sprintf("dead-%d", i),
			Reason: "r", Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}

	r := Retention{RequestLog: DefaultRequestLogRetention, Runs: DefaultRunRetention, Repairs: DefaultRepairRetention, Audit: DefaultAuditRetention,
		DeadLetters: DefaultDeadLetterRetention,
		Config:      retention.Config{Interval: time.Hour, Batch: 2, CallTimeout: time.Minute}}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	pools := &stores.Pools{Map: shard.Map{Shards: []shard.Shard{{ID: "shard-0"}, {ID: "shard-1"}}},
		Shards: []*sql.DB{shard0.DB, shard1.DB}, Control: control.DB}
	// Every purge call's removed rows, per table and store, in order.
	var mu sync.Mutex
	calls := map[string][]int64{}
	tables := retentionTables(r, pools, dead)
	for i := range tables {
		tb := tables[i]
		purge := tb.Purge
		tables[i].Purge = func(ctx context.Context, cutoff time.Time, batch int) (retention.Removed, error) {
			got, err := purge(ctx, cutoff, batch)
			mu.Lock()
			calls[tb.Name+"/"+tb.Store] = append(calls[tb.Name+"/"+tb.Store], got.Total())
			mu.Unlock()
			return got, err
		}
	}
	reg := prometheus.NewRegistry()
	cfg := r.Config
	cfg.Lock = retention.MySQLLock(control.DB, "resultsync.retention.")
	w, err := retention.New(slog.New(slog.DiscardHandler), cfg, reg, tables)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Logf("engine %s", infratest.MySQLEngine())

	// Another replica holding the lock: the round does nothing.
	release, ok, err := cfg.Lock(ctx)
	if err != nil || !ok {
		t.Fatalf("taking the retention lock: ok %v, %v", ok, err)
	}
	if err := w.Round(ctx); err != nil {
		t.Fatalf("round while another replica purges: %v", err)
	}
	if len(calls) != 0 {
		t.Fatalf("a round purged while another replica held the lock: %v", calls)
	}
	release()

	started := time.Now()
	if err := w.Round(ctx); err != nil {
		t.Fatalf("round: %v", err)
	}

	// What each table keeps.
	for _, tc := range []struct {
		s    seeder
		q    string
		want []string
	}{
		{s0, "SELECT request_id FROM request_log", []string{"new-1", "new-2"}},
		{s1, "SELECT request_id FROM request_log", []string{"new-1"}},
		{c, "SELECT run_id FROM reconcile_run", []string{"run-live-repair", "run-new", "run-old-repairs", "run-running", "run-unresolved"}},
		{c, "SELECT discrepancy_id FROM discrepancy", []string{"d-live", "d-new", "d-old-repairs", "d-unresolved", "d-unresolved-b"}},
		{c, "SELECT repair_id FROM repair", []string{"rep-active", "rep-new", "rep-rebuild"}},
		{c, "SELECT request_id FROM repair_request", []string{"req-active", "req-mixed", "req-rebuild"}},
		{c, "SELECT CONCAT(repair_id, '/', seq) FROM repair_item", []string{"rep-active/0", "rep-active/1", "rep-rebuild/0"}},
		{c, "SELECT repair_id FROM repair_progress", nil},
		{c, "SELECT subject_id FROM repair_transition", []string{"rep-active", "rep-new"}},
		{c, "SELECT audit_id FROM audit_log", []string{"audit-new-1", "audit-new-2"}},
		{c, "SELECT request_id FROM control_request", []string{"new-1"}},
	} {
		if diff := cmp.Diff(tc.want, tc.s.ids(tc.q)); diff != "" {
			t.Errorf("%s after the round (-want +got):\n%s", tc.q, diff)
		}
	}

	left, err := dead.DeadLetters(ctx, 0, 10)
	if err != nil || len(left) != 1 || left[0].EventID != "dead-3" {
		t.Errorf("dead letters after the round = %+v, %v; want dead-3 (29 days old) alone", left, err)
	}

	// In batches of at most 2 rows, until a call removed nothing (dead
	// letters: a day of them per call, ClickHouse has no row-bounded DELETE).
	if diff := cmp.Diff([]int64{3, 0}, calls["dead_letters/clickhouse"]); diff != "" {
		t.Errorf("dead letters removed per call (-want +got):\n%s", diff)
	}
	delete(calls, "dead_letters/clickhouse")
	for name, got := range calls {
		for _, n := range got {
			if n > 2 {
				t.Errorf("%s: a call removed %d rows, more than the batch of 2 (calls %v)", name, n, got)
			}
		}
		if last := got[len(got)-1]; last != 0 {
			t.Errorf("%s: the round stopped after a call that removed %d rows (calls %v)", name, last, got)
		}
	}
	for name, want := range map[string][]int64{"request_log/shard-0": {2, 2, 1, 0}, "request_log/shard-1": {1, 0}, "audit_log/control": {2, 2, 1, 0},
		"control_request/control": {2, 1, 0}} {
		if diff := cmp.Diff(want, calls[name]); diff != "" {
			t.Errorf("%s: rows removed per call (-want +got):\n%s", name, diff)
		}
	}
	if got := len(calls["reconcile_run/control"]); got < 6 {
		t.Errorf("runs and discrepancies (12 rows) purged in %d calls, want at least 6 of 2 rows and a last empty one", got)
	}

	// The metrics count every removed row, per table and store.
	for _, m := range []struct {
		table, store string
		want         float64
	}{
		{"request_log", "shard-0", 5}, {"request_log", "shard-1", 1},
		{"reconcile_run", "control", 5}, {"discrepancy", "control", 7},
		{"repair", "control", 5}, {"repair_item", "control", 3}, {"repair_progress", "control", 1},
		{"repair_transition", "control", 2}, {"repair_request", "control", 3},
		{"audit_log", "control", 5}, {"dead_letters", "clickhouse", 3}, {"control_request", "control", 3},
	} {
		if got := series(t, reg, "retention_rows_purged_total", m.table, m.store); got != m.want {
			t.Errorf("retention_rows_purged_total{table=%q,store=%q} = %v, want %v", m.table, m.store, got, m.want)
		}
	}
	for _, name := range []string{"request_log/shard-0", "request_log/shard-1", "reconcile_run/control", "repair/control", "audit_log/control", "control_request/control"} {
		table, store, _ := strings.Cut(name, "/")
		if got := series(t, reg, "retention_last_success_timestamp_seconds", table, store); got < float64(started.Unix()) {
			t.Errorf("retention_last_success_timestamp_seconds{table=%q,store=%q} = %v, want at least %d", table, store, got, started.Unix())
		}
		if got := series(t, reg, "retention_errors_total", table, store); got != 0 {
			t.Errorf("retention_errors_total{table=%q,store=%q} = %v, want 0", table, store, got)
		}
	}

	// The run the purged repairs named goes at the next round; what is
	// left stays.
	if err := w.Round(ctx); err != nil {
		t.Fatalf("second round: %v", err)
	}
	want := []string{"run-live-repair", "run-new", "run-running", "run-unresolved"}
	if diff := cmp.Diff(want, c.ids("SELECT run_id FROM reconcile_run")); diff != "" {
		t.Errorf("runs after the second round (-want +got):\n%s", diff)
	}
	if got := series(t, reg, "retention_rows_purged_total", "discrepancy", "control"); got != 8 {
		t.Errorf("discrepancies purged after two rounds = %v, want 8", got)
	}
}

// series is the value of name{table, store} in reg (-1 when absent).
func series(t *testing.T, reg *prometheus.Registry, name, table, store string) float64 {
	t.Helper()
	v, ok := metrictest.Value(t, reg, name, map[string]string{"table": table, "store": store})
	if !ok {
		return -1
	}
	return v
}
