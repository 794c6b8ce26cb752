package reconcile_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// full is a record with every business field settable.
type full struct {
	id, version, user, project, school int64
	grade                              int16
	result, unit                       string
	deleted                            bool
}

func (f *fixture) sourceFull(t *testing.T, r full) {
	t.Helper()
	if _, err := f.shards[r.school%2].DB.Exec(`INSERT INTO fitness_result
		(data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`,
		r.id, campaign, r.user, r.project, r.school, r.grade, r.result, r.unit, r.version, r.deleted); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) targetFull(t *testing.T, rs ...full) {
	t.Helper()
	var rows []chstore.Row
	for _, r := range rs {
		rows = append(rows, chstore.Row{DetectID: campaign, DataID: r.id, UserID: r.user, ProjectID: r.project, SchoolID: r.school,
			Grade: r.grade, Version: r.version, Result: r.result, Unit: r.unit, IsDeleted: r.deleted,
			EventID: fmt.Sprintf("fitness-result-%d-v%d", r.id, r.version), ShardID: "shard-x"})
	}
	if err := f.proj.Insert(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
}

// TestStaleRecordsInOneBucketNeverCancel: k = 1..8 records of one bucket
// (ids 1024 apart: one bucket at 64 buckets and at the shards' stored 1024),
// on both shards, stale in ClickHouse by equal version gaps (all v1 in the
// projection, v2 in the shards) or unequal ones (v1 against v2..v(k+1)),
// beside a consistent record of the same bucket. Each of the 16 cases has a
// bucket of its own in one campaign of consistent records. VERSIONS depth
// reports every stale record as STALE_TARGET_VERSION, from the scan-time
// aggregates (64 buckets) and from the stored ones (campaign_bucket, kept by
// the shard triggers). With the former fingerprint ((data_id << 20) ^
// (version << 1) ^ is_deleted), every even k with equal gaps left its bucket
// matching and its records unreported.
func TestStaleRecordsInOneBucketNeverCancel(t *testing.T) {
	t.Logf("engines: %s shards, %s projection", infratest.MySQLEngine(), infratest.ClickHouseEngine())
	f := newFixture(t)
	f.seed(t, 100)
	want := map[int64]reconcile.Class{}
	var delivered []full
	bucket := int64(0)
	for _, gaps := range []string{"equal", "unequal"} {
		for k := int64(1); k <= 8; k++ {
			bucket++ // buckets 1..16 (of 64 and of 1024); seeded ids start at 100000
			for i := range k {
				r := full{id: 700000 + 1024*(8*bucket+i) + bucket, version: 1, user: 40 + i, project: 3, school: 7 + i%2,
					grade: 5, result: "2.21", unit: "m"}
				delivered = append(delivered, r)
				r.version, r.result = 2, "2.31"
				if gaps == "unequal" {
					r.version = 2 + i
				}
				f.sourceFull(t, r)
				want[r.id] = reconcile.StaleTargetVersion
			}
			// A consistent record in the same bucket too.
			ok := full{id: 700000 + 1024*(8*bucket+k) + bucket, version: 3, user: 9, project: 3, school: 8, grade: 5, result: "1.5", unit: "m"}
			f.sourceFull(t, ok)
			delivered = append(delivered, ok)
		}
	}
	f.targetFull(t, delivered...)

	report := func(got map[int64]reconcile.Class) {
		t.Helper()
		for bucket := int64(1); bucket <= 16; bucket++ {
			gaps, k := "equal", bucket
			if bucket > 8 {
				gaps, k = "unequal", bucket-8
			}
			found := 0
			for id := range got {
				if id >= 700000 && (id-700000)%1024 == bucket {
					found++
				}
			}
			if found != int(k) {
				t.Errorf("%s gaps, k=%d: %d of %d stale records found", gaps, k, found, k)
			}
		}
	}
	got := f.compare(t, reconcile.DepthVersions)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("VERSIONS, 64 buckets aggregated at scan time (-want +got):\n%s", diff)
		report(got)
	}
	got = f.compareWith(t, reconcile.DepthVersions, reconcile.StoredBuckets)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("VERSIONS, the shards' stored bucket aggregates (-want +got):\n%s", diff)
		report(got)
	}
}

// TestContentFindsEachWrongField: records of one bucket, each wrong in
// ClickHouse in one business field in turn at the right id and version (the
// student, project, school, grade, result, unit), are each found at CONTENT
// depth as CONTENT_MISMATCH, from scan-time and stored aggregates; VERSIONS
// depth, which compares ids, versions and deletion only, finds none. A
// result credited to the wrong student was invisible before the student
// entered the digest.
func TestContentFindsEachWrongField(t *testing.T) {
	f := newFixture(t)
	f.seed(t, 100)
	good := full{version: 2, user: 4, project: 3, school: 7, grade: 5, result: "2.31", unit: "m"}
	wrongs := []struct {
		field string
		apply func(r *full)
	}{
		{"user_id", func(r *full) { r.user = 5 }},
		{"project_id", func(r *full) { r.project = 4 }},
		{"school_id", func(r *full) { r.school = 9 }},
		{"grade", func(r *full) { r.grade = 6 }},
		{"result", func(r *full) { r.result = "2.32" }},
		{"unit", func(r *full) { r.unit = "cm" }},
	}
	want := map[int64]reconcile.Class{}
	for i, w := range wrongs {
		src := good
		src.id = 800001 + 1024*int64(i) // one bucket
		f.sourceFull(t, src)
		dst := src
		w.apply(&dst)
		f.targetFull(t, dst)
		want[src.id] = reconcile.ContentMismatch
		t.Logf("record %d: wrong %s", src.id, w.field)
	}
	if diff := cmp.Diff(want, f.compare(t, reconcile.DepthContent)); diff != "" {
		t.Errorf("CONTENT, 64 buckets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, f.compareWith(t, reconcile.DepthContent, reconcile.StoredBuckets)); diff != "" {
		t.Errorf("CONTENT, stored aggregates (-want +got):\n%s", diff)
	}
	if got := f.compare(t, reconcile.DepthVersions); len(got) != 0 {
		t.Errorf("VERSIONS reported %v; every wrong record keeps its id, version and deletion state", got)
	}
}

// TestContentFindsWrongStudentAlone: one result credited to another student
// at the right version, alone in the campaign's differences: CONTENT depth
// reports it.
func TestContentFindsWrongStudentAlone(t *testing.T) {
	f := newFixture(t)
	f.seed(t, 50)
	r := full{id: 900070, version: 2, user: 4, project: 3, school: 7, grade: 5, result: "2.31", unit: "m"}
	f.sourceFull(t, r)
	r.user = 44
	f.targetFull(t, r)
	want := map[int64]reconcile.Class{900070: reconcile.ContentMismatch}
	if diff := cmp.Diff(want, f.compare(t, reconcile.DepthContent)); diff != "" {
		t.Errorf("CONTENT (-want +got):\n%s", diff)
	}
}
