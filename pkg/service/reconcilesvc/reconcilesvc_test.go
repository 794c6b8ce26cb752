package reconcilesvc_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/model/shard"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/config"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/service/reconcilesvc"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/configtest"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/reconcileapitest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

const (
	serving    = healthpb.HealthCheckResponse_SERVING
	notServing = healthpb.HealthCheckResponse_NOT_SERVING
)

func TestLoad(t *testing.T) {
	const pw = "Sup3rSecretPw"
	configtest.Load(t, reconcilesvc.Load, []configtest.Case{
		{Name: "production without settings names every missing one",
			Args: []string{"--grpc-addr=127.0.0.1:0"}, WantErr: []string{"--shards", "--control-dsn", "--clickhouse-addr", "--auth-jwt-keys"}},
		{Name: "missing and invalid settings at once",
			Args: []string{"--control-dsn=u:" + pw + "@tcp(127.0.0.1:1)/c", "--clickhouse-addr=nonsense", "--buckets=0",
				"--grace=-1s", "--max-boundary-retries=-1", "--shutdown-grace=0s"},
			WantErr: []string{"--shards", "--auth-jwt-keys", "clickhouse-addr", "buckets", "grace", "max-boundary-retries", "shutdown-grace"}},
		{Name: "an unparsable control DSN is refused without printing it",
			Args: []string{"--profile=local", "--control-dsn=" + pw + "@@nonsense"}, WantErr: []string{"control-dsn is not a valid DSN"}},
		{Name: "local profile applies the development stack", Args: []string{"--profile=local"}},
	}, func(t *testing.T, cfg reconcilesvc.Config) {
		if cfg.Stores.Shards != config.DefaultShards || cfg.Stores.ControlDSN != config.DefaultControlDSN || cfg.Stores.CHAddr != config.DefaultClickHouseAddr {
			t.Errorf("local profile did not apply the development stack: %+v", cfg.Runner)
		}
	}, pw)
}

// env is a reconcile server's dependencies, each behind a proxy that can cut it.
type env struct {
	shards   []*infratest.MySQLDatabase
	m        shard.Map
	control  *infratest.MySQLDatabase
	store    *reconcile.RunStore
	shardPx  []*infratest.Proxy
	shardVia []string // the shards' DSNs through shardPx
	ctlPx    *infratest.Proxy
	ctlVia   string // the control database's DSN through ctlPx
	chPx     *infratest.Proxy
	chDBName string
	proj     *chstore.Projection
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if infratest.ClickHouseIsInProcess() {
		t.Skip("the ClickHouse faults need a server (RS_CH_ENGINE=server)")
	}
	e := &env{}
	for _, id := range []string{"shard-0", "shard-1"} {
		db := infratest.NewMySQLDatabase(t, schema.Shard)
		e.shards = append(e.shards, db)
		e.m.Shards = append(e.m.Shards, shard.Shard{ID: id, DSN: db.DSN})
		px, dsn := db.ProxiedDSN(t)
		e.shardPx, e.shardVia = append(e.shardPx, px), append(e.shardVia, dsn)
	}
	e.control = infratest.NewMySQLDatabase(t, schema.Control)
	e.store = reconcile.NewRunStore(e.control.DB)
	e.ctlPx, e.ctlVia = e.control.ProxiedDSN(t)
	ch := infratest.NewClickHouseDatabase(t, true)
	e.chDBName = ch.Name
	e.proj = chstore.NewProjection(ch.Conn)
	e.chPx = infratest.NewProxy(t, infratest.ClickHouseAddr())
	return e
}

