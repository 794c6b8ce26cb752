package rebuild_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/model/shard"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/recovery/rebuild"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

const campaign = 20001

// fixture is a campaign on two real shards and a real ClickHouse projection.
type fixture struct {
	m      shard.Map
	shards []*infratest.MySQLDatabase
	dbs    []*sql.DB
	ids    []string
	ch     *infratest.ClickHouseDatabase
	proj   *chstore.Projection
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{}
	for i := range 2 {
		db := infratest.NewMySQLDatabase(t, schema.Shard)
		id := fmt.Sprintf("shard-%d", i)
		f.shards, f.dbs, f.ids = append(f.shards, db), append(f.dbs, db.DB), append(f.ids, id)
		f.m.Shards = append(f.m.Shards, shard.Shard{ID: id, DSN: db.DSN})
	}
	f.ch = infratest.NewClickHouseDatabase(t, true)
	f.proj = chstore.NewProjection(f.ch.Conn)
	return f
}

// rec is one record's authoritative state.
type rec struct {
	id, project, school int64
	grade               int16
	version             int64
	result              string
	deleted             bool
}

func (f *fixture) row(r rec, epoch uint16) chstore.Row {
	return chstore.Row{DetectID: campaign, DataID: r.id, UserID: 1000 + r.id%97, ProjectID: r.project, SchoolID: r.school, Grade: r.grade,
		Version: r.version, Epoch: epoch, Result: r.result, Unit: canonical.Projects[r.project].Unit, IsDeleted: r.deleted,
		EventID: canonical.EventID(r.id, r.version), ShardID: f.ids[f.m.Owner(r.id)], SourceCommitMs: time.Now().UnixMilli(), IngestMs: time.Now().UnixMilli()}
}

// records returns n records of the campaign: projects 3 (m) and 4 (s),
// seven schools, versions 1-3, every eleventh a tombstone.
func records(n int) []rec {
	var out []rec
	for i := range int64(n) {
		r := rec{id: 100000 + i, project: 3, school: 10 + i%7, grade: int16(1 + i%12), version: 1 + i%3,
			result: fmt.Sprintf("%d.%03d", i%4, (i*7)%1000)}
		if i%4 == 3 {
			r.project, r.result = 4, fmt.Sprintf("%d.%03d", 200+i%800, i%1000)
		}
		if i%11 == 0 {
			r.version, r.deleted = r.version+1, true
		}
		out = append(out, r)
	}
	return out
}

