package infratest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/chdb"
)

// ClickHouseAddr is the native address of the local ClickHouse.
func ClickHouseAddr() string {
	return Env("RS_CH_HOST", "127.0.0.1") + ":" + Env("RS_CH_PORT", "19000")
}

// ClickHouseAppAccount is the local ClickHouse server's account with a
// password (deploy/local/env.sh RS_CH_APP_USER and RS_CH_APP_PASSWORD,
// configured by deploy/local/clickhouse.sh): the tests of the credential
// settings log in with it.
func ClickHouseAppAccount() (user, password string) {
	return Env("RS_CH_APP_USER", "rs_app"), Env("RS_CH_APP_PASSWORD", "rs-app-local-pw")
}

// ClickHouseEngine names the ClickHouse the tests run on, chosen by
// RS_CH_ENGINE: "server" (the default: the local ClickHouse 18.16 server at
// ClickHouseAddr) or "chdb" (current ClickHouse in-process, see package
// pkg/testkit/chdb).
func ClickHouseEngine() string {
	switch Env("RS_CH_ENGINE", "server") {
	case "server":
		return "ClickHouse 18.16 server"
	case "chdb":
		return "chdb (ClickHouse 26.9 in-process)"
	default:
		return "unknown RS_CH_ENGINE=" + os.Getenv("RS_CH_ENGINE")
	}
}

// ClickHouseIsInProcess reports the in-process engine (RS_CH_ENGINE=chdb):
// it has no network address, so tests of network faults need the server.
func ClickHouseIsInProcess() bool { return Env("RS_CH_ENGINE", "server") == "chdb" }

func clickHouseLogName() string {
	if Env("RS_CH_ENGINE", "server") == "chdb" {
		return "chdb.log"
	}
	return "clickhouse-server.err.log"
}

// ClickHouseDatabase is a fresh database on the local ClickHouse.
type ClickHouseDatabase struct {
	Name string
	Conn driver.Conn
}

// CreateClickHouseDatabase creates a fresh database <prefix>_<suffix> on the
// ClickHouse of ClickHouseEngine, applies the ClickHouse migrations when
// migrate is true, and returns it with a function that closes and drops it.
// Connection failures to the server, or a missing chdb installation, wrap
// ErrUnreachable. With RS_CH_ENGINE=chdb each database has its own chdb
// subprocess, ended by the drop function, and scans as strictly as the
// native driver (see chdb.OpenStrict).
func CreateClickHouseDatabase(ctx context.Context, prefix string, migrate bool) (*ClickHouseDatabase, func(), error) {
	return CreateClickHouseDatabaseOn(ctx, Env("RS_CH_ENGINE", "server"), prefix, migrate)
}

// CreateClickHouseDatabaseOn is CreateClickHouseDatabase on the named engine
// ("server" or "chdb") whatever RS_CH_ENGINE says, for tests that compare
// the two engines on the same data.
func CreateClickHouseDatabaseOn(ctx context.Context, engine, prefix string, migrate bool) (*ClickHouseDatabase, func(), error) {
	switch e := engine; e {
	case "server":
	case "chdb":
		return createChDBDatabase(ctx, prefix, migrate)
	default:
		return nil, nil, fmt.Errorf("RS_CH_ENGINE=%q: want server or chdb", e)
	}
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

func createChDBDatabase(ctx context.Context, prefix string, migrate bool) (*ClickHouseDatabase, func(), error) {
	name := prefix + "_" + Suffix()
	conn, err := chdb.OpenStrict(ctx, name)
	if errors.Is(err, chdb.ErrUnavailable) {
		return nil, nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	if err != nil {
		return nil, nil, err
	}
	d := &ClickHouseDatabase{Name: name, Conn: conn}
	if migrate {
		if _, err := schema.ApplyClickHouse(ctx, d.Conn); err != nil {
			_ = conn.Close()
			return nil, nil, fmt.Errorf("migrating chdb database %s: %w", name, err)
		}
	}
	return d, func() { _ = conn.Close() }, nil
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
		Unavailable(t, ClickHouseEngine(), clickHouseLogName(), err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	return d
}

// NewClickHouseDatabaseOn is NewClickHouseDatabase on the named engine
// ("server": the local ClickHouse 18.16; "chdb": ClickHouse 26 in-process).
func NewClickHouseDatabaseOn(t testing.TB, engine string, migrate bool) *ClickHouseDatabase {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, drop, err := CreateClickHouseDatabaseOn(ctx, engine, "rs_test", migrate)
	if errors.Is(err, ErrUnreachable) {
		name, logName := "ClickHouse 18.16 server", "clickhouse-server.err.log"
		if engine == "chdb" {
			name, logName = "chdb (ClickHouse 26 in-process)", "chdb.log"
		}
		Unavailable(t, name, logName, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	return d
}
