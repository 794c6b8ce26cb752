package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

const campaign = 10001

// fixture is a campaign on two real MariaDB shards and a real ClickHouse
// projection.
type fixture struct {
	shards []*infratest.MySQLDatabase
	proj   *chstore.Projection
	src    reconcile.MySQLSource
	dst    reconcile.ClickHouseTarget
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{}
	for range 2 {
		db := infratest.NewMySQLDatabase(t, schema.Shard)
		f.shards = append(f.shards, db)
		f.src.Shards = append(f.src.Shards, db.DB)
	}
	ch := infratest.NewClickHouseDatabase(t, true)
	f.proj = chstore.NewProjection(ch.Conn)
	f.dst = reconcile.ClickHouseTarget{Conn: ch.Conn}
	return f
}

type rec struct {
	id, version, school int64
	result              string
	deleted             bool
}

// source writes the authoritative state of r on its school's shard.
func (f *fixture) source(t *testing.T, r rec) {
	t.Helper()
	db := f.shards[r.school%2]
	if _, err := db.DB.Exec(`INSERT INTO fitness_result
		(data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
		VALUES (?, ?, 4, 3, ?, 5, ?, 'm', ?, ?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))
		ON DUPLICATE KEY UPDATE school_id = VALUES(school_id), result = VALUES(result), version = VALUES(version), is_deleted = VALUES(is_deleted)`,
		r.id, campaign, r.school, r.result, r.version, r.deleted); err != nil {
		t.Fatal(err)
	}
}

// target writes a delivered version of r into the projection.
func (f *fixture) target(t *testing.T, r rec) {
	t.Helper()
	if err := f.proj.Insert(context.Background(), []chstore.Row{{DetectID: campaign, DataID: r.id, UserID: 4, ProjectID: 3,
		SchoolID: r.school, Grade: 5, Version: r.version, Result: r.result, Unit: "m", IsDeleted: r.deleted,
		EventID: fmt.Sprintf("fitness-result-%d-v%d", r.id, r.version), ShardID: "shard-x"}}); err != nil {
		t.Fatal(err)
	}
}

// both writes r to both sides (a consistent record).
func (f *fixture) both(t *testing.T, r rec) { f.source(t, r); f.target(t, r) }

func (f *fixture) compare(t *testing.T, depth reconcile.Depth) map[int64]reconcile.Class {
	t.Helper()
	return f.compareWith(t, depth, 64)
}

// compareWith compares with n buckets: reconcile.StoredBuckets reads the
// aggregates the shards keep at write time; other counts aggregate at scan time.
func (f *fixture) compareWith(t *testing.T, depth reconcile.Depth, n int) map[int64]reconcile.Class {
	t.Helper()
	res, err := reconcile.Compare(context.Background(), f.src, f.dst, reconcile.Scope{DetectID: campaign}, depth, n, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]reconcile.Class{}
	for _, d := range res.Discrepancies {
		got[d.DataID] = d.Class
	}
	return got
}

