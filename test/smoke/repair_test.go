package smoke

import (
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// The repair server starts with ClickHouse, a shard or the broker unreachable (fresh
// databases of its own for the rest), reports that dependency NOT_SERVING
// while its executor and lag measurement keep trying, and stops within its
// grace on SIGTERM.
func TestRepairStopsWithinGraceWithADependencyUnreachable(t *testing.T) {
	const grace = 3 * time.Second
	control := infratest.NewMySQLDatabase(t, schema.Control)
	shard0, shard1 := infratest.NewMySQLDatabase(t, schema.Shard), infratest.NewMySQLDatabase(t, schema.Shard)
	live := "shard-0=" + shard0.DSN + ",shard-1=" + shard1.DSN
	for _, tc := range []struct {
		name, down string // down: the dependency's health name
		args       []string
	}{
		{"clickhouse", "dependency/clickhouse", []string{"--shards=" + live, "--clickhouse-addr=127.0.0.1:9"}},
		{"shard", "dependency/shard-1", []string{"--shards=shard-0=" + shard0.DSN +
			",shard-1=resultsync:resultsync@tcp(127.0.0.1:1)/rs_shard_1?timeout=300ms"}},
		// The broker its replays are published to (--replay-path=broker).
		{"pulsar", "dependency/pulsar", []string{"--shards=" + live, "--pulsar-url=pulsar://127.0.0.1:9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startBinary(t, "repair", append([]string{"--profile=local", "--grpc-addr=127.0.0.1:0", "--http-addr=",
				"--shutdown-grace=" + grace.String(), "--control-dsn=" + control.DSN, "--poll=100ms", "--lag-interval=200ms"}, tc.args...)...)
			addr := p.grpcAddr(t)
			waitHealth(t, "repair", addr, "dependency/control", healthpb.HealthCheckResponse_SERVING)
			waitHealth(t, "repair", addr, tc.down, healthpb.HealthCheckResponse_NOT_SERVING)
			time.Sleep(time.Second) // a few executor polls and lag measurements against the dead dependency
			stopWithinGrace(t, p, grace)
		})
	}
}
