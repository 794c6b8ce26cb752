// Package platformtest runs the whole resultsync Platform inside a test,
// every server built by its service package exactly as the binaries build
// it, over fresh databases (two MySQL shards by default, any number with
// NewWith, a control database, a ClickHouse projection) and a fresh Pulsar
// topic (partitioned on demand), and offers the write,
// read and wait helpers the end-to-end tests share (test/repair,
// test/gateway, test/rpcfuzz). With Options.TLS every hop runs over TLS
// from the local CA (test/tls).
package platformtest

import (
	"context"
	"crypto/tls"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/model/shard"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/platform/tlsconfig"
	"github.com/resultsync/resultsync/pkg/service/consumersvc"
	"github.com/resultsync/resultsync/pkg/service/reconcilesvc"
	"github.com/resultsync/resultsync/pkg/service/relaysvc"
	"github.com/resultsync/resultsync/pkg/service/repairsvc"
	"github.com/resultsync/resultsync/pkg/service/resultssvc"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

// Tokens are the platform-wide callers of every server (the static list
// of the local profile, which the servers run): vera (viewer), otto
// (operator) writes results and requests repairs, alice and bob (admins)
// approve each other's destructive actions. Callers of one school present
// signed tokens (AsSchool).
const Tokens = "tok-viewer=vera:viewer,tok-operator=otto:operator,tok-admin-alice=alice:admin,tok-admin-bob=bob:admin"

// Platform is the whole resultsync path in one test, every part built by
// its service package as the binaries build it, over fresh databases and a
// fresh topic: results -> shard outboxes -> relay -> Pulsar -> consumer ->
// ClickHouse, the reconcile server and the repair server.
type Platform struct {
	t        *testing.T
	Log      *slog.Logger
	Shards   shard.Map
	ShardDBs []*sql.DB // ShardDBs[i] is the database of Shards.Shards[i]
	Control  *infratest.MySQLDatabase
	CH       *infratest.ClickHouseDatabase
	Proj     *chstore.Projection
	Topic    string

	// Clients of the servers, and their gRPC addresses.
	Results                                           fitnessv1.ResultServiceClient
	Reconcile                                         fitnessv1.ReconcileServiceClient
	Repair                                            fitnessv1.RepairServiceClient
	ResultsAddr, RelayAddr, ReconcileAddr, RepairAddr string
	// ConsumerAddr is the gRPC address of the consumer started last.
	ConsumerAddr string

	// StopConsumer and StopRepair stop those servers (idempotent; the end
	// of the test stops everything).
	StopConsumer func()
	StopRepair   func()

	// CA is the local CA every hop runs TLS from (Options.TLS; nil without).
	CA *infratest.LocalCA

	jwt       *signing
	clientTLS *tls.Config // the servers' callers' TLS (with CA)
}

// New starts the platform (two shards, one consumer); it stops when the
// test ends.
func New(t *testing.T) *Platform { return NewWith(t, Options{}) }

// Options shape the platform NewWith starts.
type Options struct {
	// Shards is the number of MySQL shards (default 2).
	Shards int
	// Partitions, when positive, creates the topic partitioned in that many
	// partitions before anything publishes (default: a non-partitioned topic
	// created on first use).
	Partitions int
	// NoConsumer leaves the consumer to the test (StartConsumer, or
	// instances of its own on Topic); StopConsumer is then a no-op.
	NoConsumer bool
	// TLS runs every hop over TLS from the local CA (infratest.EngineTLS:
	// engines without TLS fail or skip the test): each server serves mutual
	// TLS (its gRPC requires a client certificate of the CA; Dial presents
	// the local client certificate), the servers reach MySQL with
	// tls=resultsync, ClickHouse on its secure native port and Pulsar over
	// pulsar+ssl://, each verified with the CA and presenting the client
	// certificate, and GatewayArgs make the gateway serve HTTPS and dial the
	// backends over mutual TLS. The test's own connections (ShardDBs,
	// Control, CH) stay as they are: they observe, they are not a hop.
	TLS bool
}

// NewWith starts the platform shaped by o; it stops when the test ends.
func NewWith(t *testing.T, o Options) *Platform {
	t.Helper()
	p := &Platform{t: t, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), StopConsumer: func() {}, jwt: newSigning(t)}
	if testing.Verbose() {
		p.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if o.TLS {
		ca := infratest.EngineTLS(t)
		p.CA = &ca
		c, err := tlsconfig.Client(p.Log, tlsconfig.Files{CAFile: ca.CAFile, CertFile: ca.ClientCert, KeyFile: ca.ClientKey}, "platform")
		if err != nil {
			t.Fatal(err)
		}
		p.clientTLS = c
	}
	for i := range max(o.Shards, 2) {
		db := infratest.NewMySQLDatabase(t, schema.Shard)
		p.Shards.Shards = append(p.Shards.Shards, shard.Shard{ID: fmt.Sprintf("shard-%d", i), DSN: db.DSN})
		p.ShardDBs = append(p.ShardDBs, db.DB)
	}
	p.Control = infratest.NewMySQLDatabase(t, schema.Control)
	p.CH = infratest.NewClickHouseDatabase(t, true)
	p.Proj = chstore.NewProjection(p.CH.Conn)
	p.Topic = infratest.Topic(t, "platform")
	if o.Partitions > 0 {
		infratest.CreatePartitionedTopic(t, p.Topic, o.Partitions)
	}

	p.ResultsAddr = Serve(t, "results", func(ctx context.Context) (servertest.Runner, error) {
		cfg, err := resultssvc.Load(p.Args("--max-conns-per-shard=8"))
		if err != nil {
			return nil, err
		}
		return resultssvc.New(ctx, p.Log, cfg)
	})
	p.Results = fitnessv1.NewResultServiceClient(p.Dial(p.ResultsAddr))
	p.RelayAddr = Serve(t, "relay", func(ctx context.Context) (servertest.Runner, error) {
		cfg, err := relaysvc.Load(p.Args(append(p.PulsarArgs(), "--control-dsn="+p.ControlDSN(), "--topic="+p.Topic,
			"--poll-interval=20ms")...))
		if err != nil {
			return nil, err
		}
		return relaysvc.New(ctx, p.Log, cfg)
	})
	if !o.NoConsumer {
		p.StartConsumer(0)
	}
	p.ReconcileAddr = Serve(t, "reconcile", func(ctx context.Context) (servertest.Runner, error) {
		cfg, err := reconcilesvc.Load(p.Args(append(p.ClickHouseArgs(), "--control-dsn="+p.ControlDSN(),
			"--grace=300ms", "--catch-up-wait=300ms")...))
		if err != nil {
			return nil, err
		}
		return reconcilesvc.New(ctx, p.Log, cfg)
	})
	p.Reconcile = fitnessv1.NewReconcileServiceClient(p.Dial(p.ReconcileAddr))
	p.StartRepair()
	return p
}

// Args are the settings every server with the shard map shares (with
// Options.TLS: serving mutual TLS, and MySQL over TLS), then extra.
func (p *Platform) Args(extra ...string) []string {
	var shards []string
	for _, s := range p.Shards.Shards {
		shards = append(shards, s.ID+"="+p.dsn(s.DSN))
	}
	args := append(p.serverArgs(), "--shards="+strings.Join(shards, ","))
	if p.CA != nil {
		args = append(args, "--mysql-tls-ca-file="+p.CA.CAFile, "--mysql-tls-cert-file="+p.CA.ClientCert, "--mysql-tls-key-file="+p.CA.ClientKey)
	}
	return append(args, extra...)
}

// serverArgs are the settings of every server: loopback gRPC, no metrics
// listener, the static tokens and signing key, and (Options.TLS) serving
// mutual TLS with the local CA's server certificate.
func (p *Platform) serverArgs() []string {
	args := append([]string{"--profile=local", "--grpc-addr=127.0.0.1:0", "--http-addr=", "--shutdown-grace=2s", "--auth-tokens=" + Tokens},
		p.jwt.authArgs()...)
	if p.CA != nil {
		args = append(args, "--tls-cert-file="+p.CA.ServerCert, "--tls-key-file="+p.CA.ServerKey, "--tls-ca-file="+p.CA.CAFile, "--tls-client-auth")
	}
	return args
}

// dsn is a MySQL DSN of the servers: with Options.TLS it selects
// tls=resultsync (the CA verifies the server, the client certificate is
// presented).
func (p *Platform) dsn(dsn string) string {
	if p.CA == nil {
		return dsn
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		p.t.Fatal(err)
	}
	cfg.TLSConfig = mysqldb.TLSConfigName
	return cfg.FormatDSN()
}

// ControlDSN is the control database's DSN as the servers get it (with
// Options.TLS: over TLS).
func (p *Platform) ControlDSN() string { return p.dsn(p.Control.DSN) }

// ClickHouseArgs are the servers' settings of the platform's projection
// database: the native address, or (Options.TLS) the secure native port
// with the CA and the client certificate.
func (p *Platform) ClickHouseArgs() []string {
	if p.CA == nil {
		return []string{"--clickhouse-addr=" + infratest.ClickHouseAddr(), "--clickhouse-database=" + p.CH.Name}
	}
	return []string{"--clickhouse-addr=" + infratest.ClickHouseSecureAddr(), "--clickhouse-database=" + p.CH.Name,
		"--clickhouse-tls-ca-file=" + p.CA.CAFile, "--clickhouse-tls-cert-file=" + p.CA.ClientCert, "--clickhouse-tls-key-file=" + p.CA.ClientKey}
}

// PulsarArgs are the servers' broker settings: pulsar://, or (Options.TLS)
// pulsar+ssl:// with the CA and the client certificate (TLS
// authentication).
func (p *Platform) PulsarArgs() []string {
	if p.CA == nil {
		return []string{"--pulsar-url=" + infratest.PulsarURL()}
	}
	return []string{"--pulsar-url=" + infratest.PulsarTLSURL(), "--pulsar-tls-ca-file=" + p.CA.CAFile,
		"--pulsar-tls-cert-file=" + p.CA.ClientCert, "--pulsar-tls-key-file=" + p.CA.ClientKey}
}

// GatewayArgs are the gateway's settings: the servers' authentication
// (their static tokens and signing key) and extra, without the shard map;
// with Options.TLS it serves gRPC and its JSON API over mutual TLS and
// dials the backends over mutual TLS with the server certificate.
func (p *Platform) GatewayArgs(extra ...string) []string {
	args := p.serverArgs()
	if p.CA != nil {
		args = append(args, "--backend-tls-ca-file="+p.CA.CAFile, "--backend-tls-cert-file="+p.CA.ServerCert, "--backend-tls-key-file="+p.CA.ServerKey)
	}
	return append(args, extra...)
}

// RepairArgs are the repair server's settings: short polls, lease and
// verification poll, so that the tests run in seconds.
func (p *Platform) RepairArgs(extra ...string) []string {
	args := append(append(p.ClickHouseArgs(), p.PulsarArgs()...), "--control-dsn="+p.ControlDSN(), "--poll=100ms", "--lease=1s",
		"--verify-poll=200ms", "--verify-timeout=60s", "--retry-backoff=50ms", "--topic="+p.Topic)
	return p.Args(append(args, extra...)...)
}

// StartRepair starts the repair server in the test process (the kill -9
// test runs the binary instead).
func (p *Platform) StartRepair(extra ...string) {
	p.RepairAddr, p.StopRepair = ServeStoppable(p.t, "repair", func(ctx context.Context) (servertest.Runner, error) {
		cfg, err := repairsvc.Load(p.RepairArgs(extra...))
		if err != nil {
			return nil, err
		}
		return repairsvc.New(ctx, p.Log, cfg)
	})
	p.Repair = fitnessv1.NewRepairServiceClient(p.Dial(p.RepairAddr))
}

// StartConsumer runs the projection consumer at the transformation epoch
// (the server's --epoch), until StopConsumer or the end of the test.
func (p *Platform) StartConsumer(epoch uint16) {
	p.StopConsumer = p.RunConsumer(consumer.Hooks{}, "--batch-wait=20ms", fmt.Sprintf("--epoch=%d", epoch))
}

// RunConsumer runs one more consumer server of the platform's topic, built by
// consumersvc.New as services/consumer builds it (its default subscription,
// the topic's dead-letter topic), with the settings extra (which win) and
// hooks observing it (consumersvc.WithObserver). It returns once the
// consumer is subscribed. The returned stop is idempotent and also runs when
// the test ends.
func (p *Platform) RunConsumer(hooks consumer.Hooks, extra ...string) (stop func()) {
	t := p.t
	t.Helper()
	args := append(append(append(p.serverArgs(), p.PulsarArgs()...), p.ClickHouseArgs()...),
		"--topic="+p.Topic, "--dead-letter-topic="+p.Topic+"-DLQ")
	args = append(args, extra...)
	addr, stop := ServeStoppable(t, "consumer", func(ctx context.Context) (servertest.Runner, error) {
		cfg, err := consumersvc.Load(args)
		if err != nil {
			return nil, err
		}
		return consumersvc.New(ctx, p.Log, cfg, consumersvc.WithObserver(hooks))
	})
	p.ConsumerAddr = addr
	hc := healthpb.NewHealthClient(p.Dial(addr))
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: server.DependencyHealthName("pulsar")})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return stop
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer not subscribed within a minute: %v, %v", resp.GetStatus(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Dial connects to a server until the test ends (with Options.TLS over
// mutual TLS: the CA verifies the server, the local client certificate is
// presented).
func (p *Platform) Dial(addr string) *grpc.ClientConn {
	creds := insecure.NewCredentials()
	if p.clientTLS != nil {
		creds = credentials.NewTLS(p.clientTLS.Clone())
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { conn.Close() })
	return conn
}

