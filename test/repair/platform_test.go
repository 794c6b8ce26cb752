package repair_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/chstore"
	"github.com/resultsync/resultsync/pkg/consumer"
	"github.com/resultsync/resultsync/pkg/infratest"
	"github.com/resultsync/resultsync/pkg/schema"
	"github.com/resultsync/resultsync/pkg/service/reconcilesvc"
	"github.com/resultsync/resultsync/pkg/service/relaysvc"
	"github.com/resultsync/resultsync/pkg/service/repairsvc"
	"github.com/resultsync/resultsync/pkg/service/resultssvc"
	"github.com/resultsync/resultsync/pkg/shard"
)

// The callers: otto (operator) writes results and requests repairs; alice
// and bob (admins) approve each other's destructive actions.
const tokens = "tok-viewer=vera:viewer,tok-operator=otto:operator,tok-admin-alice=alice:admin,tok-admin-bob=bob:admin"

// platform is the whole resultsync path in one test, every part built by
// its service package as the binaries build it, over fresh databases and a
// fresh topic: results -> shard outboxes -> relay -> Pulsar -> consumer ->
// ClickHouse, the reconcile server and the repair server.
type platform struct {
	t        *testing.T
	log      *slog.Logger
	shards   shard.Map
	shardDBs []*sql.DB
	control  *infratest.MySQLDatabase
	ch       *infratest.ClickHouseDatabase
	proj     *chstore.Projection
	topic    string

	results   fitnessv1.ResultServiceClient
	reconcile fitnessv1.ReconcileServiceClient
	repair    fitnessv1.RepairServiceClient

	stopConsumer func()
	stopRepair   func()
}

func newPlatform(t *testing.T) *platform {
	t.Helper()
	p := &platform{t: t, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if testing.Verbose() {
		p.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	for _, id := range []string{"shard-0", "shard-1"} {
		db := infratest.NewMySQLDatabase(t, schema.Shard)
		p.shards.Shards = append(p.shards.Shards, shard.Shard{ID: id, DSN: db.DSN})
		p.shardDBs = append(p.shardDBs, db.DB)
	}
	p.control = infratest.NewMySQLDatabase(t, schema.Control)
	p.ch = infratest.NewClickHouseDatabase(t, true)
	p.proj = chstore.NewProjection(p.ch.Conn)
	p.topic = infratest.Topic(t, "repair")

	p.results = fitnessv1.NewResultServiceClient(p.dial(serve(t, "results", func(ctx context.Context) (runner, error) {
		cfg, err := resultssvc.Load(p.args("--max-conns-per-shard=8"))
		if err != nil {
			return nil, err
		}
		return resultssvc.New(ctx, p.log, cfg)
	})))
	serve(t, "relay", func(ctx context.Context) (runner, error) {
		cfg, err := relaysvc.Load(p.args("--control-dsn="+p.control.DSN, "--pulsar-url="+infratest.PulsarURL(), "--topic="+p.topic,
			"--poll-interval=20ms"))
		if err != nil {
			return nil, err
		}
		return relaysvc.New(ctx, p.log, cfg)
	})
	p.startConsumer(0)
	p.reconcile = fitnessv1.NewReconcileServiceClient(p.dial(serve(t, "reconcile", func(ctx context.Context) (runner, error) {
		cfg, err := reconcilesvc.Load(p.args("--control-dsn="+p.control.DSN, "--clickhouse-addr="+infratest.ClickHouseAddr(),
			"--clickhouse-database="+p.ch.Name, "--grace=300ms", "--catch-up-wait=300ms"))
		if err != nil {
			return nil, err
		}
		return reconcilesvc.New(ctx, p.log, cfg)
	})))
	p.startRepair()
	return p
}

// args are the settings every server shares, then extra.
func (p *platform) args(extra ...string) []string {
	var shards []string
	for _, s := range p.shards.Shards {
		shards = append(shards, s.ID+"="+s.DSN)
	}
	return append([]string{"--grpc-addr=127.0.0.1:0", "--http-addr=", "--shutdown-grace=2s", "--auth-tokens=" + tokens,
		"--shards=" + strings.Join(shards, ",")}, extra...)
}

// repairArgs are the repair server's settings: short polls, lease and
// verification poll, so that the tests run in seconds.
func (p *platform) repairArgs(extra ...string) []string {
	return p.args(append([]string{"--control-dsn=" + p.control.DSN, "--clickhouse-addr=" + infratest.ClickHouseAddr(),
		"--clickhouse-database=" + p.ch.Name, "--poll=100ms", "--lease=1s", "--verify-poll=200ms", "--verify-timeout=60s",
		"--retry-backoff=50ms"}, extra...)...)
}

// startRepair starts the repair server in the test process (the kill -9
// test runs the binary instead).
func (p *platform) startRepair(extra ...string) {
	var addr string
	addr, p.stopRepair = serveStoppable(p.t, "repair", func(ctx context.Context) (runner, error) {
		cfg, err := repairsvc.Load(p.repairArgs(extra...))
		if err != nil {
			return nil, err
		}
		return repairsvc.New(ctx, p.log, cfg)
	})
	p.repair = fitnessv1.NewRepairServiceClient(p.dial(addr))
}

// startConsumer runs the projection consumer at the transformation epoch
// (the server's --epoch), until stopConsumer or the end of the test.
func (p *platform) startConsumer(epoch uint16) {
	t := p.t
	client := infratest.NewPulsarClient(t)
	cons, err := consumer.Subscribe(client, p.topic, "projection")
	if err != nil {
		t.Fatal(err)
	}
	dlq, err := consumer.NewDLQ(client, p.topic+"-DLQ", p.proj)
	if err != nil {
		t.Fatal(err)
	}
	cfg := consumer.DefaultConfig()
	cfg.BatchWait = 20 * time.Millisecond
	cfg.Epoch = epoch
	c, err := consumer.New(p.log, cfg, cons, p.proj, dlq, nil, nil, consumer.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	stopped := false
	p.stopConsumer = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Errorf("consumer: %v", err)
		}
		dlq.Close()
		cons.Close()
	}
	t.Cleanup(p.stopConsumer)
}

func (p *platform) dial(addr string) *grpc.ClientConn {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { conn.Close() })
	return conn
}

