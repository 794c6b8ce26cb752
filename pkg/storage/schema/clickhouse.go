package schema

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// ApplyClickHouse applies the pending ClickHouse migrations to the database
// conn is bound to and returns the versions it applied. ClickHouse has no
// transactions or locks: run one migrator at a time (statements use IF NOT
// EXISTS, so a repeated statement after a crash is harmless).
func ApplyClickHouse(ctx context.Context, conn driver.Conn) ([]int, error) {
	return ApplyClickHouseUpTo(ctx, conn, 0)
}

// ApplyClickHouseUpTo is ApplyClickHouse applying only the migrations up to
// version upTo (0: all): tests build a database as it was before a
// migration, fill it, then apply the rest.
func ApplyClickHouseUpTo(ctx context.Context, conn driver.Conn, upTo int) ([]int, error) {
	migs, err := Load(ClickHouse)
	if err != nil {
		return nil, err
	}
	if err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version UInt32, name String, checksum String, applied_at DateTime
	) ENGINE = MergeTree ORDER BY version`); err != nil {
		return nil, fmt.Errorf("creating schema_migrations: %w", err)
	}
	applied, err := readCHApplied(ctx, conn, "schema_migrations")
	if err != nil {
		return nil, err
	}

	var done []int
	for _, m := range migs {
		if upTo > 0 && m.Version > upTo {
			break
		}
		if sum, ok := applied[m.Version]; ok {
			if sum != m.Checksum {
				return done, fmt.Errorf("migration %04d_%s changed after it was applied", m.Version, m.Name)
			}
			continue
		}
		for i, stmt := range m.Statements {
			if err := conn.Exec(ctx, stmt); err != nil {
				return done, fmt.Errorf("applying clickhouse migration %04d_%s, statement %d: %w", m.Version, m.Name, i+1, err)
			}
		}
		if err := recordCHApplied(ctx, conn, "schema_migrations", m); err != nil {
			return done, err
		}
		done = append(done, m.Version)
	}
	return done, nil
}

// readCHApplied returns the applied versions and their checksums from a
// ClickHouse migrations table.
func readCHApplied(ctx context.Context, conn driver.Conn, table string) (map[int]string, error) {
	rows, err := conn.Query(ctx, "SELECT version, checksum FROM "+table)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", table, err)
	}
	applied := map[int]string{}
	for rows.Next() {
		var v uint32
		var sum string
		if err := rows.Scan(&v, &sum); err != nil {
			rows.Close()
			return nil, fmt.Errorf("reading %s: %w", table, err)
		}
		applied[int(v)] = sum
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", table, err)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", table, err)
	}
	return applied, nil
}

// recordCHApplied records migration m as applied in a ClickHouse migrations
// table.
func recordCHApplied(ctx context.Context, conn driver.Conn, table string, m Migration) error {
	batch, err := conn.PrepareBatch(ctx, "INSERT INTO "+table+" (version, name, checksum, applied_at)")
	if err != nil {
		return fmt.Errorf("recording migration %04d_%s: %w", m.Version, m.Name, err)
	}
	if err := batch.Append(uint32(m.Version), m.Name, m.Checksum, time.Now().UTC()); err != nil {
		return fmt.Errorf("recording migration %04d_%s: %w", m.Version, m.Name, err)
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("recording migration %04d_%s: %w", m.Version, m.Name, err)
	}
	return nil
}