// seedShards writes the records on their owning shards, changed during the
// past hour.
func (f *fixture) seedShards(t *testing.T, recs []rec) {
	t.Helper()
	byShard := map[int][]rec{}
	for _, r := range recs {
		byShard[f.m.Owner(r.id)] = append(byShard[f.m.Owner(r.id)], r)
	}
	then := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	for i, rs := range byShard {
		for c := 0; c < len(rs); c += 1000 {
			chunk := rs[c:min(c+1000, len(rs))]
			var args []any
			for _, r := range chunk {
				at := then.Add(time.Duration(r.id%3000) * time.Second) // changes spread over the past hour
				args = append(args, r.id, campaign, 1000+r.id%97, r.project, r.school, r.grade, r.result, canonical.Projects[r.project].Unit,
					r.version, r.deleted, at, at)
			}
			q := `INSERT INTO fitness_result (data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted,
				create_time, update_time) VALUES ` + strings.TrimSuffix(strings.Repeat("(?,?,?,?,?,?,?,?,?,?,?,?),", len(chunk)), ",")
			if _, err := f.dbs[i].Exec(q, args...); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// purge removes tombstones from fitness_result (their deletion records stay
// in deletion_log, shard migration 0004).
func (f *fixture) purge(t *testing.T, ids ...int64) {
	t.Helper()
	for _, id := range ids {
		if _, err := f.dbs[f.m.Owner(id)].Exec("DELETE FROM fitness_result WHERE data_id = ? AND is_deleted = 1", id); err != nil {
			t.Fatal(err)
		}
	}
}

// project writes rows into the projection in large inserts.
func (f *fixture) project(t *testing.T, rows []chstore.Row) {
	t.Helper()
	for c := 0; c < len(rows); c += 20000 {
		if err := f.proj.Insert(context.Background(), rows[c:min(c+20000, len(rows))]); err != nil {
			t.Fatal(err)
		}
	}
}

// history delivers, per record, an older version (when there is one) and
// its current version as wrong(r) maps it, in separate inserts (a current
// ClickHouse collapses equal keys within one insert).
func (f *fixture) history(t *testing.T, recs []rec, epoch uint16, wrong func(rec) (rec, bool)) {
	t.Helper()
	var older, current []chstore.Row
	for _, r := range recs {
		if r.version > 1 {
			o := r
			o.version, o.deleted, o.result = r.version-1, false, map[int64]string{3: "1", 4: "300"}[r.project]
			older = append(older, f.row(o, 0))
		}
		if w, ok := wrong(r); ok {
			current = append(current, f.row(w, epoch))
		}
	}
	f.project(t, older)
	f.project(t, current)
}

func (f *fixture) compare(t *testing.T, s reconcile.Scope) map[int64]reconcile.Class {
	t.Helper()
	res, err := reconcile.Compare(context.Background(), reconcile.MySQLSource{Shards: f.dbs}, reconcile.ClickHouseTarget{Conn: f.ch.Conn},
		s, reconcile.DepthContent, reconcile.StoredBuckets, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]reconcile.Class{}
	for _, d := range res.Discrepancies {
		got[d.DataID] = d.Class
	}
	return got
}

// truth is the live records of the campaign on the shards, as the
// projection's current state reports them.
func (f *fixture) truth(t *testing.T) []chstore.Current {
	t.Helper()
	var out []chstore.Current
	for _, db := range f.dbs {
		rows, err := db.Query(`SELECT data_id, version, school_id, project_id, grade, result, unit FROM fitness_result
			WHERE detect_id = ? AND is_deleted = 0`, campaign)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var c chstore.Current
			if err := rows.Scan(&c.DataID, &c.Version, &c.SchoolID, &c.ProjectID, &c.Grade, &c.Result, &c.Unit); err != nil {
				t.Fatal(err)
			}
			if c.Result, err = canonical.Decimal(c.Result); err != nil {
				t.Fatal(err)
			}
			out = append(out, c)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].DataID < out[j].DataID })
	return out
}

func (f *fixture) state(t *testing.T) []chstore.Current {
	t.Helper()
	s, err := f.proj.CurrentState(context.Background(), campaign)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *fixture) floor(t *testing.T) uint16 {
	t.Helper()
	fl, err := f.proj.EpochFloor(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return fl
}

// rebuildTables counts the rebuild's staging and snapshot tables.
func (f *fixture) rebuildTables(t *testing.T) uint64 {
	t.Helper()
	var n uint64
	if err := f.ch.Conn.QueryRow(context.Background(), `SELECT count() FROM system.tables
		WHERE database = currentDatabase() AND name LIKE 'fitness_result_versions_rebuild%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func testOptions() rebuild.Options {
	return rebuild.Options{Grace: 200 * time.Millisecond, VerifyRounds: 3}
}

// phases records the phases a rebuild reported, in order, once each.
type phases struct{ seen []string }

func (p *phases) progress(phase string, _, _ int64) {
	if len(p.seen) == 0 || p.seen[len(p.seen)-1] != phase {
		p.seen = append(p.seen, phase)
	}
}

// defectiveCampaign seeds n records whose projection holds, at epoch 0, the
// output of a defective mapping: wrong school for every third live record,
// a result off by 0.1 for every fifth, and the tombstone of every
// twenty-second record never delivered and then purged at the source.
func defectiveCampaign(t *testing.T, f *fixture, n int) (recs []rec, defective map[int64]bool) {
	t.Helper()
	recs = records(n)
	f.seedShards(t, recs)
	var purged []int64
	defective = map[int64]bool{}
	f.history(t, recs, 0, func(r rec) (rec, bool) {
		i := r.id - 100000
		switch {
		case r.deleted && i%22 == 0:
			purged = append(purged, r.id)
			defective[r.id] = true
			return rec{}, false // the older live version is all it got
		case r.deleted:
			return r, true
		case i%3 == 0:
			r.school += 100
			defective[r.id] = true
		case i%5 == 0:
			m, _ := canonical.Milli(r.result)
			r.result = fmt.Sprintf("%d.%03d", (m+100)/1000, (m+100)%1000)
			defective[r.id] = true
		}
		return r, true
	})
	f.purge(t, purged...)
	return recs, defective
}

func TestRebuildFixesDefectiveMapping(t *testing.T) {
	f := newFixture(t)
	const n = 6000
	_, defective := defectiveCampaign(t, f, n)
	before := f.compare(t, reconcile.Scope{DetectID: campaign})
	if len(before) != len(defective) {
		t.Fatalf("before the rebuild %d discrepancies, want the %d defective records", len(before), len(defective))
	}
	classes := map[reconcile.Class]int{}
	for id, c := range before {
		if !defective[id] {
			t.Errorf("record %d reported %s but is not defective", id, c)
		}
		classes[c]++
	}
	if classes[reconcile.ContentMismatch] == 0 || classes[reconcile.DeletionNotApplied] == 0 {
		t.Fatalf("discrepancy classes before the rebuild = %v; want equal-version content mismatches and purged tombstones", classes)
	}

	b := rebuild.New(f.dbs, f.ids, f.ch.Conn, testOptions())
	var p phases
	start := time.Now()
	rows, err := b.Rebuild(context.Background(), reconcile.Scope{DetectID: campaign}, 1, p.progress)
	if err != nil {
		t.Fatal(err)
	}
	secs := time.Since(start).Seconds()
	t.Logf("%s: rebuilt %d rows in %.2fs: %.0f rows/s (scan, catch-up, both verifications, switch, retire)", infratest.ClickHouseEngine(), rows, secs, float64(rows)/secs)
	if rows < n {
		t.Errorf("rebuild wrote %d rows, want at least the %d records", rows, n)
	}
	want := []string{rebuild.PhaseScan, rebuild.PhaseCatchUp, rebuild.PhaseVerifyStaging, rebuild.PhaseSwitch, rebuild.PhaseVerify, rebuild.PhaseRetire, rebuild.PhaseDone}
	if diff := cmp.Diff(want, p.seen); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
	if got := f.compare(t, reconcile.Scope{DetectID: campaign}); len(got) != 0 {
		t.Errorf("CONTENT reconciliation after the rebuild: %d discrepancies: %v", len(got), got)
	}
	if diff := cmp.Diff(f.truth(t), f.state(t)); diff != "" {
		t.Errorf("current state vs the shards, record by record (-shards +projection):\n%s", diff)
	}
	if fl := f.floor(t); fl != 1 {
		t.Errorf("epoch floor = %d, want 1", fl)
	}
	if n := f.rebuildTables(t); n != 0 {
		t.Errorf("%d rebuild tables left after a verified rebuild", n)
	}
	// The origin of a fixed record: the defective row at epoch 0 (unless a
	// merge dropped it) and the rebuilt one at epoch 1 on top.
	o, err := f.proj.Origins(context.Background(), campaign, 100003)
	if err != nil || len(o) == 0 || o[len(o)-1].Epoch != 1 || o[len(o)-1].SchoolID != 13 {
		t.Errorf("origins of record 100003 = %+v, %v; want the rebuilt row (epoch 1, school 13) on top", o, err)
	}

	// The procedure may be repeated at the floor's epoch; nothing changes.
	if _, err := b.Rebuild(context.Background(), reconcile.Scope{DetectID: campaign}, 1, nil); err != nil {
		t.Fatalf("rebuild again at the floor's epoch: %v", err)
	}
	if diff := cmp.Diff(f.truth(t), f.state(t)); diff != "" {
		t.Errorf("current state after a second rebuild (-shards +projection):\n%s", diff)
	}
}

func TestRebuildOfOneSchoolLeavesTheRestAlone(t *testing.T) {
	f := newFixture(t)
	recs, defective := defectiveCampaign(t, f, 2000)
	school := map[int64]int64{}
	for _, r := range recs {
		school[r.id] = r.school
	}
	scope := reconcile.Scope{DetectID: campaign, SchoolID: 12}
	if _, err := rebuild.New(f.dbs, f.ids, f.ch.Conn, testOptions()).Rebuild(context.Background(), scope, 1, nil); err != nil {
		t.Fatal(err)
	}
	if got := f.compare(t, scope); len(got) != 0 {
		t.Errorf("the rebuilt school still has %d discrepancies: %v", len(got), got)
	}
	want := map[int64]bool{}
	for id := range defective {
		if school[id] != 12 {
			want[id] = true
		}
	}
	got := map[int64]bool{}
	for id := range f.compare(t, reconcile.Scope{DetectID: campaign}) {
		got[id] = true
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defects left outside the school (-want +got):\n%s", diff)
	}
	var outside uint64
	if err := f.ch.Conn.QueryRow(context.Background(), "SELECT count() FROM fitness_result_versions WHERE epoch = 1 AND school_id != 12").Scan(&outside); err != nil || outside != 0 {
		t.Errorf("%d rows at the rebuild epoch outside the school (%v)", outside, err)
	}
}

func TestRebuildRefusesRetiredEpoch(t *testing.T) {
	f := newFixture(t)
	f.seedShards(t, records(50))
	if err := f.proj.RaiseEpochFloor(context.Background(), chstore.EpochRetirement{Epoch: 3, Time: time.Now(), DetectID: campaign}); err != nil {
		t.Fatal(err)
	}
	b := rebuild.New(f.dbs, f.ids, f.ch.Conn, testOptions())
	scope := reconcile.Scope{DetectID: campaign}
	if _, err := b.Rebuild(context.Background(), scope, 2, nil); !errors.Is(err, rebuild.ErrEpochRetired) ||
		!strings.Contains(err.Error(), "epoch 2") || !strings.Contains(err.Error(), "floor 3") {
		t.Errorf("rebuild at epoch 2 under floor 3 = %v; want ErrEpochRetired naming both", err)
	}
	if _, err := b.Rebuild(context.Background(), scope, 0, nil); err == nil {
		t.Error("rebuild at epoch 0 succeeded")
	}
	if n := f.rebuildTables(t); n != 0 {
		t.Errorf("a refused rebuild created %d tables", n)
	}
	if _, err := b.Rebuild(context.Background(), scope, 3, nil); err != nil {
		t.Errorf("rebuild at the floor's epoch: %v", err)
	}
	if diff := cmp.Diff(f.truth(t), f.state(t)); diff != "" {
		t.Errorf("current state (-shards +projection):\n%s", diff)
	}
}

// A failed verification after the switch: the defective transformation ran
// at epoch 2 for some records and the operator rebuilt at epoch 1, so those
// rows keep outranking the rebuilt ones. Staging verifies, the switch
// happens, the second verification fails, and the rollback puts readers
// back exactly where they were, even after a merge folded defective rows
// into rebuilt ones during the verification.
func TestFailedVerificationAfterSwitchRollsBack(t *testing.T) {
	f := newFixture(t)
	recs, _ := defectiveCampaign(t, f, 3000)
	var high []chstore.Row
	for _, r := range recs {
		if i := r.id - 100000; i%97 == 1 && !r.deleted {
			r.grade++ // wrong, at a higher epoch than the rebuild's
			high = append(high, f.row(r, 2))
		}
	}
	f.project(t, high)
	ctx := context.Background()
	state, err := f.proj.CurrentState(ctx, campaign)
	if err != nil {
		t.Fatal(err)
	}
	report, err := f.proj.CampaignReport(ctx, campaign)
	if err != nil {
		t.Fatal(err)
	}

	merged := false
	var p phases
	_, err = rebuild.New(f.dbs, f.ids, f.ch.Conn, testOptions()).Rebuild(ctx, reconcile.Scope{DetectID: campaign}, 1, func(phase string, done, total int64) {
		p.progress(phase, done, total)
		if phase == rebuild.PhaseVerify && !merged {
			merged = true // a merge during the verification, as the background pool may run one
			if err := f.ch.Conn.Exec(ctx, "OPTIMIZE TABLE fitness_result_versions FINAL"); err != nil {
				t.Error(err)
			}
		}
	})
	var verr *rebuild.VerificationError
	if !errors.Is(err, rebuild.ErrVerification) || !errors.As(err, &verr) || !verr.RolledBack || len(verr.Discrepancies) != len(high) {
		t.Fatalf("rebuild = %v; want a rolled-back verification failure of the %d records at epoch 2", err, len(high))
	}
	t.Logf("error: %v", err)
	if !strings.Contains(err.Error(), "@epoch2") {
		t.Errorf("error %q does not show the outranking epoch", err)
	}
	if !cmp.Equal([]string{rebuild.PhaseScan, rebuild.PhaseCatchUp, rebuild.PhaseVerifyStaging, rebuild.PhaseSwitch, rebuild.PhaseVerify, rebuild.PhaseRollback}, p.seen) {
		t.Errorf("phases = %v", p.seen)
	}
	if diff := cmp.Diff(state, f.state(t)); diff != "" {
		t.Errorf("current state after the rollback (-before +after):\n%s", diff)
	}
	got, err := f.proj.CampaignReport(ctx, campaign)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(report, got); diff != "" {
		t.Errorf("report after the rollback (-before +after):\n%s", diff)
	}
	var rebuilt uint64
	if err := f.ch.Conn.QueryRow(ctx, "SELECT count() FROM fitness_result_versions WHERE epoch = 1").Scan(&rebuilt); err != nil || rebuilt != 0 {
		t.Errorf("%d rows at the rebuild epoch left (%v)", rebuilt, err)
	}
	if fl := f.floor(t); fl != 0 {
		t.Errorf("a failed rebuild raised the floor to %d", fl)
	}
	if n := f.rebuildTables(t); n != 1 {
		t.Errorf("%d rebuild tables; want the staging table kept for investigation", n)
	}
}

// The switch statement never reaches ClickHouse: the builder's connection is
// cut (a TCP proxy) when it reports the switch. Readers keep the previous
// projection, nothing is retired, and a new rebuild succeeds.
func TestConnectionCutAtTheSwitchChangesNothing(t *testing.T) {
	if infratest.ClickHouseIsInProcess() {
		t.Skip("needs a ClickHouse reached over the network (the cut is a TCP proxy); runs on the 18.16 server pass")
	}
	f := newFixture(t)
	defectiveCampaign(t, f, 2000)
	ctx := context.Background()
	state := f.state(t)
	proxy := infratest.NewProxy(t, infratest.ClickHouseAddr())
	conn, err := chstore.Open(ctx, chstore.Options{Addr: proxy.Addr(), Database: f.ch.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = rebuild.New(f.dbs, f.ids, conn, testOptions()).Rebuild(ctx, reconcile.Scope{DetectID: campaign}, 1, func(phase string, done, _ int64) {
		if phase == rebuild.PhaseSwitch && done == 0 {
			proxy.Down()
		}
	})
	if err == nil || !strings.Contains(err.Error(), "switching readers") {
		t.Fatalf("rebuild with the connection cut at the switch = %v; want the switch's failure", err)
	}
	t.Logf("error: %v", err)
	proxy.Up()
	if diff := cmp.Diff(state, f.state(t)); diff != "" {
		t.Errorf("current state after the failed switch (-before +after):\n%s", diff)
	}
	if fl := f.floor(t); fl != 0 {
		t.Errorf("floor after a failed switch = %d", fl)
	}
	if _, err := rebuild.New(f.dbs, f.ids, f.ch.Conn, testOptions()).Rebuild(ctx, reconcile.Scope{DetectID: campaign}, 1, nil); err != nil {
		t.Fatalf("rebuild after the outage: %v", err)
	}
	if diff := cmp.Diff(f.truth(t), f.state(t)); diff != "" {
		t.Errorf("current state after the second rebuild (-shards +projection):\n%s", diff)
	}
}
