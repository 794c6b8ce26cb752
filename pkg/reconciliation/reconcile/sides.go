package reconcile

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
)

// MySQLSource is the authoritative side: every shard's fitness_result,
// combined (a record lives on exactly one shard, so counts add and XORs
// combine). It never reads another projection.
//
// A tombstone purged from fitness_result is still a deleted record at its
// version: its deletion record (deletion_log, shard migration 0004) stands
// in for the row, in the bucket aggregates (the shard's triggers leave a
// purged tombstone counted in campaign_bucket) and in every scan-time read
// (fitness_result, then deletion_log for the ids fitness_result lacks, in
// one statement: one consistent read, so a purge committing meanwhile
// neither hides nor doubles a record). So a purged tombstone the projection
// never received is DELETION_NOT_APPLIED, and one it did receive is
// consistent.
type MySQLSource struct {
	Shards []*sql.DB
}

// StoredBuckets is the bucket count of the aggregates the shards keep at
// write time (campaign_bucket, bucket = data_id % 1024).
const StoredBuckets = 1024

// Buckets implements Side. For a whole campaign with StoredBuckets buckets
// it reads the aggregates the database keeps at write time (at most 1024
// rows per shard); otherwise it aggregates the stored digests (version_digest
// and content_digest, shard migration 0007) of fitness_result and of the
// deletion records of purged tombstones at scan time, per bucket and table in
// one statement (the rows of one bucket combine below like those of
// different shards). Nothing is hashed at scan time.
func (m MySQLSource) Buckets(ctx context.Context, s Scope, n int) (map[int]BucketSum, error) {
	query, args := "SELECT bucket, live, version_xor, digest_xor FROM campaign_bucket WHERE detect_id = ?", []any{s.DetectID}
	if n != StoredBuckets || s.ProjectID != 0 || s.SchoolID != 0 {
		where, wargs := s.where()
		query = fmt.Sprintf(`SELECT data_id %% %d AS b, SUM(is_deleted = 0), BIT_XOR(version_digest), BIT_XOR(content_digest)
			FROM fitness_result WHERE %s GROUP BY b
		UNION ALL
		SELECT data_id %% %d AS b, SUM(is_deleted = 0), BIT_XOR(version_digest), BIT_XOR(content_digest)
			FROM deletion_log d WHERE %s AND %s GROUP BY b`,
			n, where, n, where, notInFitnessResult)
		args = append(append([]any{}, wargs...), wargs...)
	}
	out := map[int]BucketSum{}
	for i, db := range m.Shards {
		rows, err := db.QueryContext(ctx, query, args...)
		if err != nil {
			return nil, fmt.Errorf("shard %d buckets: %w", i, err)
		}
		for rows.Next() {
			var b int
			var x BucketSum
			if err := rows.Scan(&b, &x.Live, &x.VersionXor, &x.DigestXor); err != nil {
				rows.Close()
				return nil, fmt.Errorf("shard %d buckets: %w", i, err)
			}
			cur := out[b]
			out[b] = BucketSum{Live: cur.Live + x.Live, VersionXor: cur.VersionXor ^ x.VersionXor, DigestXor: cur.DigestXor ^ x.DigestXor}
		}
		// Err, not only Close: an error that ended the iteration early is
		// reported by Err alone, and a truncated read would pass for a
		// shard with fewer records.
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, fmt.Errorf("shard %d buckets: %w", i, err)
		}
	}
	return out, nil
}

// notInFitnessResult keeps the deletion records of purged rows only (a
// data_id recorded again after its purge is read from fitness_result).
const notInFitnessResult = "NOT EXISTS (SELECT 1 FROM fitness_result f WHERE f.data_id = d.data_id)"

// Records implements Side. Ids are read IDChunk at a time.
func (m MySQLSource) Records(ctx context.Context, s Scope, n int, buckets []int, ids []int64) (map[int64]Record, error) {
	return byIDChunks(ctx, s, n, buckets, ids, m.records)
}

