package schema_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/go-cmp/cmp"

	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// shardWorkload writes records, corrections (one of them moving a result to
// another student), deletions, purged tombstones and removed live rows over
// two campaigns and many shared buckets; step 1 and step 2 touch different
// ids, so step 2 can run on a database where step 1 ran before a migration.
func shardWorkload(t *testing.T, db *sql.DB, step int) {
	t.Helper()
	base := int64(step) * 100_000
	for i := range int64(240) {
		id := base + 1 + i*37 // several ids per bucket of 1024
		campaign := 10001 + i%2
		mustExec(t, db, `INSERT INTO fitness_result
			(data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
			VALUES (?, ?, ?, 3, ?, 5, ?, 'm', 1, 0, '2026-05-01 08:00:00.123', '2026-05-01 08:00:00.123')`,
			id, campaign, 500+i, 7+i%3, fmt.Sprintf("%d.%03d", 1+i%3, i%1000))
		if i%3 == 0 {
			mustExec(t, db, "UPDATE fitness_result SET result = 2.31, version = 2 WHERE data_id = ?", id)
		}
		if i%7 == 0 {
			mustExec(t, db, "UPDATE fitness_result SET user_id = user_id + 1, version = version + 1 WHERE data_id = ?", id)
		}
		if i%5 == 0 {
			mustExec(t, db, "UPDATE fitness_result SET is_deleted = 1, version = version + 1 WHERE data_id = ?", id)
		}
	}
	// Purge some tombstones, remove some live rows outside the contract.
	mustExec(t, db, "DELETE FROM fitness_result WHERE is_deleted = 1 AND data_id % 2 = 1 AND data_id BETWEEN ? AND ?", base, base+99_999)
	mustExec(t, db, "DELETE FROM fitness_result WHERE is_deleted = 0 AND data_id % 11 = 0 AND data_id BETWEEN ? AND ?", base, base+99_999)
}

// shardState is what the migration must make equal: every record's stored
// digests (fitness_result and deletion_log) and every bucket aggregate.
type shardState struct {
	Records map[string]string
	Buckets map[[2]int64]bucketRow
}

func readShardState(t *testing.T, db *sql.DB) shardState {
	t.Helper()
	st := shardState{Records: map[string]string{}, Buckets: buckets(t, db)}
	for _, table := range []string{"fitness_result", "deletion_log"} {
		rows, err := db.QueryContext(t.Context(), `SELECT data_id, detect_id, user_id, project_id, school_id, grade, CAST(result AS CHAR), unit,
			version, is_deleted, content_digest, version_digest FROM `+table)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var r canonical.Record
			var content, version uint64
			if err := rows.Scan(&r.DataID, &r.DetectID, &r.UserID, &r.ProjectID, &r.SchoolID, &r.Grade, &r.Result, &r.Unit,
				&r.Version, &r.IsDeleted, &content, &version); err != nil {
				t.Fatal(err)
			}
			// Go's digests of the stored values.
			want, err := canonical.Digest(r)
			if err != nil {
				t.Fatal(err)
			}
			if content != want || version != canonical.VersionDigest(r) {
				t.Errorf("%s record %d: content_digest %d, version_digest %d; Go gives %d and %d", table, r.DataID, content, version, want, canonical.VersionDigest(r))
			}
			st.Records[fmt.Sprintf("%s %d", table, r.DataID)] = fmt.Sprintf("%d %d", content, version)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return st
}

// TestShardMigration0007RecomputesDigests: a shard filled under migrations
// 0001-0006 (the former digest without the student, the former version
// fingerprint) and then migrated holds what a shard migrated first and
// filled with the same writes holds: the same content and version digests
// for every record and deletion record (each equal to Go's canonical.Digest
// and VersionDigest of its stored values), and the same bucket aggregates,
// revisions included; writes after the migration keep them equal (the new
// triggers). On MySQL 9.7 and MariaDB 10.11 (RS_MYSQL_ENGINE).
func TestShardMigration0007RecomputesDigests(t *testing.T) {
	ctx := context.Background()
	before := infratest.NewMySQLDatabase(t, "")
	if _, err := schema.ApplyMySQLWith(ctx, before.DB, schema.Shard, schema.MySQLOptions{UpTo: 6}); err != nil {
		t.Fatal(err)
	}
	shardWorkload(t, before.DB, 1)
	var oldBuckets int
	if err := before.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM campaign_bucket").Scan(&oldBuckets); err != nil || oldBuckets < 100 {
		t.Fatalf("%d buckets before the migration, %v", oldBuckets, err)
	}
	applied, err := schema.ApplyMySQLWith(ctx, before.DB, schema.Shard, schema.MySQLOptions{UpTo: 7})
	if err != nil || len(applied) != 1 || applied[0] != 7 {
		t.Fatalf("applying 0007 over the filled shard: %v, %v", applied, err)
	}
	if _, err := schema.ApplyMySQL(ctx, before.DB, schema.Shard); err != nil { // later migrations, if any
		t.Fatal(err)
	}

	after := infratest.NewMySQLDatabase(t, schema.Shard)
	shardWorkload(t, after.DB, 1)

	if diff := cmp.Diff(readShardState(t, after.DB), readShardState(t, before.DB)); diff != "" {
		t.Errorf("migrated shard differs from one written after the migration (-after +migrated):\n%s", diff)
	}
	if diff := cmp.Diff(logicalBuckets(t, before.DB), withoutRevision(buckets(t, before.DB))); diff != "" {
		t.Errorf("migrated campaign_bucket differs from its records (-records +stored):\n%s", diff)
	}

	// Writes after the migration: the triggers keep both equal.
	shardWorkload(t, before.DB, 2)
	shardWorkload(t, after.DB, 2)
	mustExec(t, before.DB, "UPDATE fitness_result SET user_id = 9, version = version + 1 WHERE data_id BETWEEN 1 AND 1000 AND is_deleted = 0")
	mustExec(t, after.DB, "UPDATE fitness_result SET user_id = 9, version = version + 1 WHERE data_id BETWEEN 1 AND 1000 AND is_deleted = 0")
	if diff := cmp.Diff(readShardState(t, after.DB), readShardState(t, before.DB)); diff != "" {
		t.Errorf("after more writes (-after +migrated):\n%s", diff)
	}
}

