package relaysvc_test

import (
	"context"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/outboxtest"
	"github.com/resultsync/resultsync/pkg/testkit/relaysvctest"
)

const (
	serving    = healthpb.HealthCheckResponse_SERVING
	notServing = healthpb.HealthCheckResponse_NOT_SERVING
)

func fill(t *testing.T, e *relaysvctest.Env, shard int, first int64, n int) {
	t.Helper()
	if _, err := outboxtest.Fill(context.Background(), e.Shards[shard].DB, relaysvctest.ShardID(shard), first, n); err != nil {
		t.Fatal(err)
	}
}

func waitSent(t *testing.T, e *relaysvctest.Env, shard, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := outboxtest.StatusCounts(context.Background(), e.Shards[shard].DB)
		if err != nil {
			t.Fatal(err)
		}
		if c[outbox.StatusSent] == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("shard-%d: %v, want %d SENT", shard, c, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// One shard going away shows on its own health name only: the relay stays
// SERVING and keeps relaying the other shard; when the shard returns, its
// health and its events follow by themselves. The shard is cut at a TCP
// proxy (the code path is the one production runs).
func TestOneShardDownIsPartial(t *testing.T) {
	e := relaysvctest.NewEnv(t, 2)
	client := infratest.NewPulsarClient(t)
	col := infratest.Collect(t, client, e.Topic)
	proxy := infratest.NewProxy(t, infratest.Env("RS_MYSQL_HOST", "127.0.0.1")+":"+infratest.Env("RS_MYSQL_PORT", "13306"))
	const probe = 300 * time.Millisecond
	cfg := e.Config(t, probe, func(i int) string {
		if i == 1 {
			return proxy.Addr()
		}
		return infratest.Env("RS_MYSQL_HOST", "127.0.0.1") + ":" + infratest.Env("RS_MYSQL_PORT", "13306")
	})
	fill(t, e, 0, 1_000_000, 100)
	fill(t, e, 1, 2_000_000, 100)
	r := relaysvctest.Start(t, cfg)
	r.WaitHealth(t, "", serving, 15*time.Second)
	waitSent(t, e, 0, 100)
	waitSent(t, e, 1, 100)

	proxy.Down()
	took := r.WaitHealth(t, server.DependencyHealthName("shard-1"), notServing, 10*probe+2*time.Second)
	t.Logf("dependency/shard-1 NOT_SERVING %s after the shard was cut (probe interval %s)", took, probe)
	fill(t, e, 0, 1_000_100, 50)
	waitSent(t, e, 0, 150)
	for _, svc := range []string{"", server.DependencyHealthName("shard-0"), server.DependencyHealthName("shards"), server.DependencyHealthName("pulsar")} {
		if got := r.Health(svc); got != serving {
			t.Errorf("health of %q = %v while only shard-1 is down, want SERVING", svc, got)
		}
	}

	proxy.Up()
	took = r.WaitHealth(t, server.DependencyHealthName("shard-1"), serving, 30*time.Second)
	t.Logf("dependency/shard-1 SERVING %s after the shard returned", took)
	fill(t, e, 1, 2_000_100, 50)
	waitSent(t, e, 1, 150)
	col.WaitDistinct(t, 300, 30*time.Second)

	took, err := r.Stop(t)
	if err != nil {
		t.Errorf("Run = %v after a clean stop", err)
	}
	if took > cfg.Server.ShutdownGrace {
		t.Errorf("stopping took %s, longer than the %s grace", took, cfg.Server.ShutdownGrace)
	}
}

// With the broker unreachable the relay starts, says so on its health —
// dependency/pulsar and the server NOT_SERVING, the shards SERVING — and its
// in-flight batches are marked FAILED, never lost; it stops within its grace
// although the client would wait its operation timeout for a producer.
func TestBrokerUnreachable(t *testing.T) {
	e := relaysvctest.NewEnv(t, 2)
	cfg := e.Config(t, 300*time.Millisecond, nil)
	cfg.PulsarURL = "pulsar://127.0.0.1:9"
	cfg.PulsarOperationTimeout = 30 * time.Second
	fill(t, e, 0, 1_000_000, 20)
	fill(t, e, 1, 2_000_000, 20)
	r := relaysvctest.Start(t, cfg)
	r.WaitHealth(t, server.DependencyHealthName("shards"), serving, 15*time.Second)
	r.WaitHealth(t, server.DependencyHealthName("pulsar"), notServing, 5*time.Second)
	if got := r.Health(""); got != notServing {
		t.Errorf("server health = %v with the broker unreachable, want NOT_SERVING", got)
	}
	// Wait until each shard's first batch has given up on the producer.
	deadline := time.Now().Add(20 * time.Second)
	for i := range 2 {
		for {
			c, err := outboxtest.StatusCounts(context.Background(), e.Shards[i].DB)
			if err != nil {
				t.Fatal(err)
			}
			if c[outbox.StatusFailed] > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("shard-%d: %v, want FAILED rows (publishes without a producer)", i, c)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	took, err := r.Stop(t)
	t.Logf("stopped %s after ctx ended, grace %s", took, cfg.Server.ShutdownGrace)
	if err != nil {
		t.Errorf("Run = %v", err)
	}
	if took > cfg.Server.ShutdownGrace {
		t.Errorf("stopping took %s, longer than the %s grace", took, cfg.Server.ShutdownGrace)
	}
	for i := range 2 {
		c, err := outboxtest.StatusCounts(context.Background(), e.Shards[i].DB)
		if err != nil {
			t.Fatal(err)
		}
		if c[outbox.StatusProcessing] != 0 || c[outbox.StatusSent] != 0 || c[outbox.StatusNew]+c[outbox.StatusFailed] != 20 {
			t.Errorf("shard-%d after stopping: %v, want all 20 NEW or FAILED (none held, none sent)", i, c)
		}
	}
}
