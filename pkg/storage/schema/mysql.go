package schema

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"
)

// ErrDirty reports a migration that started and did not finish: some of its
// statements ran (MySQL commits DDL statement by statement), so the database
// is between two schema versions. Nothing more is applied until an operator
// fixes the cause and resumes (MySQLOptions.Resume, `migrate --resume`).
var ErrDirty = errors.New("half-applied migration")

// MySQLOptions change how ApplyMySQLWith treats a half-applied migration.
type MySQLOptions struct {
	// Resume continues a dirty migration from its first statement that did
	// not succeed, after the operator fixed the cause of the failure.
	Resume bool
	// UpTo, when positive, applies only the migrations up to that version:
	// tests and bench/migrate build a database as it was before a migration,
	// fill it, then apply the rest.
	UpTo int
}

// ApplyMySQL applies the pending migrations of kind (Shard or Control) to db
// and returns the versions it applied; see ApplyMySQLWith.
func ApplyMySQL(ctx context.Context, db *sql.DB, kind Kind) ([]int, error) {
	return ApplyMySQLWith(ctx, db, kind, MySQLOptions{})
}

// ApplyMySQLWith applies the pending migrations of kind to db (MySQL 8.4+ or
// MariaDB 10.11+) and returns the versions it applied. Concurrent callers on
// the same database serialize on a named lock; a second run applies nothing.
//
// A migration is recorded in schema_migrations before its first statement,
// marked dirty, with the number of statements done after each one; it becomes
// clean only when all of them succeeded. A failure leaves the dirty mark, the
// count and the error in the table, and every later run fails with ErrDirty
// naming the statement, until it is resumed with opts.Resume.
func ApplyMySQLWith(ctx context.Context, db *sql.DB, kind Kind, opts MySQLOptions) ([]int, error) {
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

	if err := ensureMigrationsTable(ctx, conn); err != nil {
		return nil, err
	}
	applied, err := readApplied(ctx, conn)
	if err != nil {
		return nil, err
	}

	var done []int
	for _, m := range migs {
		if opts.UpTo > 0 && m.Version > opts.UpTo {
			break
		}
		from := 0
		if a, ok := applied[m.Version]; ok {
			if a.checksum != m.Checksum {
				return done, fmt.Errorf("migration %04d_%s changed after it was applied (checksum %s, recorded %s)", m.Version, m.Name, m.Checksum[:12], a.checksum[:12])
			}
			if !a.dirty {
				continue
			}
			if !opts.Resume {
				return done, fmt.Errorf("%s migration %04d_%s: %w: %d of %d statements applied, statement %d failed: %s (fix the cause, then resume with `migrate --resume`)",
					kind, m.Version, m.Name, ErrDirty, a.done, len(m.Statements), a.done+1, a.lastError)
			}
			from = a.done
		} else if _, err := conn.ExecContext(ctx,
			"INSERT INTO schema_migrations (version, name, checksum, applied_at, dirty, statements_done) VALUES (?, ?, ?, UTC_TIMESTAMP(3), 1, 0)",
			m.Version, m.Name, m.Checksum); err != nil {
			return done, fmt.Errorf("recording the start of migration %04d_%s: %w", m.Version, m.Name, err)
		}
		for i := from; i < len(m.Statements); i++ {
			if _, err := conn.ExecContext(ctx, m.Statements[i]); err != nil {
				msg := err.Error()
				if len(msg) > 1000 {
					msg = msg[:1000]
				}
				_, _ = conn.ExecContext(context.WithoutCancel(ctx), "UPDATE schema_migrations SET last_error = ? WHERE version = ?", msg, m.Version)
				return done, fmt.Errorf("applying %s migration %04d_%s, statement %d of %d (marked dirty: %d applied): %w%s",
					kind, m.Version, m.Name, i+1, len(m.Statements), i, err, hint(err))
			}
			if _, err := conn.ExecContext(ctx, "UPDATE schema_migrations SET statements_done = ? WHERE version = ?", i+1, m.Version); err != nil {
				return done, fmt.Errorf("recording progress of migration %04d_%s: %w", m.Version, m.Name, err)
			}
		}
		if _, err := conn.ExecContext(ctx,
			"UPDATE schema_migrations SET dirty = 0, last_error = '', applied_at = UTC_TIMESTAMP(3) WHERE version = ?", m.Version); err != nil {
			return done, fmt.Errorf("recording migration %04d_%s: %w", m.Version, m.Name, err)
		}
		done = append(done, m.Version)
	}
	return done, nil
}

// hint explains the server errors an operator can fix without reading code.
func hint(err error) string {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return ""
	}
	switch me.Number {
	case 1419: // ER_BINLOG_CREATE_ROUTINE_NEED_SUPER
		return " (MySQL with the binary log on: the migrating account needs the SUPER privilege, or the server log_bin_trust_function_creators=1, to create the shard triggers)"
	case 3763: // ER_GENERATED_COLUMN_FUNCTION_IS_NOT_ALLOWED
		return " (a function this engine forbids in generated columns)"
	}
	return ""
}

type appliedMigration struct {
	checksum  string
	dirty     bool
	done      int
	lastError string
}

func ensureMigrationsTable(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INT NOT NULL PRIMARY KEY,
		name VARCHAR(128) NOT NULL,
		checksum CHAR(64) NOT NULL,
		applied_at DATETIME(3) NOT NULL,
		dirty TINYINT(1) NOT NULL DEFAULT 0,
		statements_done INT NOT NULL DEFAULT 0,
		last_error VARCHAR(1024) NOT NULL DEFAULT ''
	) ENGINE=InnoDB`); err != nil {
		return fmt.Errorf("creating schema_migrations: %w", err)
	}
	// A table made before the dirty mark existed gets its columns.
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.columns
		WHERE table_schema = DATABASE() AND table_name = 'schema_migrations' AND column_name = 'dirty'`).Scan(&n); err != nil {
		return fmt.Errorf("inspecting schema_migrations: %w", err)
	}
	if n == 0 {
		if _, err := conn.ExecContext(ctx, `ALTER TABLE schema_migrations
			ADD COLUMN dirty TINYINT(1) NOT NULL DEFAULT 0,
			ADD COLUMN statements_done INT NOT NULL DEFAULT 0,
			ADD COLUMN last_error VARCHAR(1024) NOT NULL DEFAULT ''`); err != nil {
			return fmt.Errorf("adding the dirty mark to schema_migrations: %w", err)
		}
	}
	return nil
}

func readApplied(ctx context.Context, conn *sql.Conn) (map[int]appliedMigration, error) {
	rows, err := conn.QueryContext(ctx, "SELECT version, checksum, dirty, statements_done, last_error FROM schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("reading schema_migrations: %w", err)
	}
	defer rows.Close()
	applied := map[int]appliedMigration{}
	for rows.Next() {
		var v int
		var a appliedMigration
		if err := rows.Scan(&v, &a.checksum, &a.dirty, &a.done, &a.lastError); err != nil {
			return nil, fmt.Errorf("reading schema_migrations: %w", err)
		}
		applied[v] = a
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading schema_migrations: %w", err)
	}
	return applied, nil
}