// interruptedRun stores a run left RUNNING, as by a crash.
func (e *env) interruptedRun(t *testing.T) reconcile.Run {
	t.Helper()
	r, err := e.store.Create(context.Background(), reconcile.Scope{DetectID: 10001}, reconcile.Depth(fitnessv1.ReconcileDepth_RECONCILE_DEPTH_COUNTS), 0, "test")
	if err != nil {
		t.Fatal(err)
	}
	r.State = reconcile.StateRunning
	if err := e.store.Update(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return r
}

// record writes a record on the shard that owns it (the projection never
// receives it).
func (e *env) record(t *testing.T, dataID int64) {
	t.Helper()
	if _, err := e.shards[e.m.Owner(dataID)].DB.Exec(`INSERT INTO fitness_result
		(data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
		VALUES (?, 10001, 4, 3, 7, 5, 2.21, 'm', 1, 0, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`, dataID); err != nil {
		t.Fatal(err)
	}
}

type running struct {
	*servertest.Running
	rc fitnessv1.ReconcileServiceClient
}

// start builds the server as main does (Load, New, Run), on loopback ports.
func (e *env) start(t *testing.T) *running {
	t.Helper()
	return e.startWith(t)
}

// startWith starts the server with extra flags.
func (e *env) startWith(t *testing.T, extra ...string) *running {
	t.Helper()
	var shards []string
	for i, s := range e.m.Shards {
		shards = append(shards, s.ID+"="+e.shardVia[i])
	}
	configtest.ClearEnv(t)
	cfg, err := reconcilesvc.Load(append([]string{"--grpc-addr=127.0.0.1:0", "--http-addr=", "--shutdown-grace=2s",
		"--profile=local", "--auth-tokens=" + auth.DevTokens, "--shards=" + strings.Join(shards, ","),
		"--control-dsn=" + e.ctlVia,
		"--clickhouse-addr=" + e.chPx.Addr(), "--clickhouse-database=" + e.chDBName,
		"--grace=10ms", "--catch-up-wait=10ms"}, extra...))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := reconcilesvc.New(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := servertest.Start(t, svc)
	return &running{Running: r, rc: fitnessv1.NewReconcileServiceClient(r.Conn())}
}

func (r *running) waitHealth(t *testing.T, want map[string]healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	r.WaitHealthAll(t, want, 20*time.Second)
}

func operator() context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer dev-operator")
}

func startRun(rc fitnessv1.ReconcileServiceClient) (*fitnessv1.ReconciliationRun, error) {
	resp, err := rc.StartReconciliationRun(operator(), &fitnessv1.StartReconciliationRunRequest{
		Scope: &fitnessv1.ReconcileScope{DetectId: 10001}, Depth: fitnessv1.ReconcileDepth_RECONCILE_DEPTH_VERSIONS})
	return resp.GetRun(), err
}

func waitRun(t *testing.T, rc fitnessv1.ReconcileServiceClient, id string) *fitnessv1.ReconciliationRun {
	t.Helper()
	return reconcileapitest.Wait(t, rc, operator, id, 30*time.Second)
}

// The server main builds marks the runs a restart interrupted FAILED,
// executes runs, and its health follows each dependency: ClickHouse and the
// control database are required, a shard shows on its own name only.
func TestRunsAndHealthFollowTheDependencies(t *testing.T) {
	e := newEnv(t)
	stale := e.interruptedRun(t)
	e.record(t, 800001)
	r := e.start(t)
	if got, err := e.store.Get(context.Background(), stale.ID); err != nil || got.State != reconcile.StateFailed {
		t.Errorf("interrupted run after New = %+v, %v; want FAILED", got, err)
	}
	all := map[string]healthpb.HealthCheckResponse_ServingStatus{"": serving, "dependency/control": serving,
		"dependency/clickhouse": serving, "dependency/shard-0": serving, "dependency/shard-1": serving}
	r.waitHealth(t, all)

	run, err := startRun(r.rc)
	if err != nil {
		t.Fatal(err)
	}
	if got := waitRun(t, r.rc, run.GetRunId()); got.GetState() != fitnessv1.RunState_RUN_STATE_SUCCEEDED || got.GetDiscrepancyCount() != 1 {
		t.Errorf("run = %v with %d discrepancies (%s); want SUCCEEDED with the one record missing in the target",
			got.GetState(), got.GetDiscrepancyCount(), got.GetErrorMessage())
	}

	e.chPx.Down()
	r.waitHealth(t, map[string]healthpb.HealthCheckResponse_ServingStatus{"": notServing, "dependency/clickhouse": notServing,
		"dependency/control": serving, "dependency/shard-0": serving})
	e.chPx.Up()
	r.waitHealth(t, all)

	e.shardPx[1].Down()
	r.waitHealth(t, map[string]healthpb.HealthCheckResponse_ServingStatus{"": serving, "dependency/shard-1": notServing, "dependency/shard-0": serving})
	e.shardPx[1].Up()
	r.waitHealth(t, all)

	e.ctlPx.Down()
	r.waitHealth(t, map[string]healthpb.HealthCheckResponse_ServingStatus{"": notServing, "dependency/control": notServing})
	e.ctlPx.Up()
	r.waitHealth(t, all)

	if took, err := r.Stop(t); err != nil || took > 5*time.Second {
		t.Errorf("Run after the context ended = %v after %s; want nil within the grace", err, took)
	}
}

// While the runs a restart interrupted cannot be marked FAILED (the control
// database is down at start-up), new runs are refused with UNAVAILABLE and
// health says so; once the database returns, the executor marks them and
// runs start again.
func TestNewRunsWaitForTheInterruptedOnes(t *testing.T) {
	e := newEnv(t)
	stale := e.interruptedRun(t)
	e.ctlPx.Down()
	r := e.start(t)
	r.waitHealth(t, map[string]healthpb.HealthCheckResponse_ServingStatus{"": notServing, "dependency/control": notServing,
		"dependency/clickhouse": serving})
	if _, err := startRun(r.rc); status.Code(err) != codes.Unavailable {
		t.Errorf("StartReconciliationRun before the interrupted runs were marked = %v; want UNAVAILABLE", err)
	}

	e.ctlPx.Up()
	r.waitHealth(t, map[string]healthpb.HealthCheckResponse_ServingStatus{"": serving, "dependency/control": serving})
	if got, err := e.store.Get(context.Background(), stale.ID); err != nil || got.State != reconcile.StateFailed {
		t.Errorf("interrupted run after the control database returned = %+v, %v; want FAILED", got, err)
	}
	e.record(t, 800002)
	run, err := startRun(r.rc)
	if err != nil {
		t.Fatalf("StartReconciliationRun after recovery = %v", err)
	}
	if got := waitRun(t, r.rc, run.GetRunId()); got.GetState() != fitnessv1.RunState_RUN_STATE_SUCCEEDED {
		t.Errorf("run = %v (%s); want SUCCEEDED", got.GetState(), got.GetErrorMessage())
	}
}