// seed writes n consistent records, some corrected and some deleted, with
// their older versions also delivered (one ClickHouse insert for all).
func (f *fixture) seed(t *testing.T, n int) {
	t.Helper()
	var rows []chstore.Row
	row := func(r rec) chstore.Row {
		return chstore.Row{DetectID: campaign, DataID: r.id, UserID: 4, ProjectID: 3, SchoolID: r.school, Grade: 5,
			Version: r.version, Result: r.result, Unit: "m", IsDeleted: r.deleted,
			EventID: fmt.Sprintf("fitness-result-%d-v%d", r.id, r.version), ShardID: "shard-x"}
	}
	for i := range int64(n) {
		r := rec{id: 100000 + i, version: 1, school: 10 + i%7, result: fmt.Sprintf("%d.%02d", 1+i%3, i%100)}
		rows = append(rows, row(r))
		if i%5 == 0 {
			r.version, r.result = 2, "2.31"
		}
		if i%11 == 0 {
			r.version, r.deleted = r.version+1, true
		}
		rows = append(rows, row(r))
		f.source(t, r)
	}
	if err := f.proj.Insert(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
}

var injections = []struct {
	class reconcile.Class
	id    int64
	apply func(t *testing.T, f *fixture, id int64)
}{
	{reconcile.MissingInTarget, 900001, func(t *testing.T, f *fixture, id int64) {
		f.source(t, rec{id: id, version: 1, school: 7, result: "2.21"})
	}},
	{reconcile.StaleTargetVersion, 900002, func(t *testing.T, f *fixture, id int64) {
		f.both(t, rec{id: id, version: 1, school: 7, result: "2.21"})
		f.source(t, rec{id: id, version: 2, school: 7, result: "2.31"})
	}},
	{reconcile.DeletionNotApplied, 900003, func(t *testing.T, f *fixture, id int64) {
		f.both(t, rec{id: id, version: 1, school: 8, result: "2.21"})
		f.source(t, rec{id: id, version: 2, school: 8, result: "2.21", deleted: true})
	}},
	{reconcile.ContentMismatch, 900004, func(t *testing.T, f *fixture, id int64) {
		// A mapping defect: wrong school, same id and version.
		f.source(t, rec{id: id, version: 2, school: 7, result: "2.31"})
		f.target(t, rec{id: id, version: 2, school: 9, result: "2.31"})
	}},
	{reconcile.UnexpectedTargetRecord, 900005, func(t *testing.T, f *fixture, id int64) {
		f.target(t, rec{id: id, version: 1, school: 7, result: "1.00"})
	}},
	{reconcile.TargetAheadOfSource, 900006, func(t *testing.T, f *fixture, id int64) {
		f.both(t, rec{id: id, version: 2, school: 8, result: "2.31"})
		f.target(t, rec{id: id, version: 3, school: 8, result: "2.41"})
	}},
}

func TestEachClassAlone(t *testing.T) {
	for _, inj := range injections {
		t.Run(inj.class.String(), func(t *testing.T) {
			f := newFixture(t)
			f.seed(t, 200)
			inj.apply(t, f, inj.id)
			want := map[int64]reconcile.Class{inj.id: inj.class}
			if diff := cmp.Diff(want, f.compare(t, reconcile.DepthContent)); diff != "" {
				t.Errorf("discrepancies (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAllClassesTogether(t *testing.T) {
	f := newFixture(t)
	f.seed(t, 500)
	want := map[int64]reconcile.Class{}
	for _, inj := range injections {
		inj.apply(t, f, inj.id)
		want[inj.id] = inj.class
	}
	if diff := cmp.Diff(want, f.compare(t, reconcile.DepthContent)); diff != "" {
		t.Errorf("CONTENT discrepancies (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, f.compareWith(t, reconcile.DepthContent, reconcile.StoredBuckets)); diff != "" {
		t.Errorf("CONTENT discrepancies from the stored bucket aggregates (-want +got):\n%s", diff)
	}
	delete(want, 900004) // the mapping defect keeps id and version
	if diff := cmp.Diff(want, f.compare(t, reconcile.DepthVersions)); diff != "" {
		t.Errorf("VERSIONS discrepancies (-want +got):\n%s", diff)
	}
}

// Two wrong records whose errors cancel in the totals (schools swapped)
// are caught at CONTENT depth, and not at VERSIONS depth.
func TestCancellingErrors(t *testing.T) {
	f := newFixture(t)
	f.seed(t, 100)
	f.source(t, rec{id: 900010, version: 1, school: 7, result: "2.00"})
	f.source(t, rec{id: 900011, version: 1, school: 8, result: "2.00"})
	f.target(t, rec{id: 900010, version: 1, school: 8, result: "2.00"})
	f.target(t, rec{id: 900011, version: 1, school: 7, result: "2.00"})
	want := map[int64]reconcile.Class{900010: reconcile.ContentMismatch, 900011: reconcile.ContentMismatch}
	if diff := cmp.Diff(want, f.compare(t, reconcile.DepthContent)); diff != "" {
		t.Errorf("CONTENT (-want +got):\n%s", diff)
	}
	if got := f.compare(t, reconcile.DepthVersions); len(got) != 0 {
		t.Errorf("VERSIONS reported %v; the defect keeps ids and versions", got)
	}
	if diff := cmp.Diff(want, f.compareWith(t, reconcile.DepthContent, reconcile.StoredBuckets)); diff != "" {
		t.Errorf("CONTENT from the stored bucket aggregates (-want +got):\n%s", diff)
	}
}

func TestTrailingZeroIsNotADiscrepancy(t *testing.T) {
	f := newFixture(t)
	f.source(t, rec{id: 900020, version: 2, school: 7, result: "2.31"})
	f.target(t, rec{id: 900020, version: 2, school: 7, result: "2.310"})
	if got := f.compare(t, reconcile.DepthContent); len(got) != 0 {
		t.Errorf("2.31 vs 2.310 reported as %v", got)
	}
}

// A candidate that the projection fixes within the grace period (ordinary
// lag) is dropped by the re-check; a real one stays.
func TestRecheckDropsLag(t *testing.T) {
	f := newFixture(t)
	f.seed(t, 50)
	f.source(t, rec{id: 900030, version: 1, school: 7, result: "2.21"}) // still in flight
	f.source(t, rec{id: 900031, version: 1, school: 8, result: "2.21"}) // really lost
	res, err := reconcile.Compare(context.Background(), f.src, f.dst, reconcile.Scope{DetectID: campaign}, reconcile.DepthContent, 64, nil, nil)
	if err != nil || len(res.Discrepancies) != 2 {
		t.Fatalf("candidates = %v, %v", res.Discrepancies, err)
	}
	time.Sleep(50 * time.Millisecond)
	f.target(t, rec{id: 900030, version: 1, school: 7, result: "2.21"}) // arrives during the grace period
	confirmed, err := reconcile.Recheck(context.Background(), f.src, f.dst, reconcile.Scope{DetectID: campaign}, reconcile.DepthContent, res.Discrepancies)
	if err != nil {
		t.Fatal(err)
	}
	if len(confirmed) != 1 || confirmed[0].DataID != 900031 || confirmed[0].Class != reconcile.MissingInTarget {
		t.Errorf("confirmed = %+v; want only 900031 missing", confirmed)
	}
	if confirmed[0].Source == nil || confirmed[0].Source.Canonical != "900031|1|0|10001|4|3|8|5|2210|m" {
		t.Errorf("source canonical = %+v", confirmed[0].Source)
	}
}

func TestCountsDepthFindsOmissions(t *testing.T) {
	f := newFixture(t)
	f.seed(t, 100)
	f.source(t, rec{id: 900040, version: 1, school: 7, result: "2.21"})
	got := f.compare(t, reconcile.DepthCounts)
	if diff := cmp.Diff(map[int64]reconcile.Class{900040: reconcile.MissingInTarget}, got); diff != "" {
		t.Errorf("COUNTS (-want +got):\n%s", diff)
	}
}

func TestClassify(t *testing.T) {
	r := func(v int64, del bool, dig uint64) *reconcile.Record {
		return &reconcile.Record{Version: v, Deleted: del, Digest: dig}
	}
	tests := []struct {
		name     string
		src, dst *reconcile.Record
		want     reconcile.Class
		bad      bool
	}{
		{"equal", r(2, false, 1), r(2, false, 1), 0, false},
		{"missing", r(1, false, 1), nil, reconcile.MissingInTarget, true},
		{"deleted before delivery", r(2, true, 1), nil, 0, false},
		{"stale", r(2, false, 1), r(1, false, 2), reconcile.StaleTargetVersion, true},
		{"deletion not applied", r(2, true, 1), r(1, false, 2), reconcile.DeletionNotApplied, true},
		{"both deleted", r(3, true, 1), r(2, true, 2), 0, false},
		{"content", r(2, false, 1), r(2, false, 9), reconcile.ContentMismatch, true},
		{"unexpected", nil, r(1, false, 1), reconcile.UnexpectedTargetRecord, true},
		{"unexpected tombstone", nil, r(1, true, 1), 0, false},
		{"ahead", r(2, false, 1), r(3, false, 1), reconcile.TargetAheadOfSource, true},
		{"deleted in target at the same version", r(2, false, 1), r(2, true, 1), reconcile.ContentMismatch, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, bad := reconcile.Classify(tc.src, tc.dst, reconcile.DepthContent)
			if c != tc.want || bad != tc.bad {
				t.Errorf("Classify = %v, %v; want %v, %v", c, bad, tc.want, tc.bad)
			}
		})
	}
	// Deletion state is compared at VERSIONS depth too.
	if c, bad := reconcile.Classify(r(2, false, 1), r(2, true, 9), reconcile.DepthVersions); c != reconcile.ContentMismatch || !bad {
		t.Errorf("VERSIONS: live source, deleted target at the same version = %v, %v; want CONTENT_MISMATCH", c, bad)
	}
}

// Sampling drills into matching buckets too: at COUNTS depth a stale version
// keeps the counts equal and is invisible, unless its bucket is sampled.
func TestSamplingChecksMatchingBucketsInDepth(t *testing.T) {
	f := newFixture(t)
	f.seed(t, 100)
	f.both(t, rec{id: 900050, version: 1, school: 7, result: "2.21"})
	f.source(t, rec{id: 900050, version: 2, school: 7, result: "2.31"})
	scope := reconcile.Scope{DetectID: campaign}
	res, err := reconcile.Compare(context.Background(), f.src, f.dst, scope, reconcile.DepthCounts, 64, nil, nil)
	if err != nil || len(res.Discrepancies) != 0 {
		t.Fatalf("COUNTS without sampling = %v, %v; want nothing (counts match)", res.Discrepancies, err)
	}
	res, err = reconcile.Compare(context.Background(), f.src, f.dst, scope, reconcile.DepthCounts, 64, func(int) bool { return true }, nil)
	if err != nil || len(res.Discrepancies) != 1 || res.Discrepancies[0].Class != reconcile.StaleTargetVersion {
		t.Fatalf("COUNTS with every bucket sampled = %+v, %v; want the stale version", res.Discrepancies, err)
	}
}
