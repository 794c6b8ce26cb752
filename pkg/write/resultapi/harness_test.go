package resultapi

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/model/shard"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
	"github.com/resultsync/resultsync/pkg/write/resultstore"
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
	h.client = serve(t, h.m, opts)
	return h
}

// serve starts a results server on :0 with fresh stores (a cold identity
// cache) over the shard map m.
func serve(t *testing.T, m shard.Map, opts resultstore.Options) fitnessv1.ResultServiceClient {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	stores, closeAll, err := OpenStores(context.Background(), log, m, 64, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeAll)
	// These tests are about the service, not its callers: every call acts
	// as a platform-wide operator (test/schoolscope checks the schools).
	asPlatform := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return h(platformWide(ctx), req)
	}
	srv, err := server.New(log, server.Config{GRPCAddr: "127.0.0.1:0", ShutdownGrace: time.Second, LogLevel: "error"},
		server.WithUnaryInterceptor(asPlatform))
	if err != nil {
		t.Fatal(err)
	}
	fitnessv1.RegisterResultServiceServer(srv.GRPC(), NewService(m, stores))
	return fitnessv1.NewResultServiceClient(servertest.Serve(t, srv))
}

// platformWide is ctx with a platform-wide operator as the caller.
func platformWide(ctx context.Context) context.Context {
	return auth.WithPrincipal(ctx, auth.Principal{Subject: "harness", Role: auth.RoleOperator, Platform: true})
}

// owner returns the test database of the shard owning dataID.
func (h *harness) owner(dataID int64) *infratest.MySQLDatabase {
	return h.shards[h.m.Owner(dataID)]
}

// other returns the test database of the shard NOT owning dataID (the
// harness runs two).
func (h *harness) other(dataID int64) *infratest.MySQLDatabase {
	return h.shards[1-h.m.Owner(dataID)]
}

// idOwnedBy returns the smallest data id >= from owned by shard i.
func (h *harness) idOwnedBy(i int, from int64) int64 {
	for id := from; ; id++ {
		if h.m.Owner(id) == i {
			return id
		}
	}
}

// outboxRow is one decoded outbox row.
type outboxRow struct {
	Version int64
	Status  string
	Event   *fitnessv1.FitnessResultChanged
}

// outbox returns the outbox rows of dataID on the shard owning it.
func (h *harness) outbox(t *testing.T, dataID int64) []outboxRow {
	t.Helper()
	rows, err := h.owner(dataID).DB.QueryContext(context.Background(),
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

// countAll sums a count query over every shard.
func (h *harness) countAll(t *testing.T, query string, args ...any) int {
	t.Helper()
	n := 0
	for _, db := range h.shards {
		n += h.count(t, db, query, args...)
	}
	return n
}

// tables counts the rows of every table a command writes, per shard, and the
// campaign revision: a command that wrote nothing leaves them all unchanged.
func (h *harness) tables(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for i, db := range h.shards {
		for _, q := range []string{
			"SELECT COUNT(*) FROM fitness_result",
			"SELECT COUNT(*) FROM outbox_event",
			"SELECT COUNT(*) FROM request_log",
			"SELECT COALESCE(SUM(revision), 0) FROM campaign_bucket",
		} {
			out[h.m.Shards[i].ID+": "+q] = h.count(t, db, q)
		}
	}
	return out
}

func recordReq(reqID string, dataID, schoolID int64, result string) *fitnessv1.RecordResultRequest {
	return &fitnessv1.RecordResultRequest{
		RequestId: reqID, DataId: dataID, DetectId: 10001, UserId: 4, ProjectId: 3,
		SchoolId: schoolID, Grade: 5, Result: result, Unit: "m",
	}
}