// as returns a context carrying the caller's bearer token.
func as(token string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	_ = cancel // bounded by its timeout
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

var (
	operator = func() context.Context { return as("tok-operator") }
	alice    = func() context.Context { return as("tok-admin-alice") }
	bob      = func() context.Context { return as("tok-admin-bob") }
)

// runner is what the service packages' New return.
type runner interface {
	Run(ctx context.Context) error
	GRPCAddr() string
}

// serve builds a server and runs it until the test ends; it returns its
// gRPC address.
func serve(t *testing.T, name string, build func(ctx context.Context) (runner, error)) string {
	addr, _ := serveStoppable(t, name, build)
	return addr
}

// serveStoppable is serve with a stop function (idempotent; also called when
// the test ends) that returns once the server stopped.
func serveStoppable(t *testing.T, name string, build func(ctx context.Context) (runner, error)) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	svc, err := build(ctx)
	if err != nil {
		cancel()
		t.Fatalf("%s server: %v", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s server: %v", name, err)
		}
	}
	t.Cleanup(stop)
	return svc.GRPCAddr(), stop
}

// ---- the write path ----

// record writes version 1 of a record through ResultService.
func (p *platform) record(detect, id, school int64, result string) {
	p.t.Helper()
	if _, err := p.results.RecordResult(operator(), &fitnessv1.RecordResultRequest{RequestId: fmt.Sprintf("rec-%d", id), DataId: id,
		DetectId: detect, UserId: id%1000 + 1, ProjectId: 3, SchoolId: school, Grade: 5, Result: result, Unit: "m"}); err != nil {
		p.t.Fatalf("record %d: %v", id, err)
	}
}

// correct moves a record from version expected to expected+1.
func (p *platform) correct(id, school, expected int64, result string) {
	p.t.Helper()
	if _, err := p.results.CorrectResult(operator(), &fitnessv1.CorrectResultRequest{RequestId: fmt.Sprintf("cor-%d-%d", id, expected),
		SchoolId: school, DataId: id, ExpectedVersion: expected, Result: result, Unit: "m", Reason: "teacher correction"}); err != nil {
		p.t.Fatalf("correct %d at v%d: %v", id, expected, err)
	}
}

// remove deletes a record at version expected (tombstone expected+1).
func (p *platform) remove(id, school, expected int64) {
	p.t.Helper()
	if _, err := p.results.DeleteResult(operator(), &fitnessv1.DeleteResultRequest{RequestId: fmt.Sprintf("del-%d", id),
		SchoolId: school, DataId: id, ExpectedVersion: expected, Reason: "entered twice"}); err != nil {
		p.t.Fatalf("delete %d: %v", id, err)
	}
}

// ---- the projection ----

// current is the projection's current state of a key: version, result in
// thousandths (engine-independent) and deletion (version 0: no row).
type current struct {
	Version int64
	Milli   int64
	Deleted bool
}

// origins are every stored row of a key, in version order.
func (p *platform) origins(detect, id int64) []chstore.Row {
	p.t.Helper()
	rows, err := p.proj.Origins(context.Background(), detect, id)
	if err != nil {
		p.t.Fatalf("origins of %d: %v", id, err)
	}
	return rows
}

// currentOf is the current state readers see (fitness_result_current keeps
// tombstones out; FINAL over the versions keeps them in).
func (p *platform) currentOf(detect, id int64) current {
	p.t.Helper()
	var c current
	var deleted uint8
	err := p.ch.Conn.QueryRow(context.Background(), `SELECT version, toInt64(result * 1000), is_deleted FROM fitness_result_versions FINAL
		WHERE detect_id = ? AND data_id = ?`, detect, id).Scan(&c.Version, &c.Milli, &deleted)
	if err != nil && !strings.Contains(err.Error(), "no rows") {
		p.t.Fatalf("current state of %d: %v", id, err)
	}
	c.Deleted = deleted == 1
	return c
}

// eventOf is the event id of the key's current row.
func (p *platform) eventOf(detect, id int64) string {
	p.t.Helper()
	var e string
	if err := p.ch.Conn.QueryRow(context.Background(), `SELECT event_id FROM fitness_result_versions FINAL
		WHERE detect_id = ? AND data_id = ?`, detect, id).Scan(&e); err != nil {
		p.t.Fatalf("event id of %d: %v", id, err)
	}
	return e
}

// waitFor polls cond until it holds, or fails the test after timeout.
func (p *platform) waitFor(what string, timeout time.Duration, cond func() bool) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitVersion waits until the projection's current row of the key is at
// version v.
func (p *platform) waitVersion(detect, id, v int64) {
	p.t.Helper()
	p.waitFor(fmt.Sprintf("record %d at version %d in ClickHouse", id, v), 30*time.Second, func() bool {
		return p.currentOf(detect, id).Version == v
	})
}