// HTTPClient is a client of the gateway's JSON API: HTTPS with the local
// client certificate under Options.TLS, plain HTTP otherwise.
func (p *Platform) HTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if p.clientTLS != nil {
		tr.TLSClientConfig = p.clientTLS.Clone()
	}
	p.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// As returns a context carrying the caller's bearer token (bounded to 30 s).
func As(token string) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	_ = cancel // bounded by its timeout
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// Viewer, Operator, Alice and Bob are contexts of the callers of Tokens.
func Viewer() context.Context { return As("tok-viewer") }

// Operator is otto's context (operator).
func Operator() context.Context { return As("tok-operator") }

// Alice is alice's context (admin).
func Alice() context.Context { return As("tok-admin-alice") }

// Bob is bob's context (admin).
func Bob() context.Context { return As("tok-admin-bob") }

// Serve builds a server and runs it until the test ends; it returns its
// gRPC address.
func Serve(t *testing.T, name string, build func(ctx context.Context) (servertest.Runner, error)) string {
	addr, _ := ServeStoppable(t, name, build)
	return addr
}

// ServeStoppable is Serve with a stop function (idempotent; also called when
// the test ends) that returns once the server stopped.
func ServeStoppable(t *testing.T, name string, build func(ctx context.Context) (servertest.Runner, error)) (string, func()) {
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

// Record writes version 1 of a record through ResultService.
func (p *Platform) Record(detect, id, school int64, result string) {
	p.t.Helper()
	if _, err := p.Results.RecordResult(Operator(), &fitnessv1.RecordResultRequest{RequestId: fmt.Sprintf("rec-%d", id), DataId: id,
		DetectId: detect, UserId: id%1000 + 1, ProjectId: 3, SchoolId: school, Grade: 5, Result: result, Unit: "m"}); err != nil {
		p.t.Fatalf("record %d: %v", id, err)
	}
}

// Correct moves a record from version expected to expected+1.
func (p *Platform) Correct(id, school, expected int64, result string) {
	p.t.Helper()
	if _, err := p.Results.CorrectResult(Operator(), &fitnessv1.CorrectResultRequest{RequestId: fmt.Sprintf("cor-%d-%d", id, expected),
		SchoolId: school, DataId: id, ExpectedVersion: expected, Result: result, Unit: "m", Reason: "teacher correction"}); err != nil {
		p.t.Fatalf("correct %d at v%d: %v", id, expected, err)
	}
}

// Remove deletes a record at version expected (tombstone expected+1).
func (p *Platform) Remove(id, school, expected int64) {
	p.t.Helper()
	if _, err := p.Results.DeleteResult(Operator(), &fitnessv1.DeleteResultRequest{RequestId: fmt.Sprintf("del-%d", id),
		SchoolId: school, DataId: id, ExpectedVersion: expected, Reason: "entered twice"}); err != nil {
		p.t.Fatalf("delete %d: %v", id, err)
	}
}

// ---- the projection ----

// Current is the projection's current state of a key: version, result in
// thousandths (engine-independent) and deletion (version 0: no row).
type Current struct {
	Version int64
	Milli   int64
	Deleted bool
}

// Origins are every stored row of a key, in version order.
func (p *Platform) Origins(detect, id int64) []chstore.Row {
	p.t.Helper()
	rows, err := p.Proj.Origins(context.Background(), detect, id)
	if err != nil {
		p.t.Fatalf("origins of %d: %v", id, err)
	}
	return rows
}

// CurrentOf is the current state readers see (fitness_result_current keeps
// tombstones out; FINAL over the versions keeps them in).
func (p *Platform) CurrentOf(detect, id int64) Current {
	p.t.Helper()
	var c Current
	var deleted uint8
	err := p.CH.Conn.QueryRow(context.Background(), `SELECT version, toInt64(result * 1000), is_deleted FROM fitness_result_versions FINAL
		WHERE detect_id = ? AND data_id = ?`, detect, id).Scan(&c.Version, &c.Milli, &deleted)
	if err != nil && !strings.Contains(err.Error(), "no rows") {
		p.t.Fatalf("current state of %d: %v", id, err)
	}
	c.Deleted = deleted == 1
	return c
}

// EventOf is the event id of the key's current row.
func (p *Platform) EventOf(detect, id int64) string {
	p.t.Helper()
	var e string
	if err := p.CH.Conn.QueryRow(context.Background(), `SELECT event_id FROM fitness_result_versions FINAL
		WHERE detect_id = ? AND data_id = ?`, detect, id).Scan(&e); err != nil {
		p.t.Fatalf("event id of %d: %v", id, err)
	}
	return e
}

// WaitFor polls cond until it holds, or fails the test after timeout.
func (p *Platform) WaitFor(what string, timeout time.Duration, cond func() bool) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitVersion waits until the projection's current row of the key is at
// version v.
func (p *Platform) WaitVersion(detect, id, v int64) {
	p.t.Helper()
	p.WaitFor(fmt.Sprintf("record %d at version %d in ClickHouse", id, v), 30*time.Second, func() bool {
		return p.CurrentOf(detect, id).Version == v
	})
}
