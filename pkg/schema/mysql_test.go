package schema_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/infratest"
	"github.com/resultsync/resultsync/pkg/schema"
)

func TestApplyMySQLIsIdempotent(t *testing.T) {
	for _, kind := range []schema.Kind{schema.Shard, schema.Control} {
		t.Run(string(kind), func(t *testing.T) {
			d := infratest.NewMySQLDatabase(t, "")
			ctx := context.Background()
			first, err := schema.ApplyMySQL(ctx, d.DB, kind)
			if err != nil {
				t.Fatalf("first apply: %v", err)
			}
			migs, _ := schema.Load(kind)
			if len(first) != len(migs) {
				t.Errorf("first apply applied %v, want all %d", first, len(migs))
			}
			second, err := schema.ApplyMySQL(ctx, d.DB, kind)
			if err != nil {
				t.Fatalf("second apply: %v", err)
			}
			if len(second) != 0 {
				t.Errorf("second apply applied %v, want nothing", second)
			}
		})
	}
}

func TestApplyMySQLRejectsChangedMigration(t *testing.T) {
	d := infratest.NewMySQLDatabase(t, schema.Control)
	ctx := context.Background()
	if _, err := d.DB.ExecContext(ctx, "UPDATE schema_migrations SET checksum = REPEAT('0', 64) WHERE version = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := schema.ApplyMySQL(ctx, d.DB, schema.Control); err == nil {
		t.Fatal("apply succeeded over a migration whose checksum changed; want an error")
	}
}

// TestOutboxClaimSkipLocked runs two real MariaDB sessions that each claim
// outbox rows with FOR UPDATE SKIP LOCKED while the other still holds its
// locks: the second claims other rows at once, never the first one's.
func TestOutboxClaimSkipLocked(t *testing.T) {
	d := infratest.NewMySQLDatabase(t, schema.Shard)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 1; i <= 20; i++ {
		if _, err := d.DB.ExecContext(ctx, `INSERT INTO outbox_event (event_id, data_id, version, payload, due_time, create_time)
			VALUES (?, ?, 1, 'x', UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`, fmt.Sprintf("fitness-result-%d-v1", i), i); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(tx *sql.Tx) []int64 {
		t.Helper()
		rows, err := tx.QueryContext(ctx, `SELECT id FROM outbox_event WHERE status = 'NEW' AND due_time <= UTC_TIMESTAMP(3)
			ORDER BY due_time LIMIT 5 FOR UPDATE SKIP LOCKED`)
		if err != nil {
			t.Fatalf("claiming: %v", err)
		}
		defer rows.Close()
		var ids []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	tx1, err := d.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback()
	tx2, err := d.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx2.Rollback()

	a := claim(tx1)
	start := time.Now()
	b := claim(tx2) // would block on tx1's locks without SKIP LOCKED
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("second claim waited %s for the first one's locks", waited)
	}
	if len(a) != 5 || len(b) != 5 {
		t.Fatalf("claimed %v and %v, want 5 rows each", a, b)
	}
	seen := map[int64]bool{}
	for _, id := range a {
		seen[id] = true
	}
	for _, id := range b {
		if seen[id] {
			t.Errorf("row %d claimed by both sessions (first %v, second %v)", id, a, b)
		}
	}
	if err := tx1.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := tx2.Commit(); err != nil {
		t.Fatal(err)
	}
}
