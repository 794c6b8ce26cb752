package chstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// The live path's inserts are synchronous, as the server itself records it.
// Where async inserts exist (ClickHouse 26.9, whose chdb build defaults to
// async_insert = 1), a materialized view evaluates getSetting() inside each
// insert and stores what the insert ran with: the projection's inserts (rows
// and dead letters) ran with async_insert = 0 and wait_for_async_insert = 1,
// while a control insert without the clause ran with the server's default.
// On 18.16 the server has no async_insert at all (system.settings), so no
// clause is sent (an unknown setting would be an error) and every insert is
// synchronous: the rows are readable the moment Insert returns.
func TestInsertsAreDurable(t *testing.T) {
	ctx := context.Background()
	ch := infratest.NewClickHouseDatabase(t, true)
	p := chstore.NewProjection(ch.Conn)

	var hasAsync uint64
	if err := ch.Conn.QueryRow(ctx, "SELECT count() FROM system.settings WHERE name = 'async_insert'").Scan(&hasAsync); err != nil {
		t.Fatal(err)
	}
	clause, err := p.InsertSettings(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("engine %s: async_insert known: %v; insert clause %q", infratest.ClickHouseEngine(), hasAsync == 1, clause)

	rows := make([]chstore.Row, 5)
	for i := range rows {
		rows[i] = row(10001, int64(910001+i), 1, 0, "2.31", false, 1000)
	}
	if hasAsync == 0 {
		// 18.16: no async inserts exist; nothing may be pinned.
		if clause != "" {
			t.Fatalf("clause %q sent to a server without async inserts", clause)
		}
		if err := p.Insert(ctx, rows); err != nil {
			t.Fatal(err)
		}
		if err := p.InsertDeadLetter(ctx, chstore.DeadLetter{Time: time.Now(), MessageID: "m1", EventID: "e1", Reason: "r", Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		var n, d uint64
		if err := ch.Conn.QueryRow(ctx, "SELECT count() FROM fitness_result_versions WHERE data_id BETWEEN 910001 AND 910005").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if err := ch.Conn.QueryRow(ctx, "SELECT count() FROM dead_letters").Scan(&d); err != nil {
			t.Fatal(err)
		}
		if n != 5 || d != 1 {
			t.Fatalf("right after the inserts returned: %d rows, %d dead letters; want 5 and 1", n, d)
		}
		return
	}
	if clause != " SETTINGS async_insert = 0, wait_for_async_insert = 1" {
		t.Fatalf("clause %q, want async_insert = 0, wait_for_async_insert = 1", clause)
	}
	for _, tbl := range []string{"fitness_result_versions", "dead_letters"} {
		exec(t, ch, fmt.Sprintf(`CREATE MATERIALIZED VIEW probe_%[1]s ENGINE = MergeTree ORDER BY event_id AS
			SELECT event_id, toUInt8(getSetting('async_insert')) AS async_insert, toUInt8(getSetting('wait_for_async_insert')) AS wait_insert
			FROM %[1]s`, tbl))
	}
	var def string
	if err := ch.Conn.QueryRow(ctx, "SELECT value FROM system.settings WHERE name = 'async_insert'").Scan(&def); err != nil {
		t.Fatal(err)
	}
	// A control insert without the clause: what the server's default gives.
	b, err := ch.Conn.PrepareBatch(ctx, "INSERT INTO dead_letters (dead_unix_ms, message_id, event_id, reason, payload)")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append(int64(1), "m0", "control", "r", "x"); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
	if err := p.Insert(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if err := p.InsertDeadLetter(ctx, chstore.DeadLetter{Time: time.Now(), MessageID: "m1", EventID: "dead", Reason: "r", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	seen := func(tbl, event string) (async, wait uint8) {
		t.Helper()
		if err := ch.Conn.QueryRow(ctx, "SELECT async_insert, wait_insert FROM probe_"+tbl+" WHERE event_id = ?", event).Scan(&async, &wait); err != nil {
			t.Fatalf("probe of %s, %s: %v", tbl, event, err)
		}
		return async, wait
	}
	for _, r := range rows {
		if a, w := seen("fitness_result_versions", r.EventID); a != 0 || w != 1 {
			t.Errorf("row %s inserted with async_insert=%d wait_for_async_insert=%d; want 0, 1", r.EventID, a, w)
		}
	}
	if a, w := seen("dead_letters", "dead"); a != 0 || w != 1 {
		t.Errorf("dead letter inserted with async_insert=%d wait_for_async_insert=%d; want 0, 1", a, w)
	}
	a, _ := seen("dead_letters", "control")
	t.Logf("server default async_insert=%s; control insert without the clause ran with async_insert=%d", def, a)
	if fmt.Sprint(a) != def {
		t.Errorf("control insert ran with async_insert=%d, server default %s: the probe does not see the insert's settings", a, def)
	}
}
