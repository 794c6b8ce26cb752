package schema_test

import (
	"database/sql"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// bucketRow is one campaign_bucket row.
type bucketRow struct {
	Revision, Live        int64
	VersionXor, DigestXor uint64
	DetectID, Bucket      int64
}

func buckets(t *testing.T, db *sql.DB) map[[2]int64]bucketRow {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), "SELECT detect_id, bucket, revision, live, version_xor, digest_xor FROM campaign_bucket")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[[2]int64]bucketRow{}
	for rows.Next() {
		var b bucketRow
		if err := rows.Scan(&b.DetectID, &b.Bucket, &b.Revision, &b.Live, &b.VersionXor, &b.DigestXor); err != nil {
			t.Fatal(err)
		}
		out[[2]int64{b.DetectID, b.Bucket}] = b
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// logicalBuckets aggregates what campaign_bucket must hold (revision aside):
// every row of fitness_result and every deletion record of a purged row.
func logicalBuckets(t *testing.T, db *sql.DB) map[[2]int64]bucketRow {
	t.Helper()
	// The digests hashed here from the stored values (canonical's SQL), not
	// read from the stored digest columns the triggers read.
	hash, digest := canonical.MySQLHash(canonical.MySQLVersionString), canonical.MySQLHash(canonical.MySQLString)
	rows, err := db.QueryContext(t.Context(), `SELECT detect_id, b, SUM(live), BIT_XOR(vx), BIT_XOR(dx) FROM (
		SELECT detect_id, data_id % 1024 AS b, is_deleted = 0 AS live, `+hash+` AS vx, `+digest+` AS dx FROM fitness_result
		UNION ALL
		SELECT detect_id, data_id % 1024, is_deleted = 0, `+hash+`, `+digest+` FROM deletion_log) x
		GROUP BY detect_id, b`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[[2]int64]bucketRow{}
	for rows.Next() {
		var b bucketRow
		if err := rows.Scan(&b.DetectID, &b.Bucket, &b.Live, &b.VersionXor, &b.DigestXor); err != nil {
			t.Fatal(err)
		}
		out[[2]int64{b.DetectID, b.Bucket}] = b
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) int64 {
	t.Helper()
	res, err := db.ExecContext(t.Context(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	n, _ := res.RowsAffected()
	return n
}

const insertResult = `INSERT INTO fitness_result
	(data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
	VALUES (?, 7, 41, 3, ?, 5, ?, 'm', 1, 0, '2026-05-01 08:00:00.123', '2026-05-01 08:00:00.123')`

// TestDeletionLogKeepsPurgedTombstone: removing a tombstone row leaves its
// deletion record with exactly the stored values (same canonical string and
// digest), and leaves its bucket aggregate — revision included — unchanged.
func TestDeletionLogKeepsPurgedTombstone(t *testing.T) {
	d := infratest.NewMySQLDatabase(t, schema.Shard)
	mustExec(t, d.DB, insertResult, 900001, 8, "2.21")
	mustExec(t, d.DB, "UPDATE fitness_result SET result = 2.31, version = 2, update_time = '2026-05-01 09:00:00.456' WHERE data_id = 900001")
	mustExec(t, d.DB, "UPDATE fitness_result SET is_deleted = 1, version = 3, update_time = '2026-05-02 10:30:00.789' WHERE data_id = 900001")

	const cols = "data_id, detect_id, user_id, project_id, school_id, grade, CAST(result * 1000 AS SIGNED), unit, version, is_deleted, content_digest, " +
		"version_digest, create_time, update_time, " + canonical.MySQLString
	read := func(table string) []any {
		t.Helper()
		vals := make([]any, 15)
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := d.DB.QueryRowContext(t.Context(), "SELECT "+cols+" FROM "+table+" WHERE data_id = 900001").Scan(ptrs...); err != nil {
			t.Fatalf("reading %s: %v", table, err)
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b)
			}
		}
		return vals
	}
	tombstone := read("fitness_result")
	before := buckets(t, d.DB)
	var n int
	if err := d.DB.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM deletion_log").Scan(&n); err != nil || n != 0 {
		t.Fatalf("deletion_log before the purge: %d rows, %v; want none (the tombstone row is its own record)", n, err)
	}

	if got := mustExec(t, d.DB, "DELETE FROM fitness_result WHERE data_id = 900001"); got != 1 {
		t.Fatalf("deleted %d rows", got)
	}
	if diff := cmp.Diff(tombstone, read("deletion_log")); diff != "" {
		t.Errorf("deletion record differs from the removed tombstone (-tombstone +record):\n%s", diff)
	}
	if diff := cmp.Diff(before, buckets(t, d.DB)); diff != "" {
		t.Errorf("purging a tombstone moved its bucket (-before +after):\n%s", diff)
	}
	var purged sql.NullTime
	if err := d.DB.QueryRowContext(t.Context(), "SELECT purge_time FROM deletion_log WHERE data_id = 900001").Scan(&purged); err != nil || !purged.Valid {
		t.Errorf("purge_time = %v, %v; want the removal time", purged, err)
	}
}

// TestDeletingLiveRowLeavesNoDeletionRecord: a live row removed outside the
// contract is no tombstone: no deletion record, and it leaves its bucket as
// before 0004 (revision +1, live -1, XORs without it).
func TestDeletingLiveRowLeavesNoDeletionRecord(t *testing.T) {
	d := infratest.NewMySQLDatabase(t, schema.Shard)
	mustExec(t, d.DB, insertResult, 1025, 8, "2.21")
	mustExec(t, d.DB, "DELETE FROM fitness_result WHERE data_id = 1025")
	var n int
	if err := d.DB.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM deletion_log").Scan(&n); err != nil || n != 0 {
		t.Errorf("deletion_log after removing a live row: %d rows, %v; want none", n, err)
	}
	want := map[[2]int64]bucketRow{{7, 1}: {DetectID: 7, Bucket: 1, Revision: 2}}
	if diff := cmp.Diff(want, buckets(t, d.DB)); diff != "" {
		t.Errorf("bucket after removing a live row (-want +got):\n%s", diff)
	}
}

// TestBucketAggregatesCountPurgedTombstones: after records, corrections,
// deletions, purges and removals of live rows, every campaign_bucket row
// equals the aggregate of fitness_result plus deletion_log.
func TestBucketAggregatesCountPurgedTombstones(t *testing.T) {
	d := infratest.NewMySQLDatabase(t, schema.Shard)
	for i := range int64(300) {
		id := 1 + i*7 // several ids per bucket
		mustExec(t, d.DB, insertResult, id, 10+i%5, "1.5")
		if i%3 == 0 {
			mustExec(t, d.DB, "UPDATE fitness_result SET result = 1.75, version = 2 WHERE data_id = ?", id)
		}
		if i%4 == 0 {
			mustExec(t, d.DB, "UPDATE fitness_result SET is_deleted = 1, version = version + 1 WHERE data_id = ?", id)
		}
	}
	// Purge half the tombstones, and remove a few live rows.
	if n := mustExec(t, d.DB, "DELETE FROM fitness_result WHERE is_deleted = 1 AND data_id % 2 = 1"); n == 0 {
		t.Fatal("no tombstone purged")
	}
	mustExec(t, d.DB, "DELETE FROM fitness_result WHERE is_deleted = 0 AND data_id % 13 = 0")

	got := buckets(t, d.DB)
	for k, b := range got {
		b.Revision = 0
		if b.Live == 0 && b.VersionXor == 0 && b.DigestXor == 0 {
			delete(got, k) // emptied by removals of live rows
			continue
		}
		got[k] = b
	}
	if diff := cmp.Diff(logicalBuckets(t, d.DB), got); diff != "" {
		t.Errorf("campaign_bucket differs from fitness_result + deletion_log (-logical +stored):\n%s", diff)
	}
}
