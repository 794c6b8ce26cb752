package schema_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

func TestApplyClickHouseIsIdempotent(t *testing.T) {
	d := infratest.NewClickHouseDatabase(t, true)
	done, err := schema.ApplyClickHouse(context.Background(), d.Conn)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 0 {
		t.Errorf("second apply applied %v, want nothing", done)
	}
}

// TestReplacingMergeTreeFinal writes several versions of records, out of order
// and repeated, into the real ReplacingMergeTree(row_version) table and reads
// the current state back through FINAL and the current-state view.
func TestReplacingMergeTreeFinal(t *testing.T) {
	d := infratest.NewClickHouseDatabase(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	type row struct {
		dataID  int64
		version int64
		result  string
		deleted uint8
	}
	// Each slice is one insert (one part), so the versions meet only at read time.
	inserts := [][]row{
		{{900001, 2, "2.31", 0}, {900002, 1, "1.50", 0}},
		{{900001, 1, "2.21", 0}, {900003, 1, "7.00", 0}},
		{{900001, 2, "2.31", 0}, {900003, 2, "7.00", 1}}, // duplicate v2; tombstone of 900003
	}
	for _, rows := range inserts {
		b, err := d.Conn.PrepareBatch(ctx, `INSERT INTO fitness_result_versions
			(detect_id, data_id, user_id, project_id, school_id, grade, version, epoch, result, unit,
			 is_deleted, event_id, shard_id, source_commit_unix_ms, ingest_unix_ms)`)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			dec, err := decimalOf(r.result)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Append(int64(10001), r.dataID, int64(4), int64(3), int64(7), int16(5), r.version, uint16(0),
				dec, "m", r.deleted, "e", "shard-0", int64(0), int64(0)); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Send(); err != nil {
			t.Fatalf("insert: %v", err)
		}
	}

	type cur struct {
		DataID  int64
		Version int64
		Milli   int64 // the result in thousandths: a value, not an engine's printing of it
		Deleted uint8
	}
	read := func(q string) []cur {
		rows, err := d.Conn.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		var out []cur
		for rows.Next() {
			var c cur
			if err := rows.Scan(&c.DataID, &c.Version, &c.Milli, &c.Deleted); err != nil {
				t.Fatal(err)
			}
			out = append(out, c)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}

	final := read(`SELECT data_id, version, toInt64(result * 1000), is_deleted FROM fitness_result_versions FINAL ORDER BY data_id`)
	wantFinal := []cur{{900001, 2, 2310, 0}, {900002, 1, 1500, 0}, {900003, 2, 7000, 1}}
	if diff := cmp.Diff(wantFinal, final); diff != "" {
		t.Errorf("FINAL (-want +got):\n%s", diff)
	}
	current := read(`SELECT data_id, version, toInt64(result * 1000), toUInt8(0) FROM fitness_result_current ORDER BY data_id`)
	wantCurrent := []cur{{900001, 2, 2310, 0}, {900002, 1, 1500, 0}}
	if diff := cmp.Diff(wantCurrent, current); diff != "" {
		t.Errorf("current-state view (-want +got):\n%s", diff)
	}
	var physical uint64
	if err := d.Conn.QueryRow(ctx, "SELECT count() FROM fitness_result_versions").Scan(&physical); err != nil {
		t.Fatal(err)
	}
	if physical != 6 {
		t.Errorf("physical rows = %d, want 6 (versions are kept until merges)", physical)
	}
}
