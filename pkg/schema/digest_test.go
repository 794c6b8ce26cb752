package schema_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/resultsync/resultsync/pkg/canonical"
	"github.com/resultsync/resultsync/pkg/infratest"
	"github.com/resultsync/resultsync/pkg/schema"
)

// TestDigestVectorsInMariaDB: the stored generated column content_digest
// reproduces every shared vector from the values MariaDB stores.
func TestDigestVectorsInMariaDB(t *testing.T) {
	vs, err := canonical.Vectors()
	if err != nil {
		t.Fatal(err)
	}
	d := infratest.NewMySQLDatabase(t, schema.Shard)
	ctx := context.Background()
	for i, v := range vs {
		r := v.Record
		// Each vector is its own row: data ids repeat across vectors.
		if _, err := d.DB.ExecContext(ctx, "DELETE FROM fitness_result"); err != nil {
			t.Fatal(err)
		}
		if _, err := d.DB.ExecContext(ctx, `INSERT INTO fitness_result
			(data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
			VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`,
			r.DataID, r.DetectID, r.ProjectID, r.SchoolID, r.Grade, r.Result, r.Unit, r.Version, r.IsDeleted); err != nil {
			t.Fatalf("vector %d (%s): %v", i, v.Name, err)
		}
		var s string
		var got uint64
		if err := d.DB.QueryRowContext(ctx, `SELECT CONCAT_WS('|', data_id, version, is_deleted, detect_id, project_id, school_id, grade, result, unit),
			content_digest FROM fitness_result`).Scan(&s, &got); err != nil {
			t.Fatal(err)
		}
		if s != v.Canonical || got != v.DigestValue() {
			t.Errorf("%s: MariaDB gives %q -> %d, want %q -> %s", v.Name, s, got, v.Canonical, v.Digest)
		}
	}
}

// TestDigestVectorsInClickHouse: the MATERIALIZED column content_digest
// reproduces every shared vector from the values ClickHouse stores.
func TestDigestVectorsInClickHouse(t *testing.T) {
	vs, err := canonical.Vectors()
	if err != nil {
		t.Fatal(err)
	}
	d := infratest.NewClickHouseDatabase(t, true)
	ctx := context.Background()
	b, err := d.Conn.PrepareBatch(ctx, `INSERT INTO fitness_result_versions
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
		if err := b.Append(r.DetectID, r.DataID, int64(1), r.ProjectID, r.SchoolID, int16(r.Grade), r.Version, uint16(0),
			dec, r.Unit, del, string(rune('a'+i)), "shard-0", int64(0), int64(0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
	for i, v := range vs {
		var got uint64
		if err := d.Conn.QueryRow(ctx, "SELECT content_digest FROM fitness_result_versions WHERE event_id = ?", string(rune('a'+i))).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != v.DigestValue() {
			t.Errorf("%s: ClickHouse gives %d, want %s", v.Name, got, v.Digest)
		}
	}
}
