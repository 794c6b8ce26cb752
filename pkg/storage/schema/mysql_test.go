package schema_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
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

// TestHalfAppliedMigrationIsDirtyAndResumable: a migration whose fourth
// statement fails (the column it adds already exists) stays recorded as
// dirty with the count of statements done; later runs refuse with ErrDirty
// and name the statement; once the cause is removed, a resumed run finishes
// it from that statement and the database ends clean and complete.
func TestHalfAppliedMigrationIsDirtyAndResumable(t *testing.T) {
	d := infratest.NewMySQLDatabase(t, schema.Shard)
	ctx := context.Background()
	exec := func(q string) {
		t.Helper()
		if _, err := d.DB.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Undo 0003 except its bucket column, so its fourth statement
	// (ALTER TABLE ... ADD COLUMN bucket) fails when it runs again.
	for _, tr := range []string{"fitness_result_bucket_ins", "fitness_result_bucket_upd", "fitness_result_bucket_del"} {
		exec("DROP TRIGGER " + tr)
	}
	exec("DROP TABLE campaign_bucket")
	exec("DELETE FROM schema_migrations WHERE version = 3")

	_, err := schema.ApplyMySQL(ctx, d.DB, schema.Shard)
	if err == nil || !strings.Contains(err.Error(), "statement 4 of") {
		t.Fatalf("apply over a conflicting column: %v; want statement 4 to fail", err)
	}
	var dirty, doneN int
	var lastErr string
	if err := d.DB.QueryRowContext(ctx, "SELECT dirty, statements_done, last_error FROM schema_migrations WHERE version = 3").
		Scan(&dirty, &doneN, &lastErr); err != nil {
		t.Fatal(err)
	}
	if dirty != 1 || doneN != 3 || !strings.Contains(strings.ToLower(lastErr), "bucket") {
		t.Errorf("after the failure: dirty=%d statements_done=%d last_error=%q; want 1, 3, the duplicate column", dirty, doneN, lastErr)
	}

	_, err = schema.ApplyMySQL(ctx, d.DB, schema.Shard)
	if !errors.Is(err, schema.ErrDirty) || !strings.Contains(err.Error(), "statement 4 failed") {
		t.Fatalf("second apply: %v; want ErrDirty naming statement 4", err)
	}

	exec("ALTER TABLE fitness_result DROP KEY idx_campaign_bucket, DROP COLUMN bucket")
	applied, err := schema.ApplyMySQLWith(ctx, d.DB, schema.Shard, schema.MySQLOptions{Resume: true})
	if err != nil || len(applied) != 1 || applied[0] != 3 {
		t.Fatalf("resume: applied %v, %v; want [3]", applied, err)
	}
	if err := d.DB.QueryRowContext(ctx, "SELECT dirty, statements_done FROM schema_migrations WHERE version = 3").Scan(&dirty, &doneN); err != nil {
		t.Fatal(err)
	}
	migs, _ := schema.Load(schema.Shard)
	if dirty != 0 || doneN != len(migs[2].Statements) {
		t.Errorf("after resume: dirty=%d statements_done=%d; want 0, %d", dirty, doneN, len(migs[2].Statements))
	}
	// The resumed migration works: a write moves its bucket aggregate.
	exec(`INSERT INTO fitness_result (data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
		VALUES (1025, 7, 1, 3, 7, 5, 2.31, 'm', 1, 0, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`)
	var live int
	if err := d.DB.QueryRowContext(ctx, "SELECT live FROM campaign_bucket WHERE detect_id = 7 AND bucket = 1").Scan(&live); err != nil || live != 1 {
		t.Errorf("bucket aggregate after resume: live=%d, %v; want 1", live, err)
	}
	if again, err := schema.ApplyMySQL(ctx, d.DB, schema.Shard); err != nil || len(again) != 0 {
		t.Errorf("apply after resume: %v, %v; want nothing to do", again, err)
	}
}
