package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/resultsync/resultsync/pkg/chstore"
	"github.com/resultsync/resultsync/pkg/rebuild"
	"github.com/resultsync/resultsync/pkg/reconcile"
	"github.com/resultsync/resultsync/pkg/repair"
	"github.com/resultsync/resultsync/pkg/replay"
	"github.com/resultsync/resultsync/pkg/shard"
)

// wiring is what the implementations of the repair interfaces are built
// from; realMain builds it once.
type wiring struct {
	Log           *slog.Logger
	Shards        shard.Map   // ids and routing, in map order
	ShardDBs      []*sql.DB   // ShardDBs[i] is the database of Shards.Shards[i]
	CH            driver.Conn // the projection database
	RowsPerSecond int         // --rows-per-second: the rebuild may pace itself with it
}

// errNotWired is the error of the placeholders below.
var errNotWired = errors.New("not wired yet")

// newReplayer returns the shard-side replay (pkg/replay): the record's
// authoritative state, or its retained tombstone, re-delivered through its
// shard's outbox with its existing version and event id.
func newReplayer(w wiring) (repair.Replayer, error) {
	return replay.New(w.Shards, w.ShardDBs), nil
}

// newTargetEditor returns the projection's origins and approved removals
// (pkg/chstore, ClickHouse mutations waited for).
func newTargetEditor(w wiring) (repair.TargetEditor, error) {
	return chstore.NewProjection(w.CH), nil
}

// newRebuilder returns the controlled rebuild (pkg/rebuild): staging table,
// catch-up, verification, atomic switch, epoch retirement.
func newRebuilder(w wiring) (repair.Rebuilder, error) {
	return rebuild.New(w.ShardDBs, w.Shards.IDs(), w.CH, rebuild.Options{RowsPerSecond: w.RowsPerSecond, Log: w.Log}), nil
}

// newEpochSource returns what the epoch floor of a new rebuild is read
// from, besides --epoch-floor and the rebuilds of the control database: the
// highest epoch stored in the projection for the scope.
func newEpochSource(w wiring) (repair.EpochSource, error) {
	return repair.ProjectionEpochs{Conn: w.CH}, nil
}

// notWired is the placeholder of an implementation not wired yet.
type notWired struct{ what string }

func (n notWired) err() error { return fmt.Errorf("%s: %w", n.what, errNotWired) }

func (n notWired) Replay(context.Context, int64) (string, int64, string, bool, error) {
	return "", 0, "", false, n.err()
}

func (n notWired) Origins(context.Context, int64, int64) ([]chstore.Row, error) { return nil, n.err() }

func (n notWired) RemoveAbove(context.Context, int64, int64, int64) (int64, error) { return 0, n.err() }

func (n notWired) Rebuild(context.Context, reconcile.Scope, uint16, func(string, int64, int64)) (int64, error) {
	return 0, n.err()
}
