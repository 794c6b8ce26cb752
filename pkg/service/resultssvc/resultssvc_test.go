package resultssvc_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/config"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/service/resultssvc"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/configtest"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

func TestLoad(t *testing.T) {
	const pw = "Sup3rSecretPw"
	configtest.Load(t, resultssvc.Load, []configtest.Case{
		{Name: "production without settings names every missing one",
			Args: []string{"--grpc-addr=127.0.0.1:0"}, WantErr: []string{"--shards", "--auth-jwt-keys"}},
		{Name: "missing and invalid settings at once",
			Args:    []string{"--grpc-addr=nonsense", "--max-conns-per-shard=0", "--log-level=loud"},
			WantErr: []string{"--shards", "--auth-jwt-keys", "grpc-addr", "max-conns-per-shard", "log level"}},
		{Name: "one shard is refused without printing its DSN",
			Args:    []string{"--auth-tokens=t" + pw + "=ops:admin", "--shards=shard-0=u:" + pw + "@tcp(127.0.0.1:1)/a"},
			WantErr: []string{"at least two shards"}},
		{Name: "local profile applies the development stack",
			Args: []string{"--profile=local"}},
		{Name: "explicit settings",
			Args: []string{"--auth-jwt-keys=/etc/resultsync/jwks.json", "--auth-jwt-audience=resultsync", "--shards=a=u:p@tcp(h:1)/a,b=u:p@tcp(h:1)/b", "--max-conns-per-shard=3"}},
		{Name: "static tokens outside the local profile",
			Args:    []string{"--auth-tokens=" + auth.DevTokens, "--shards=a=u:p@tcp(h:1)/a,b=u:p@tcp(h:1)/b"},
			WantErr: []string{"--auth-tokens (env RS_AUTH_TOKENS)", "only with --profile=local", "--auth-jwt-keys"}},
		{Name: "JWT keys without an audience",
			Args:    []string{"--auth-jwt-keys=/etc/resultsync/jwks.json", "--auth-jwt-algorithms=ES256,HS256", "--shards=a=u:p@tcp(h:1)/a,b=u:p@tcp(h:1)/b"},
			WantErr: []string{"--auth-jwt-audience is required", `JWT algorithm "HS256"`}},
	}, nil, pw)
	t.Run("local profile values", func(t *testing.T) {
		configtest.ClearEnv(t)
		cfg, err := resultssvc.Load([]string{"--profile=local"})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Stores.Shards != config.DefaultShards || cfg.Server.Auth.Profile != config.ProfileLocal || cfg.MaxConnsPerShard != 64 {
			t.Errorf("local profile config = shards %q, auth profile %q, conns %d", cfg.Stores.Shards, cfg.Server.Auth.Profile, cfg.MaxConnsPerShard)
		}
	})
}

func TestValidateNamesTheShardMap(t *testing.T) {
	cfg := resultssvc.Config{Server: server.Config{GRPCAddr: "127.0.0.1:0", ShutdownGrace: time.Second}, MaxConnsPerShard: 1}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "shards is required") {
		t.Errorf("Validate without shards = %v", err)
	}
}

// The server main builds serves the write path behind authentication, and
// its health follows the shards: one shard down shows on its own name only,
// every shard down takes the server NOT_SERVING, and it recovers by itself.
func TestServesAndHealthFollowsTheShards(t *testing.T) {
	var proxies []*infratest.Proxy
	var shards []string
	for _, id := range []string{"shard-0", "shard-1"} {
		p, dsn := infratest.NewMySQLDatabase(t, schema.Shard).ProxiedDSN(t)
		proxies = append(proxies, p)
		shards = append(shards, id+"="+dsn)
	}
	configtest.ClearEnv(t)
	cfg, err := resultssvc.Load([]string{"--grpc-addr=127.0.0.1:0", "--http-addr=127.0.0.1:0", "--shutdown-grace=1s",
		"--profile=local", "--auth-tokens=" + auth.DevTokens, "--shards=" + strings.Join(shards, ",")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	svc, err := resultssvc.New(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if svc.GRPCAddr() == "" || svc.HTTPAddr() == "" {
		t.Fatalf("New returned before binding: grpc %q http %q", svc.GRPCAddr(), svc.HTTPAddr())
	}
	r := servertest.Start(t, svc)
	const (
		serving    = healthpb.HealthCheckResponse_SERVING
		notServing = healthpb.HealthCheckResponse_NOT_SERVING
	)
	waitHealth := func(want map[string]healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		r.WaitHealthAll(t, want, 20*time.Second)
	}
	waitHealth(map[string]healthpb.HealthCheckResponse_ServingStatus{
		"": serving, "dependency/shard-0": serving, "dependency/shard-1": serving, "dependency/shards": serving})

	results := fitnessv1.NewResultServiceClient(r.Conn())
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
	waitHealth(map[string]healthpb.HealthCheckResponse_ServingStatus{
		"": serving, "dependency/shard-0": serving, "dependency/shard-1": notServing})
	proxies[0].Down()
	waitHealth(map[string]healthpb.HealthCheckResponse_ServingStatus{
		"": notServing, "dependency/shard-0": notServing, "dependency/shards": notServing})
	proxies[0].Up()
	proxies[1].Up()
	waitHealth(map[string]healthpb.HealthCheckResponse_ServingStatus{
		"": serving, "dependency/shard-0": serving, "dependency/shard-1": serving, "dependency/shards": serving})

	if _, err := r.Stop(t); err != nil {
		t.Errorf("Run after the context ended = %v, want nil", err)
	}
}
