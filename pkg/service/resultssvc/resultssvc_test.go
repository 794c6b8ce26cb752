package resultssvc_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/auth"
	"github.com/resultsync/resultsync/pkg/config"
	"github.com/resultsync/resultsync/pkg/config/configtest"
	"github.com/resultsync/resultsync/pkg/infratest"
	"github.com/resultsync/resultsync/pkg/schema"
	"github.com/resultsync/resultsync/pkg/server"
	"github.com/resultsync/resultsync/pkg/service/resultssvc"
)

func TestLoad(t *testing.T) {
	const pw = "Sup3rSecretPw"
	configtest.Load(t, resultssvc.Load, []configtest.Case{
		{Name: "production without settings names every missing one",
			Args: []string{"--grpc-addr=127.0.0.1:0"}, WantErr: []string{"--shards", "--auth-tokens"}},
		{Name: "missing and invalid settings at once",
			Args:    []string{"--grpc-addr=nonsense", "--max-conns-per-shard=0", "--log-level=loud"},
			WantErr: []string{"--shards", "--auth-tokens", "grpc-addr", "max-conns-per-shard", "log level"}},
		{Name: "one shard is refused without printing its DSN",
			Args:    []string{"--auth-tokens=t" + pw + "=ops:admin", "--shards=shard-0=u:" + pw + "@tcp(127.0.0.1:1)/a"},
			WantErr: []string{"at least two shards"}},
		{Name: "local profile applies the development stack",
			Args: []string{"--profile=local"}},
		{Name: "explicit settings",
			Args: []string{"--auth-tokens=" + auth.DevTokens, "--shards=a=u:p@tcp(h:1)/a,b=u:p@tcp(h:1)/b", "--max-conns-per-shard=3"}},
	}, nil, pw)
	t.Run("local profile values", func(t *testing.T) {
		configtest.ClearEnv(t)
		cfg, err := resultssvc.Load([]string{"--profile=local"})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Stores.Shards != config.DefaultShards || cfg.Server.AuthTokens != auth.DevTokens || cfg.MaxConnsPerShard != 64 {
			t.Errorf("local profile config = shards %q, tokens set %v, conns %d", cfg.Stores.Shards, cfg.Server.AuthTokens != "", cfg.MaxConnsPerShard)
		}
	})
}

func TestValidateNamesTheShardMap(t *testing.T) {
	cfg := resultssvc.Config{Server: server.Config{GRPCAddr: "127.0.0.1:0", ShutdownGrace: time.Second}, MaxConnsPerShard: 1}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "shards is required") {
		t.Errorf("Validate without shards = %v", err)
	}
}

// via returns dsn with its address replaced by addr.
func via(t *testing.T, dsn, addr string) string {
	t.Helper()
	c, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	c.Addr = addr
	c.Timeout = 500 * time.Millisecond
	return c.FormatDSN()
}

func health(hc healthpb.HealthClient, service string) healthpb.HealthCheckResponse_ServingStatus {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return healthpb.HealthCheckResponse_UNKNOWN
	}
	return resp.GetStatus()
}

func waitHealth(t *testing.T, hc healthpb.HealthClient, want map[string]healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := map[string]healthpb.HealthCheckResponse_ServingStatus{}
		ok := true
		for svc, st := range want {
			got[svc] = health(hc, svc)
			ok = ok && got[svc] == st
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("health = %v; want %v", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The server main builds serves the write path behind authentication, and
// its health follows the shards: one shard down shows on its own name only,
// every shard down takes the server NOT_SERVING, and it recovers by itself.
func TestServesAndHealthFollowsTheShards(t *testing.T) {
	var proxies []*infratest.Proxy
	var shards []string
	for _, id := range []string{"shard-0", "shard-1"} {
		db := infratest.NewMySQLDatabase(t, schema.Shard)
		p := infratest.NewProxy(t, mustAddr(t, db.DSN))
		proxies = append(proxies, p)
		shards = append(shards, id+"="+via(t, db.DSN, p.Addr()))
	}
	configtest.ClearEnv(t)
	cfg, err := resultssvc.Load([]string{"--grpc-addr=127.0.0.1:0", "--http-addr=127.0.0.1:0", "--shutdown-grace=1s",
		"--auth-tokens=" + auth.DevTokens, "--shards=" + strings.Join(shards, ",")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc, err := resultssvc.New(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if svc.GRPCAddr() == "" || svc.HTTPAddr() == "" {
		t.Fatalf("New returned before binding: grpc %q http %q", svc.GRPCAddr(), svc.HTTPAddr())
	}
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	conn, err := grpc.NewClient(svc.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	const (
		serving    = healthpb.HealthCheckResponse_SERVING
		notServing = healthpb.HealthCheckResponse_NOT_SERVING
	)
	waitHealth(t, hc, map[string]healthpb.HealthCheckResponse_ServingStatus{
		"": serving, "dependency/shard-0": serving, "dependency/shard-1": serving, "dependency/shards": serving})

	results := fitnessv1.NewResultServiceClient(conn)
	req := &fitnessv1.RecordResultRequest{RequestId: "svc-r", DataId: 700001, DetectId: 10001,
		UserId: 4, ProjectId: 3, SchoolId: 7, Grade: 5, Result: "2.21", Unit: "m"}
	if _, err := results.RecordResult(ctx, req); err == nil {
		t.Error("RecordResult without a token succeeded")
	}
	op := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer dev-operator")
	if _, err := results.RecordResult(op, req); err != nil {
		t.Fatalf("RecordResult = %v", err)
	}

	proxies[1].Down()
	waitHealth(t, hc, map[string]healthpb.HealthCheckResponse_ServingStatus{
		"": serving, "dependency/shard-0": serving, "dependency/shard-1": notServing})
	proxies[0].Down()
	waitHealth(t, hc, map[string]healthpb.HealthCheckResponse_ServingStatus{
		"": notServing, "dependency/shard-0": notServing, "dependency/shards": notServing})
	proxies[0].Up()
	proxies[1].Up()
	waitHealth(t, hc, map[string]healthpb.HealthCheckResponse_ServingStatus{
		"": serving, "dependency/shard-0": serving, "dependency/shard-1": serving, "dependency/shards": serving})

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after the context ended = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the context ended")
	}
}

func mustAddr(t *testing.T, dsn string) string {
	t.Helper()
	c, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return c.Addr
}
