package schema_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// TestDigestVectorsInMySQL: the stored generated columns content_digest and
// version_digest, and the canonical strings, reproduce every shared vector
// from the values the shard engine stores (MySQL 9.7 by default; MariaDB
// 10.11 with RS_MYSQL_ENGINE=mariadb); so does a deletion record (a purged
// tombstone's digests, kept by the deletion trigger).
func TestDigestVectorsInMySQL(t *testing.T) {
	vs, err := canonical.Vectors()
	if err != nil {
		t.Fatal(err)
	}
	d := infratest.NewMySQLDatabase(t, schema.Shard)
	ctx := context.Background()
	for i, v := range vs {
		r := v.Record
		// Each vector is its own row: data ids repeat across vectors. A
		// removed tombstone leaves a deletion record that reserves its id
		// (shard migration 0005): clear those too.
		for _, q := range []string{"DELETE FROM fitness_result", "DELETE FROM deletion_log"} {
			if _, err := d.DB.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := d.DB.ExecContext(ctx, `INSERT INTO fitness_result
			(data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`,
			r.DataID, r.DetectID, r.UserID, r.ProjectID, r.SchoolID, r.Grade, r.Result, r.Unit, r.Version, r.IsDeleted); err != nil {
			t.Fatalf("vector %d (%s): %v", i, v.Name, err)
		}
		tables := []string{"fitness_result"}
		if r.IsDeleted {
			// Purged, the tombstone's digests live on in its deletion record.
			if _, err := d.DB.ExecContext(ctx, "DELETE FROM fitness_result"); err != nil {
				t.Fatal(err)
			}
			tables = []string{"deletion_log"}
		}
		for _, table := range tables {
			var s, vs string
			var got, gotV, hashed, hashedV uint64
			// The stored columns, and canonical's SQL of the same hashes.
			if err := d.DB.QueryRowContext(ctx, "SELECT "+canonical.MySQLString+", content_digest, "+canonical.MySQLVersionString+
				", version_digest, "+canonical.MySQLHash(canonical.MySQLString)+", "+canonical.MySQLHash(canonical.MySQLVersionString)+
				" FROM "+table).Scan(&s, &got, &vs, &gotV, &hashed, &hashedV); err != nil {
				t.Fatal(err)
			}
			if hashed != got || hashedV != gotV {
				t.Errorf("%s: %s %s: canonical.MySQLHash gives %d and %d, the stored columns %d and %d", v.Name, infratest.MySQLEngine(), table, hashed, hashedV, got, gotV)
			}
			if s != v.Canonical || got != v.DigestValue() {
				t.Errorf("%s: %s %s gives %q -> %d, want %q -> %s", v.Name, infratest.MySQLEngine(), table, s, got, v.Canonical, v.Digest)
			}
			if vs != v.VersionCanonical || gotV != v.VersionDigestValue() {
				t.Errorf("%s: %s %s gives version %q -> %d, want %q -> %s", v.Name, infratest.MySQLEngine(), table, vs, gotV, v.VersionCanonical, v.VersionDigest)
			}
		}
	}
}

// TestDigestVectorsInClickHouse: the MATERIALIZED columns content_digest and
// version_digest and the canonical strings reproduce every shared vector
// from the values ClickHouse stores (18.16 server by default; ClickHouse 26 through chdb with
// RS_CH_ENGINE=chdb).
func TestDigestVectorsInClickHouse(t *testing.T) {
	vs, err := canonical.Vectors()
	if err != nil {
		t.Fatal(err)
	}
	d := infratest.NewClickHouseDatabase(t, true)
	ctx := context.Background()
	// Vectors share (detect_id, data_id) keys, which a ReplacingMergeTree
	// collapses (in merges, and on a current ClickHouse inside one insert):
	// a plain MergeTree copy of the table keeps every vector and the
	// migration's column definitions, MATERIALIZED digest included.
	if err := d.Conn.Exec(ctx, "CREATE TABLE digest_vectors AS fitness_result_versions ENGINE = MergeTree ORDER BY tuple()"); err != nil {
		t.Fatal(err)
	}
	b, err := d.Conn.PrepareBatch(ctx, `INSERT INTO digest_vectors
		(detect_id, data_id, user_id, project_id, school_id, grade, version, epoch, result, unit,
		 is_deleted, event_id, shard_id, source_commit_unix_ms, ingest_unix_ms)`)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		r := v.Record
		dec, err := decimal.NewFromString(r.Result)
		if err != nil {
			t.Fatal(err)
		}
		var del uint8
		if r.IsDeleted {
			del = 1
		}
		// event_id carries the vector index to read each row back.
		if err := b.Append(r.DetectID, r.DataID, r.UserID, r.ProjectID, r.SchoolID, int16(r.Grade), r.Version, uint16(0),
			dec, r.Unit, del, string(rune('a'+i)), "shard-0", int64(0), int64(0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		var got, gotV, hashed, hashedV uint64
		var s, sv string
		if err := d.Conn.QueryRow(ctx, "SELECT content_digest, "+canonical.ClickHouseString+", version_digest, "+canonical.ClickHouseVersionString+
			", "+canonical.ClickHouseHash(canonical.ClickHouseString)+", "+canonical.ClickHouseHash(canonical.ClickHouseVersionString)+
			" FROM digest_vectors WHERE event_id = ?", string(rune('a'+i))).Scan(&got, &s, &gotV, &sv, &hashed, &hashedV); err != nil {
			t.Fatal(err)
		}
		if hashed != got || hashedV != gotV {
			t.Errorf("%s: canonical.ClickHouseHash gives %d and %d, the stored columns %d and %d", v.Name, hashed, hashedV, got, gotV)
		}
		if got != v.DigestValue() || s != v.Canonical {
			t.Errorf("%s: %s gives %q -> %d, want %q -> %s", v.Name, infratest.ClickHouseEngine(), s, got, v.Canonical, v.Digest)
		}
		if gotV != v.VersionDigestValue() || sv != v.VersionCanonical {
			t.Errorf("%s: %s gives version %q -> %d, want %q -> %s", v.Name, infratest.ClickHouseEngine(), sv, gotV, v.VersionCanonical, v.VersionDigest)
		}
	}
}
