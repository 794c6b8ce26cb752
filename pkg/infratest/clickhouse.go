package infratest

import (
	"context"
	"errors"
	"fmt"
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

// CreateClickHouseDatabase creates a fresh database <prefix>_<suffix> on the
// local ClickHouse, applies the ClickHouse migrations when migrate is true,
// and returns it with a function that closes and drops it. Connection
// failures to the server wrap ErrUnreachable.
func CreateClickHouseDatabase(ctx context.Context, prefix string, migrate bool) (*ClickHouseDatabase, func(), error) {
	admin, err := chstore.Open(ctx, chstore.Options{Addr: ClickHouseAddr(), Database: "default"})
	if err != nil {
		return nil, nil, fmt.Errorf("ClickHouse: %w: %w", ErrUnreachable, err)
	}
	name := prefix + "_" + Suffix()
	if err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close()
		return nil, nil, fmt.Errorf("creating ClickHouse database %s: %w", name, err)
	}
	d := &ClickHouseDatabase{Name: name}
	drop := func() error {
		if d.Conn != nil {
			d.Conn.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		defer admin.Close()
		if err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
			return fmt.Errorf("dropping ClickHouse database %s: %w", name, err)
		}
		return nil
	}
	if d.Conn, err = chstore.Open(ctx, chstore.Options{Addr: ClickHouseAddr(), Database: name}); err != nil {
		_ = drop()
		return nil, nil, fmt.Errorf("opening ClickHouse database %s: %w", name, err)
	}
	if migrate {
		if _, err := schema.ApplyClickHouse(ctx, d.Conn); err != nil {
			_ = drop()
			return nil, nil, fmt.Errorf("migrating ClickHouse database %s: %w", name, err)
		}
	}
	return d, func() { _ = drop() }, nil
}

// NewClickHouseDatabase creates a fresh database rs_test_<suffix> (see
// CreateClickHouseDatabase) dropped when the test ends; an unreachable server
// fails or skips the test (see Unavailable).
func NewClickHouseDatabase(t testing.TB, migrate bool) *ClickHouseDatabase {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, drop, err := CreateClickHouseDatabase(ctx, "rs_test", migrate)
	if errors.Is(err, ErrUnreachable) {
		Unavailable(t, "ClickHouse", "clickhouse-server.err.log", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	return d
}
