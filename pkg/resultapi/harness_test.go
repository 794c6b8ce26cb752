package resultapi

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/infratest"
	"github.com/resultsync/resultsync/pkg/outbox"
	"github.com/resultsync/resultsync/pkg/resultstore"
	"github.com/resultsync/resultsync/pkg/schema"
	"github.com/resultsync/resultsync/pkg/server"
	"github.com/resultsync/resultsync/pkg/server/servertest"
	"github.com/resultsync/resultsync/pkg/shard"
)

// harness is a results server on :0 over two fresh shard databases.
type harness struct {
	client fitnessv1.ResultServiceClient
	shards []*infratest.MySQLDatabase
	m      shard.Map
}

// newHarness starts the service; dsnOverride replaces shard DSNs by index
// (to point a shard at a server that is down).
func newHarness(t *testing.T, opts resultstore.Options, dsnOverride map[int]string) *harness {
	t.Helper()
	h := &harness{}
	for i := range 2 {
		db := infratest.NewMySQLDatabase(t, schema.Shard)
		h.shards = append(h.shards, db)
		dsn := db.DSN
		if o, ok := dsnOverride[i]; ok {
			dsn = o
		}
		h.m.Shards = append(h.m.Shards, shard.Shard{ID: []string{"shard-0", "shard-1"}[i], DSN: dsn})
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	stores, closeAll, err := OpenStores(context.Background(), log, h.m, 64, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeAll)
	srv, err := server.New(log, server.Config{GRPCAddr: "127.0.0.1:0", ShutdownGrace: time.Second, LogLevel: "error"})
	if err != nil {
		t.Fatal(err)
	}
	fitnessv1.RegisterResultServiceServer(srv.GRPC(), NewService(h.m, stores))
	conn := servertest.Serve(t, srv)
	h.client = fitnessv1.NewResultServiceClient(conn)
	return h
}

// shardOf returns the test database owning schoolID.
func (h *harness) shardOf(schoolID int64) *infratest.MySQLDatabase {
	return h.shards[h.m.Route(schoolID)]
}

// outboxRow is one decoded outbox row.
type outboxRow struct {
	Version int64
	Status  string
	Event   *fitnessv1.FitnessResultChanged
}

func (h *harness) outbox(t *testing.T, schoolID, dataID int64) []outboxRow {
	t.Helper()
	rows, err := h.shardOf(schoolID).DB.QueryContext(context.Background(),
		"SELECT version, status, payload FROM outbox_event WHERE data_id = ? ORDER BY version", dataID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []outboxRow
	for rows.Next() {
		var r outboxRow
		var payload []byte
		if err := rows.Scan(&r.Version, &r.Status, &payload); err != nil {
			t.Fatal(err)
		}
		if r.Event, err = outbox.Decode(payload); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func (h *harness) count(t *testing.T, db *infratest.MySQLDatabase, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.DB.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func recordReq(reqID string, dataID, schoolID int64, result string) *fitnessv1.RecordResultRequest {
	return &fitnessv1.RecordResultRequest{
		RequestId: reqID, DataId: dataID, DetectId: 10001, UserId: 4, ProjectId: 3,
		SchoolId: schoolID, Grade: 5, Result: result, Unit: "m",
	}
}
