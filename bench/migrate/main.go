// Command migrate measures shard migration 0007 (the version digest and the
// student in the content digest) on a shard holding -rows stored records:
// a fresh database on the local MySQL 9.7 (or MariaDB 10.11 with
// RS_MYSQL_ENGINE=mariadb and RS_MYSQL_PORT) is migrated up to 0006, filled
// (records over -campaigns campaigns, every 20th deleted and every 40th
// purged into deletion_log), then 0007's statements run one by one, each
// timed as the migration runner runs them. It ends by checking that every
// campaign_bucket row equals the aggregate of its records' new digests.
//
//	go run ./bench/migrate -rows 1000000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

func main() {
	rows := flag.Int("rows", 1_000_000, "stored records before the migration")
	campaigns := flag.Int("campaigns", 10, "campaigns the records spread over")
	flag.Parse()
	if err := run(context.Background(), *rows, *campaigns); err != nil {
		fmt.Fprintln(os.Stderr, "migrate bench:", err)
		os.Exit(1)
	}
}

// digits is 0..9; six of them cross-joined number a million rows.
const digits = "(SELECT 0 n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 " +
	"UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"

func run(ctx context.Context, n, campaigns int) error {
	const version = 7
	d, drop, err := infratest.CreateMySQLDatabase(ctx, "rs_bench_migrate", "", 4)
	if err != nil {
		return err
	}
	defer drop()
	if _, err := schema.ApplyMySQLWith(ctx, d.DB, schema.Shard, schema.MySQLOptions{UpTo: version - 1}); err != nil {
		return err
	}
	fmt.Printf("engine: %s, database %s\n", infratest.MySQLEngine(), d.Name)

	start := time.Now()
	seq := "SELECT a.n + 10*b.n + 100*c.n + 1000*d.n + 10000*e.n + 100000*f.n AS i FROM " +
		strings.Join([]string{digits + " a", digits + " b", digits + " c", digits + " d", digits + " e", digits + " f"}, ", ")
	const chunk = 100_000
	for lo := 0; lo < n; lo += chunk {
		if _, err := d.DB.ExecContext(ctx, `INSERT INTO fitness_result
			(data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
			SELECT 1000000 + s.i, 30001 + s.i % ?, 500000 + s.i, 3, 1 + s.i % 200, 1 + s.i % 12, (s.i % 4500) * 0.001, 'm', 1, 0,
				UTC_TIMESTAMP(3), UTC_TIMESTAMP(3)
			FROM (`+seq+`) s WHERE s.i >= ? AND s.i < ?`, campaigns, lo, min(lo+chunk, n)); err != nil {
			return fmt.Errorf("filling: %w", err)
		}
	}
	if _, err := d.DB.ExecContext(ctx, "UPDATE fitness_result SET result = result + 0.001, version = 2 WHERE data_id % 10 = 3"); err != nil {
		return fmt.Errorf("correcting: %w", err)
	}
	if _, err := d.DB.ExecContext(ctx, "UPDATE fitness_result SET is_deleted = 1, version = version + 1 WHERE data_id % 20 = 0"); err != nil {
		return fmt.Errorf("deleting: %w", err)
	}
	if _, err := d.DB.ExecContext(ctx, "DELETE FROM fitness_result WHERE is_deleted = 1 AND data_id % 40 = 0"); err != nil {
		return fmt.Errorf("purging: %w", err)
	}
	var live, logged, buckets int
	if err := d.DB.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM fitness_result), (SELECT COUNT(*) FROM deletion_log),
		(SELECT COUNT(*) FROM campaign_bucket)`).Scan(&live, &logged, &buckets); err != nil {
		return err
	}
	fmt.Printf("filled in %s: fitness_result %d rows, deletion_log %d rows, campaign_bucket %d rows\n",
		time.Since(start).Round(time.Millisecond), live, logged, buckets)

	migs, err := schema.Load(schema.Shard)
	if err != nil {
		return err
	}
	m := migs[version-1]
	if m.Version != version {
		return fmt.Errorf("migration %d is %04d_%s", version, m.Version, m.Name)
	}
	total := time.Now()
	for i, stmt := range m.Statements {
		t := time.Now()
		if _, err := d.DB.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("statement %d: %w", i+1, err)
		}
		first, _, _ := strings.Cut(stmt, "\n")
		fmt.Printf("  %2d  %9s  %.70s\n", i+1, time.Since(t).Round(time.Millisecond), first)
	}
	elapsed := time.Since(total)
	fmt.Printf("RESULT %s: migration %04d_%s on %d stored records (+%d deletion records, %d buckets): %s\n",
		infratest.MySQLEngine(), m.Version, m.Name, live, logged, buckets, elapsed.Round(time.Millisecond))

	var wrong int
	if err := d.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM campaign_bucket c LEFT JOIN (
		SELECT detect_id, b, BIT_XOR(vd) AS vx, BIT_XOR(cd) AS dx FROM (
			SELECT detect_id, data_id % 1024 AS b, version_digest AS vd, content_digest AS cd FROM fitness_result
			UNION ALL SELECT detect_id, data_id % 1024, version_digest, content_digest FROM deletion_log) r GROUP BY detect_id, b
		) a ON a.detect_id = c.detect_id AND a.b = c.bucket
		WHERE c.version_xor <> COALESCE(a.vx, 0) OR c.digest_xor <> COALESCE(a.dx, 0)`).Scan(&wrong); err != nil {
		return err
	}
	if wrong != 0 {
		return fmt.Errorf("%d buckets differ from their records after the migration", wrong)
	}
	fmt.Println("every bucket aggregate equals its records' digests")
	return nil
}
