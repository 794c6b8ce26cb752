package schema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ApplyMySQL applies the pending migrations of kind (Shard or Control) to db
// and returns the versions it applied. Concurrent callers on the same database
// serialize on a named lock; a second run applies nothing.
func ApplyMySQL(ctx context.Context, db *sql.DB, kind Kind) ([]int, error) {
	migs, err := Load(kind)
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("getting a connection: %w", err)
	}
	defer conn.Close()

	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(CONCAT('resultsync_migrate_', DATABASE()), 60)").Scan(&got); err != nil {
		return nil, fmt.Errorf("taking the migration lock: %w", err)
	}
	if !got.Valid || got.Int64 != 1 {
		return nil, errors.New("taking the migration lock: timed out after 60s")
	}
	defer func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK(CONCAT('resultsync_migrate_', DATABASE()))")
	}()

	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INT NOT NULL PRIMARY KEY,
		name VARCHAR(128) NOT NULL,
		checksum CHAR(64) NOT NULL,
		applied_at DATETIME(3) NOT NULL
	) ENGINE=InnoDB`); err != nil {
		return nil, fmt.Errorf("creating schema_migrations: %w", err)
	}
	applied := map[int]string{}
	rows, err := conn.QueryContext(ctx, "SELECT version, checksum FROM schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("reading schema_migrations: %w", err)
	}
	for rows.Next() {
		var v int
		var sum string
		if err := rows.Scan(&v, &sum); err != nil {
			rows.Close()
			return nil, fmt.Errorf("reading schema_migrations: %w", err)
		}
		applied[v] = sum
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("reading schema_migrations: %w", err)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading schema_migrations: %w", err)
	}

	var done []int
	for _, m := range migs {
		if sum, ok := applied[m.Version]; ok {
			if sum != m.Checksum {
				return done, fmt.Errorf("migration %04d_%s changed after it was applied (checksum %s, recorded %s)", m.Version, m.Name, m.Checksum[:12], sum[:12])
			}
			continue
		}
		for i, stmt := range m.Statements {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return done, fmt.Errorf("applying %s migration %04d_%s, statement %d: %w", kind, m.Version, m.Name, i+1, err)
			}
		}
		if _, err := conn.ExecContext(ctx,
			"INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, UTC_TIMESTAMP(3))",
			m.Version, m.Name, m.Checksum); err != nil {
			return done, fmt.Errorf("recording migration %04d_%s: %w", m.Version, m.Name, err)
		}
		done = append(done, m.Version)
	}
	return done, nil
}