func withoutRevision(bs map[[2]int64]bucketRow) map[[2]int64]bucketRow {
	for k, b := range bs {
		b.Revision = 0
		if b.Live == 0 && b.VersionXor == 0 && b.DigestXor == 0 {
			delete(bs, k) // emptied by removals of live rows
			continue
		}
		bs[k] = b
	}
	return bs
}

// chRows writes n versions per record for ids from..from+count-1 (one insert
// per version: several parts), some versions deleted, students varying.
func chRows(t *testing.T, proj *chstore.Projection, from, count int64) {
	t.Helper()
	for v := int64(1); v <= 3; v++ {
		var rows []chstore.Row
		for id := from; id < from+count; id++ {
			if id%4 == 0 && v == 3 {
				continue // stays at version 2
			}
			rows = append(rows, chstore.Row{DetectID: 10001 + id%2, DataID: id, UserID: 500 + id + v/3, ProjectID: 3, SchoolID: 7 + id%3,
				Grade: 5, Version: v, Result: fmt.Sprintf("%d.%03d", v, id%1000), Unit: "m", IsDeleted: v == 3 && id%5 == 0,
				EventID: fmt.Sprintf("fitness-result-%d-v%d", id, v), ShardID: "shard-0"})
		}
		if err := proj.Insert(t.Context(), rows); err != nil {
			t.Fatal(err)
		}
	}
}

