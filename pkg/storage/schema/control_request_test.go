package schema_test

import (
	"context"
	"strings"
	"testing"

	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// Control migration 0010 adds control_request over a control database at
// 0009 that holds a repair request, leaving it as it was: one key per
// (method, request_id), the same id free for another method, and the
// request id as long as the API allows.
func TestControlMigration0010AddsControlRequest(t *testing.T) {
	ctx := context.Background()
	d := infratest.NewMySQLDatabase(t, "")
	if _, err := schema.ApplyMySQLWith(ctx, d.DB, schema.Control, schema.MySQLOptions{UpTo: 9}); err != nil {
		t.Fatal(err)
	}
	mustExec(t, d.DB, "INSERT INTO repair_request (request_id, request_hash, created_by, create_time) VALUES ('c-1', REPEAT('0', 64), 'otto', UTC_TIMESTAMP(3))")
	applied, err := schema.ApplyMySQLWith(ctx, d.DB, schema.Control, schema.MySQLOptions{UpTo: 10})
	if err != nil || len(applied) != 1 || applied[0] != 10 {
		t.Fatalf("applying 0010 over a control database at 0009: %v, %v", applied, err)
	}
	if _, err := schema.ApplyMySQL(ctx, d.DB, schema.Control); err != nil { // later migrations, if any
		t.Fatal(err)
	}
	var n int
	if err := d.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM repair_request WHERE request_id = 'c-1'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("repair_request after the migration: %d rows, %v", n, err)
	}
	insert := func(method, id string) error {
		_, err := d.DB.ExecContext(ctx, `INSERT INTO control_request (method, request_id, request_hash, caller, state, token, owner, lease_expire, create_time, update_time)
			VALUES (?, ?, REPEAT('0', 64), 'otto', 'IN_PROGRESS', REPEAT('a', 32), REPEAT('b', 32), UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`, method, id)
		return err
	}
	long := strings.Repeat("k", 64) // the longest request_id the API accepts
	for _, k := range [][2]string{{"CancelRepair", "c-1"}, {"ApproveRepair", "c-1"}, {"ReplayParkedEvents", long}} {
		if err := insert(k[0], k[1]); err != nil {
			t.Errorf("inserting key %s/%s: %v", k[0], k[1], err)
		}
	}
	if err := insert("CancelRepair", "c-1"); !mysqldb.IsErrorNumber(err, 1062) {
		t.Errorf("a second CancelRepair/c-1: %v, want a duplicate key", err)
	}
}
