package reconcile_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// Failure point: the shard (or the network to it) dies in the middle of a
// record read. The read must fail the comparison, never pass for a shard
// that holds fewer records: a short read taken at face value would report
// every record past the cut as UNEXPECTED_TARGET_RECORD, and a repair
// would remove them from the projection.
func TestShardReadCutMidResultFails(t *testing.T) {
	ctx := context.Background()
	db := infratest.NewMySQLDatabase(t, schema.Shard)
	const records = 20000
	// 20,000 records in one statement: the product of five digit tables.
	digits := "(SELECT 0 n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 " +
		"UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
	if _, err := db.DB.ExecContext(ctx, `INSERT INTO fitness_result
		(data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
		SELECT 100000 + i, ?, 4, 3, 7, 5, CONCAT('1.', i % 100), 'm', 1, 0, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3)
		FROM (SELECT a.n + 10*b.n + 100*c.n + 1000*d.n + 10000*e.n AS i FROM `+
		digits+` a, `+digits+` b, `+digits+` c, `+digits+` d, `+digits+` e) s WHERE i < ?`, campaign, records); err != nil {
		t.Fatal(err)
	}

	proxy, viaProxy := db.Proxied(t, 2)
	src := reconcile.MySQLSource{Shards: []*sql.DB{viaProxy}}
	buckets := make([]int, 64)
	for i := range buckets {
		buckets[i] = i
	}
	scope := reconcile.Scope{DetectID: campaign}

	got, err := src.Records(ctx, scope, len(buckets), buckets, nil)
	if err != nil || len(got) != records {
		t.Fatalf("Records through the proxy: %d records, %v; want %d", len(got), err, records)
	}

	// The answer is cut 64 KiB in, a small part of the result.
	proxy.CutAfter(64 << 10)
	got, err = src.Records(ctx, scope, len(buckets), buckets, nil)
	if err == nil {
		t.Fatalf("Records cut mid-result returned %d of %d records and no error; want the read to fail", len(got), records)
	}
	if !strings.Contains(err.Error(), "shard 0 records") {
		t.Errorf("error %q does not say which read failed", err)
	}
	t.Logf("cut mid-result: %v", err)
}
