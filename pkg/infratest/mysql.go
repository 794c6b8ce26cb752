package infratest

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/mysqldb"
	"github.com/resultsync/resultsync/pkg/schema"
)

// MySQLServerDSN is the DSN of the local MariaDB server with no database.
func MySQLServerDSN() string {
	return fmt.Sprintf("%s:%s@tcp(%s:%s)/",
		Env("RS_MYSQL_USER", "resultsync"), Env("RS_MYSQL_PASSWORD", "resultsync"),
		Env("RS_MYSQL_HOST", "127.0.0.1"), Env("RS_MYSQL_PORT", "13306"))
}

// MySQLDatabase is a fresh database on the local MariaDB.
type MySQLDatabase struct {
	Name string
	DSN  string
	DB   *sql.DB
}

// NewMySQLDatabase creates a fresh database rs_test_<suffix>, applies the
// migrations of kind (Shard or Control; "" applies none) and drops it when
// the test ends.
func NewMySQLDatabase(t testing.TB, kind schema.Kind) *MySQLDatabase {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := mysqldb.Open(ctx, MySQLServerDSN(), mysqldb.Options{MaxOpen: 2})
	if err != nil {
		Unavailable(t, "MariaDB", "mariadb.log", err)
	}
	name := "rs_test_" + Suffix()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4"); err != nil {
		admin.Close()
		t.Fatalf("creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
			t.Errorf("dropping database %s: %v", name, err)
		}
		admin.Close()
	})
	dsn := MySQLServerDSN() + name
	db, err := mysqldb.Open(ctx, dsn, mysqldb.Options{MaxOpen: 64})
	if err != nil {
		t.Fatalf("opening %s: %v", name, err)
	}
	t.Cleanup(func() { db.Close() })
	if kind != "" {
		if _, err := schema.ApplyMySQL(ctx, db, kind); err != nil {
			t.Fatalf("migrating %s: %v", name, err)
		}
	}
	return &MySQLDatabase{Name: name, DSN: dsn, DB: db}
}