// byIDChunks calls read once per IDChunk ids (or once for buckets) and
// merges the results.
func byIDChunks(ctx context.Context, s Scope, n int, buckets []int, ids []int64,
	read func(ctx context.Context, s Scope, n int, buckets []int, ids []int64, out map[int64]Record) error) (map[int64]Record, error) {
	out := map[int64]Record{}
	if len(ids) == 0 {
		return out, read(ctx, s, n, buckets, nil, out)
	}
	for i := 0; i < len(ids); i += IDChunk {
		if err := read(ctx, s, n, nil, ids[i:min(i+IDChunk, len(ids))], out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (m MySQLSource) records(ctx context.Context, s Scope, n int, buckets []int, ids []int64, out map[int64]Record) error {
	where, args := s.where()
	if len(ids) > 0 {
		where += " AND data_id IN (" + mysqldb.Placeholders(len(ids)) + ")"
		for _, id := range ids {
			args = append(args, id)
		}
	} else {
		col := fmt.Sprintf("data_id %% %d", n)
		if n == StoredBuckets {
			col = "bucket" // the stored column, indexed with detect_id
		}
		where += fmt.Sprintf(" AND %s IN (%s)", col, mysqldb.Placeholders(len(buckets)))
		for _, b := range buckets {
			args = append(args, b)
		}
	}
	// deletion_log has fitness_result's columns and the same indexed
	// (detect_id, bucket).
	query := `SELECT data_id, version, is_deleted, content_digest, ` + canonical.MySQLString + `, detect_id, school_id
			FROM fitness_result WHERE ` + where + `
		UNION ALL
		SELECT data_id, version, is_deleted, content_digest, ` + canonical.MySQLString + `, detect_id, school_id
			FROM deletion_log d WHERE ` + where + ` AND ` + notInFitnessResult
	args = append(args, args...)
	for i, db := range m.Shards {
		rows, err := db.QueryContext(ctx, query, args...)
		if err != nil {
			return fmt.Errorf("shard %d records: %w", i, err)
		}
		for rows.Next() {
			var r Record
			if err := rows.Scan(&r.DataID, &r.Version, &r.Deleted, &r.Digest, &r.Canonical, &r.DetectID, &r.SchoolID); err != nil {
				rows.Close()
				return fmt.Errorf("shard %d records: %w", i, err)
			}
			out[r.DataID] = r
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil { // Err: see Buckets
			return fmt.Errorf("shard %d records: %w", i, err)
		}
	}
	return nil
}

// ClickHouseTarget is the projection side: the latest row per record through
// FINAL (tombstones included, so deletions can be checked).
type ClickHouseTarget struct {
	Conn driver.Conn
	// Table is the versioned table compared; empty means the live projection
	// fitness_result_versions (a rebuild compares its staging table).
	Table string
}

func (c ClickHouseTarget) table() string {
	if c.Table == "" {
		return "fitness_result_versions"
	}
	return c.Table
}

// Buckets implements Side: the stored version_digest and content_digest of
// each record's latest row (ClickHouse migration 0008), XORed per bucket.
func (c ClickHouseTarget) Buckets(ctx context.Context, s Scope, n int) (map[int]BucketSum, error) {
	where, args := s.where()
	// FINAL first (within the campaign, part of the key), then the scope: a
	// filter on other columns must not pick an older version.
	rows, err := c.Conn.Query(ctx, fmt.Sprintf(`SELECT toUInt32(data_id %% %d) AS b, toInt64(countIf(is_deleted = 0)),
		groupBitXor(version_digest), groupBitXor(content_digest)
		FROM (SELECT detect_id, project_id, school_id, data_id, is_deleted, version_digest, content_digest
		      FROM %s FINAL WHERE detect_id = %d)
		WHERE %s GROUP BY b`, n, c.table(), s.DetectID, where), args...)
	if err != nil {
		return nil, fmt.Errorf("target buckets: %w", err)
	}
	defer rows.Close()
	out := map[int]BucketSum{}
	for rows.Next() {
		var b uint32
		var x BucketSum
		if err := rows.Scan(&b, &x.Live, &x.VersionXor, &x.DigestXor); err != nil {
			return nil, fmt.Errorf("target buckets: %w", err)
		}
		out[int(b)] = x
	}
	return out, rows.Err()
}

// Records implements Side. The id or bucket predicate is on data_id, a key
// column, so it is applied inside FINAL (where the primary key serves it);
// the scope's other columns are filtered after FINAL. FINAL, not argMax:
// rows of equal engine version (an equal-version corruption) must resolve
// exactly as the current-state view resolves them (argMax picked either, and
// missed such corruptions when measured).
// Ids are read IDChunk at a time.
func (c ClickHouseTarget) Records(ctx context.Context, s Scope, n int, buckets []int, ids []int64) (map[int64]Record, error) {
	return byIDChunks(ctx, s, n, buckets, ids, c.records)
}

func (c ClickHouseTarget) records(ctx context.Context, s Scope, n int, buckets []int, ids []int64, out map[int64]Record) error {
	where, args := s.where()
	var inner string
	var innerArgs []any
	if len(ids) > 0 {
		// The bucket of each id narrows the read to primary-key ranges (the
		// table is sorted by campaign, bucket, data_id).
		seen := map[int64]bool{}
		var bs []any
		for _, id := range ids {
			if b := id % StoredBuckets; !seen[b] {
				seen[b] = true
				bs = append(bs, b)
			}
		}
		inner = fmt.Sprintf("data_id %% %d IN (%s) AND data_id IN (%s)", StoredBuckets, mysqldb.Placeholders(len(bs)), mysqldb.Placeholders(len(ids)))
		innerArgs = append(innerArgs, bs...)
		for _, id := range ids {
			innerArgs = append(innerArgs, id)
		}
	} else {
		inner = fmt.Sprintf("data_id %% %d IN (%s)", n, mysqldb.Placeholders(len(buckets)))
		for _, b := range buckets {
			innerArgs = append(innerArgs, b)
		}
	}
	rows, err := c.Conn.Query(ctx, fmt.Sprintf(`SELECT data_id, version, is_deleted, content_digest, %s, detect_id, school_id
		FROM (SELECT detect_id, user_id, project_id, school_id, grade, result, unit, data_id, version, is_deleted, content_digest
		      FROM %s FINAL WHERE detect_id = %d AND %s)
		WHERE %s`, canonical.ClickHouseString, c.table(), s.DetectID, inner, where), append(innerArgs, args...)...)
	if err != nil {
		return fmt.Errorf("target records: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r Record
		var del uint8
		if err := rows.Scan(&r.DataID, &r.Version, &del, &r.Digest, &r.Canonical, &r.DetectID, &r.SchoolID); err != nil {
			return fmt.Errorf("target records: %w", err)
		}
		r.Deleted = del == 1
		out[r.DataID] = r
	}
	return rows.Err()
}