// chDigests reads every stored row's digests (raw rows, and the latest row
// per record through FINAL), checks each against Go's canonical.Digest and
// VersionDigest of the row's stored values, and returns the per-bucket XORs
// of the latest rows, as reconciliation reads them.
func chDigests(t *testing.T, conn driver.Conn) map[string][2]uint64 {
	t.Helper()
	for _, from := range []string{"fitness_result_versions", "fitness_result_versions FINAL"} {
		rows, err := conn.Query(t.Context(), `SELECT data_id, detect_id, user_id, project_id, school_id, grade, toString(result), unit,
			version, is_deleted, content_digest, version_digest FROM `+from)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var r canonical.Record
			var grade int16
			var del uint8
			var content, version uint64
			if err := rows.Scan(&r.DataID, &r.DetectID, &r.UserID, &r.ProjectID, &r.SchoolID, &grade, &r.Result, &r.Unit,
				&r.Version, &del, &content, &version); err != nil {
				t.Fatal(err)
			}
			r.Grade, r.IsDeleted = int32(grade), del == 1
			want, err := canonical.Digest(r)
			if err != nil {
				t.Fatal(err)
			}
			if content != want || version != canonical.VersionDigest(r) {
				t.Errorf("%s: record %d v%d: content_digest %d, version_digest %d; Go gives %d and %d",
					from, r.DataID, r.Version, content, version, want, canonical.VersionDigest(r))
			}
			n++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if n == 0 {
			t.Fatalf("no rows in %s", from)
		}
	}
	rows, err := conn.Query(t.Context(), `SELECT detect_id, toUInt32(data_id % 1024) AS b, groupBitXor(version_digest), groupBitXor(content_digest)
		FROM (SELECT detect_id, data_id, version_digest, content_digest FROM fitness_result_versions FINAL) GROUP BY detect_id, b`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][2]uint64{}
	for rows.Next() {
		var c int64
		var b uint32
		var x [2]uint64
		if err := rows.Scan(&c, &b, &x[0], &x[1]); err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("%d/%d", c, b)] = x
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestClickHouseMigration0008RecomputesDigests: rows stored under migrations
// 0001-0007 (the former content digest, no version digest), some in parts a
// merge already wrote, read after migration 0008 the digests of rows written
// after it: every raw row and every latest row gives Go's canonical.Digest
// and VersionDigest of its stored values, before and after the parts are
// merged (OPTIMIZE FINAL writes the new columns), and the per-bucket XORs
// equal those of a database migrated first and filled with the same rows.
// On ClickHouse 18.16 and 26.9 (RS_CH_ENGINE=chdb).
func TestClickHouseMigration0008RecomputesDigests(t *testing.T) {
	ctx := context.Background()
	old := infratest.NewClickHouseDatabase(t, false)
	if _, err := schema.ApplyClickHouseUpTo(ctx, old.Conn, 7); err != nil {
		t.Fatal(err)
	}
	oldProj := chstore.NewProjection(old.Conn)
	chRows(t, oldProj, 1, 200)
	if err := old.Conn.Exec(ctx, "OPTIMIZE TABLE fitness_result_versions FINAL"); err != nil {
		t.Fatal(err)
	}
	chRows(t, oldProj, 1001, 200) // parts not merged
	applied, err := schema.ApplyClickHouseUpTo(ctx, old.Conn, 8)
	if err != nil || len(applied) != 1 || applied[0] != 8 {
		t.Fatalf("applying 0008 over the filled projection: %v, %v", applied, err)
	}
	if _, err := schema.ApplyClickHouse(ctx, old.Conn); err != nil { // later migrations, if any
		t.Fatal(err)
	}
	chRows(t, oldProj, 2001, 50) // written after the migration

	fresh := infratest.NewClickHouseDatabase(t, true)
	freshProj := chstore.NewProjection(fresh.Conn)
	for _, from := range []int64{1, 1001, 2001} {
		chRows(t, freshProj, from, map[int64]int64{1: 200, 1001: 200, 2001: 50}[from])
	}
	want := chDigests(t, fresh.Conn)
	if diff := cmp.Diff(want, chDigests(t, old.Conn)); diff != "" {
		t.Errorf("%s: migrated projection's bucket digests differ from a fresh one's (-fresh +migrated):\n%s", infratest.ClickHouseEngine(), diff)
	}
	if err := old.Conn.Exec(ctx, "OPTIMIZE TABLE fitness_result_versions FINAL"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, chDigests(t, old.Conn)); diff != "" {
		t.Errorf("%s: after merging, migrated projection's bucket digests differ (-fresh +migrated):\n%s", infratest.ClickHouseEngine(), diff)
	}
	// A controlled rebuild's staging table (CREATE TABLE ... AS the
	// migrated table) attaches into it: same columns in the same order.
	staging, err := oldProj.CreateStaging(ctx, "staging_0008")
	if err != nil {
		t.Fatal(err)
	}
	stagedRows := []chstore.Row{{DetectID: 10001, DataID: 3001, UserID: 77, ProjectID: 3, SchoolID: 7, Grade: 5, Version: 1, Epoch: 1,
		Result: "2.31", Unit: "m", EventID: "fitness-result-3001-v1", ShardID: "shard-0"}}
	if err := staging.Insert(ctx, stagedRows); err != nil {
		t.Fatal(err)
	}
	if err := oldProj.AttachStaging(ctx, staging); err != nil {
		t.Fatalf("attaching a staging table to the migrated projection: %v", err)
	}
	if err := freshProj.Insert(ctx, stagedRows); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(chDigests(t, fresh.Conn), chDigests(t, old.Conn)); diff != "" {
		t.Errorf("after attaching a rebuilt row (-fresh +migrated):\n%s", diff)
	}
}
