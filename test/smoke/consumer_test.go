package smoke

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"

	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/outboxtest"
)

const consumerGrace = 3 * time.Second

// consumerArgs are the consumer's flags for these tests: the local profile,
// loopback ports, a 3s grace, a 500ms probe interval and a topic of the
// test's own.
func consumerArgs(topic string, extra ...string) []string {
	return append([]string{"--profile=local", "--grpc-addr=127.0.0.1:0", "--http-addr=",
		"--shutdown-grace=" + consumerGrace.String(), "--probe-interval=500ms", "--retry-max=1s",
		"--topic=" + topic, "--dead-letter-topic=" + topic + "-DLQ"}, extra...)
}

// waitLog waits until the process logged a line containing want.
func waitLog(t *testing.T, p *proc, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, l := range allLogs(p) {
			if strings.Contains(l, want) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never logged %q\n%s", p.name, want, p.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// With the broker unreachable the consumer serves its API, reports
// dependency/pulsar and itself NOT_SERVING (ClickHouse, reachable, stays
// SERVING), and stops within its grace on SIGTERM although creating its
// subscription would wait the client's operation timeout.
func TestConsumerStopsWithinGraceWithTheBrokerUnreachable(t *testing.T) {
	p := startBinary(t, "consumer", consumerArgs(infratest.Topic(t, "smoke-consumer"),
		"--pulsar-url=pulsar://127.0.0.1:9", "--pulsar-operation-timeout=30s",
		"--clickhouse-database="+infratest.NewClickHouseDatabase(t, true).Name)...)
	addr := p.grpcAddr(t)
	waitHealth(t, "consumer", addr, "dependency/clickhouse", healthpb.HealthCheckResponse_SERVING)
	waitHealth(t, "consumer", addr, "dependency/pulsar", healthpb.HealthCheckResponse_NOT_SERVING)
	waitHealth(t, "consumer", addr, "", healthpb.HealthCheckResponse_NOT_SERVING)
	time.Sleep(time.Second) // inside the first creation, which waits up to 30s for the broker
	stopWithinGrace(t, p, consumerGrace)
}

// With ClickHouse unreachable (refusing connections, or accepting them and
// then answering nothing) the consumer subscribes, reports
// dependency/clickhouse and itself NOT_SERVING, keeps the batch it received
// unacknowledged while it retries the insert, and stops within its grace on
// SIGTERM.
func TestConsumerStopsWithinGraceWithClickHouseUnreachable(t *testing.T) {
	client := infratest.NewPulsarClient(t)
	for _, tc := range []struct {
		name string
		addr func(t *testing.T) string
	}{
		{"refused", func(*testing.T) string { return "127.0.0.1:9" }},
		{"hung", func(t *testing.T) string {
			px := infratest.NewProxy(t, infratest.ClickHouseAddr())
			px.Pause()
			return px.Addr()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := infratest.Topic(t, "smoke-consumer")
			p := startBinary(t, "consumer", consumerArgs(topic, "--clickhouse-addr="+tc.addr(t))...)
			addr := p.grpcAddr(t)
			waitHealth(t, "consumer", addr, "dependency/pulsar", healthpb.HealthCheckResponse_SERVING) // subscribed
			waitHealth(t, "consumer", addr, "dependency/clickhouse", healthpb.HealthCheckResponse_NOT_SERVING)
			waitHealth(t, "consumer", addr, "", healthpb.HealthCheckResponse_NOT_SERVING)
			publish(t, client, topic, 5)
			if tc.name == "refused" {
				waitLog(t, p, "batch not written; nothing acknowledged, retrying", 15*time.Second)
			} else {
				time.Sleep(time.Second) // the insert is waiting on the hung server
			}
			stopWithinGrace(t, p, consumerGrace)
		})
	}
}

// publish sends n valid events to topic.
func publish(t *testing.T, client pulsar.Client, topic string, n int) {
	t.Helper()
	prod, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range n {
		ev := outboxtest.Event("shard-0", int64(9_000_000+i), time.Now())
		b, err := proto.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Key: fmt.Sprint(ev.GetDataId()), Payload: b,
			Properties: map[string]string{"event_id": ev.GetEventId()}}); err != nil {
			t.Fatal(err)
		}
	}
}
