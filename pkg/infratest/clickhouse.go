package infratest

import (
	"context"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/resultsync/resultsync/pkg/chstore"
	"github.com/resultsync/resultsync/pkg/schema"
)

// ClickHouseAddr is the native address of the local ClickHouse.
func ClickHouseAddr() string {
	return Env("RS_CH_HOST", "127.0.0.1") + ":" + Env("RS_CH_PORT", "19000")
}

// ClickHouseDatabase is a fresh database on the local ClickHouse.
type ClickHouseDatabase struct {
	Name string
	Conn driver.Conn
}

// NewClickHouseDatabase creates a fresh database rs_test_<suffix>, applies the
// ClickHouse migrations when migrate is true, and drops it when the test ends.
func NewClickHouseDatabase(t testing.TB, migrate bool) *ClickHouseDatabase {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, err := chstore.Open(ctx, chstore.Options{Addr: ClickHouseAddr(), Database: "default"})
	if err != nil {
		Unavailable(t, "ClickHouse", "clickhouse-server.err.log", err)
	}
	name := "rs_test_" + Suffix()
	if err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close()
		t.Fatalf("creating ClickHouse database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
			t.Errorf("dropping ClickHouse database %s: %v", name, err)
		}
		admin.Close()
	})
	conn, err := chstore.Open(ctx, chstore.Options{Addr: ClickHouseAddr(), Database: name})
	if err != nil {
		t.Fatalf("opening ClickHouse database %s: %v", name, err)
	}
	t.Cleanup(func() { conn.Close() })
	if migrate {
		if _, err := schema.ApplyClickHouse(ctx, conn); err != nil {
			t.Fatalf("migrating ClickHouse database %s: %v", name, err)
		}
	}
	return &ClickHouseDatabase{Name: name, Conn: conn}
}
