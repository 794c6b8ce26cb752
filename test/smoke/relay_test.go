package smoke

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/outboxtest"
)

const relayGrace = 3 * time.Second

// relayArgs are the relay's flags for these tests: the local profile, every
// setting that matters given explicitly, loopback ports, a 3s grace and a
// topic of the test's own.
func relayArgs(t *testing.T, shards string, extra ...string) []string {
	return append([]string{"--profile=local", "--grpc-addr=127.0.0.1:0", "--http-addr=",
		"--shutdown-grace=" + relayGrace.String(), "--probe-interval=500ms",
		"--shards=" + shards, "--topic=" + infratest.Topic(t, "smoke-relay")}, extra...)
}

// freshShard is a new migrated shard database holding n NEW outbox rows.
func freshShard(t *testing.T, id string, first int64, n int) *infratest.MySQLDatabase {
	t.Helper()
	d := infratest.NewMySQLDatabase(t, schema.Shard)
	if _, err := outboxtest.Fill(context.Background(), d.DB, id, first, n); err != nil {
		t.Fatal(err)
	}
	return d
}

func statusCounts(t *testing.T, d *infratest.MySQLDatabase) map[string]int {
	t.Helper()
	c, err := outboxtest.StatusCounts(context.Background(), d.DB)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func waitCounts(t *testing.T, d *infratest.MySQLDatabase, what string, cond func(map[string]int) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c := statusCounts(t, d)
		if cond(c) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox never reached %s: %v", what, c)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// allLogs is every line the process logged so far.
func allLogs(p *proc) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.logs...)
}

// stopWithinGrace sends SIGTERM and requires a clean exit (status 0, "server
// stopped") within the grace plus a little, reached by the server's own
// bounds, not by the supervisor giving up on a worker.
func stopWithinGrace(t *testing.T, p *proc, grace time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	p.stop(t)
	took := time.Since(start)
	t.Logf("%s exited %s after SIGTERM (shutdown grace %s)", p.name, took.Round(time.Millisecond), grace)
	if took > grace+2*time.Second {
		t.Errorf("%s took %s to exit after SIGTERM with a %s grace\n%s", p.name, took, grace, p.logTail())
	}
	for _, l := range allLogs(p) {
		if strings.Contains(l, "workers did not stop within the shutdown grace") {
			t.Errorf("a worker outlived the grace; the supervisor's backstop ended it\n%s", p.logTail())
		}
	}
	return took
}

// With the broker unreachable the relay serves its admin API, reports
// dependency/pulsar and itself NOT_SERVING, keeps its claimed rows safe
// (FAILED, retried later), and stops within its grace on SIGTERM although
// the Pulsar client would wait its operation timeout for a producer.
func TestRelayStopsWithinGraceWithTheBrokerUnreachable(t *testing.T) {
	s0, s1 := freshShard(t, "shard-0", 1_000_000, 50), freshShard(t, "shard-1", 2_000_000, 50)
	p := startBinary(t, "relay", relayArgs(t, "shard-0="+s0.DSN+",shard-1="+s1.DSN,
		"--pulsar-url=pulsar://127.0.0.1:9", "--pulsar-operation-timeout=30s")...)
	addr := p.grpcAddr(t)
	waitHealth(t, "relay", addr, "dependency/shards", healthpb.HealthCheckResponse_SERVING)
	waitHealth(t, "relay", addr, "dependency/pulsar", healthpb.HealthCheckResponse_NOT_SERVING)
	waitHealth(t, "relay", addr, "", healthpb.HealthCheckResponse_NOT_SERVING)
	// The relay is now inside a publish that waits for the producer: where
	// SIGTERM used to wait for the client's operation timeout.
	waitCounts(t, s0, "a claimed batch", func(c map[string]int) bool { return c[outbox.StatusNew] < 50 })
	stopWithinGrace(t, p, relayGrace)
	for i, d := range []*infratest.MySQLDatabase{s0, s1} {
		if c := statusCounts(t, d); c[outbox.StatusProcessing] != 0 || c[outbox.StatusSent] != 0 || c[outbox.StatusNew]+c[outbox.StatusFailed] != 50 {
			t.Errorf("shard-%d after the stop: %v, want all 50 rows NEW or FAILED", i, c)
		}
	}
}

// With one shard unreachable the relay stays SERVING (the shard's own
// health name says it is down), relays the other shard, and stops within
// its grace.
func TestRelayStopsWithinGraceWithAShardUnreachable(t *testing.T) {
	s0 := freshShard(t, "shard-0", 1_000_000, 50)
	dead := "resultsync:resultsync@tcp(127.0.0.1:1)/rs_shard_1?timeout=300ms"
	p := startBinary(t, "relay", relayArgs(t, "shard-0="+s0.DSN+",shard-1="+dead)...)
	addr := p.grpcAddr(t)
	waitHealth(t, "relay", addr, "dependency/shard-1", healthpb.HealthCheckResponse_NOT_SERVING)
	waitHealth(t, "relay", addr, "dependency/shard-0", healthpb.HealthCheckResponse_SERVING)
	waitHealth(t, "relay", addr, "dependency/pulsar", healthpb.HealthCheckResponse_SERVING)
	waitHealth(t, "relay", addr, "", healthpb.HealthCheckResponse_SERVING)
	waitCounts(t, s0, "all SENT", func(c map[string]int) bool { return c[outbox.StatusSent] == 50 })
	stopWithinGrace(t, p, relayGrace)
}

// A relay every shard refuses (wrong credentials) cannot do anything until
// an operator fixes its configuration: it exits non-zero by itself, with one
// log line naming the worker and the server's refusal.
func TestRelayExitsWhenEveryShardRefusesItsCredentials(t *testing.T) {
	hostPort := infratest.Env("RS_MYSQL_HOST", "127.0.0.1") + ":" + infratest.Env("RS_MYSQL_PORT", "13306")
	wrong := fmt.Sprintf("shard-0=nobody:wrong@tcp(%s)/rs_shard_0,shard-1=nobody:wrong@tcp(%s)/rs_shard_1", hostPort, hostPort)
	start := time.Now()
	p := startBinary(t, "relay", relayArgs(t, wrong)...)
	p.grpcAddr(t)
	select {
	case err := <-p.done:
		took := time.Since(start)
		t.Logf("relay exited by itself %s after start: %v", took.Round(time.Millisecond), err)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Errorf("relay exit = %v, want a non-zero status\n%s", err, p.logTail())
		}
		var line string
		for _, l := range allLogs(p) {
			if strings.Contains(l, `"worker relay stopped: `) && strings.Contains(l, `"msg":"worker stopped`) {
				line = l
			}
		}
		if line == "" {
			t.Fatalf("no log line says the relay worker stopped\n%s", p.logTail())
		}
		for _, want := range []string{`"worker":"relay"`, "every shard refuses the relay", "shard-0", "shard-1", "Access denied"} {
			if !strings.Contains(line, want) {
				t.Errorf("the stop line does not say %q:\n%s", want, line)
			}
		}
		for _, l := range allLogs(p) {
			if strings.Contains(l, "nobody:wrong") {
				t.Errorf("the log shows the shard DSN's password:\n%s", l)
			}
		}
	case <-time.After(45 * time.Second):
		t.Fatalf("relay still running 45s after start with every shard refusing it\n%s", p.logTail())
	}
}
