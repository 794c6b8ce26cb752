package smoke

import (
	"context"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// The repair binary runs the retention worker at start: an idempotency key
// of a shard and an audit entry older than their retention are gone, the
// newer ones stay, and the worker logs what it purged; then the server stops
// within its grace.
func TestRepairBinaryPurgesByRetention(t *testing.T) {
	const grace = 3 * time.Second
	ctx := context.Background()
	control := infratest.NewMySQLDatabase(t, schema.Control)
	shard0, shard1 := infratest.NewMySQLDatabase(t, schema.Shard), infratest.NewMySQLDatabase(t, schema.Shard)
	projection := infratest.NewClickHouseDatabase(t, true)
	now := time.Now().UTC()
	for _, r := range []struct {
		id  string
		age time.Duration
	}{{"old", 8 * 24 * time.Hour}, {"new", time.Hour}} {
		if _, err := shard1.DB.ExecContext(ctx, `INSERT INTO request_log (request_id, method, request_hash, data_id, version, response, create_time)
			VALUES (?, 'RecordResult', REPEAT('0', 64), 1, 1, '', ?)`, r.id, now.Add(-r.age)); err != nil {
			t.Fatal(err)
		}
		if _, err := control.DB.ExecContext(ctx, `INSERT INTO audit_log (audit_id, caller, action, scope, reason, outcome, create_time)
			VALUES (?, 'op', 'repair.create', 'x', 'y', 'ok', ?)`, r.id, now.Add(-r.age)); err != nil {
			t.Fatal(err)
		}
	}
	p := startBinary(t, "repair", "--profile=local", "--grpc-addr=127.0.0.1:0", "--http-addr=", "--shutdown-grace="+grace.String(),
		"--control-dsn="+control.DSN, "--shards=shard-0="+shard0.DSN+",shard-1="+shard1.DSN, "--clickhouse-database="+projection.Name,
		"--replay-path=outbox", "--audit-retention=168h", "--request-log-retention=168h", "--run-retention=24h", "--repair-retention=24h",
		"--dead-letter-retention=24h")
	waitLog(t, p, `"table":"request_log","store":"shard-1","rows":1,`, 30*time.Second)
	waitLog(t, p, `"table":"audit_log","store":"control","rows":1,`, 30*time.Second)
	for _, c := range []struct {
		name string
		q    func() (string, error)
	}{
		{"request_log on shard-1", func() (s string, err error) {
			return s, shard1.DB.QueryRowContext(ctx, "SELECT GROUP_CONCAT(request_id) FROM request_log").Scan(&s)
		}},
		{"audit_log", func() (s string, err error) {
			return s, control.DB.QueryRowContext(ctx, "SELECT GROUP_CONCAT(audit_id) FROM audit_log").Scan(&s)
		}},
	} {
		got, err := c.q()
		if err != nil || got != "new" {
			t.Errorf("%s after the purge = %q, %v; want only the newer row", c.name, got, err)
		}
	}
	stopWithinGrace(t, p, grace)
}
