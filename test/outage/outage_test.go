// Package outage stops real servers of the local stack under running relay
// and consumer servers and checks that their health tells the truth and
// that nothing is lost.
//
// These tests stop the shared Pulsar broker, so they never run in the
// normal parallel `go test ./...` pass: they are skipped unless
// RS_OUTAGE_TESTS=1, and `make test-outage` runs them on their own
// (`go test -p 1`). Under RS_OUTAGE_TESTS=1 a missing broker is a failure,
// and the broker is always started again when a test ends, pass or fail.
package outage

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/testkit/consumersvctest"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/outboxtest"
	"github.com/resultsync/resultsync/pkg/testkit/relaysvctest"
)

const (
	serving    = healthpb.HealthCheckResponse_SERVING
	notServing = healthpb.HealthCheckResponse_NOT_SERVING
)

// requireOutageTests skips unless RS_OUTAGE_TESTS=1, and then requires the
// broker to be up.
func requireOutageTests(t *testing.T) {
	t.Helper()
	if os.Getenv("RS_OUTAGE_TESTS") != "1" {
		t.Skip("stops the shared Pulsar broker: runs only alone, with RS_OUTAGE_TESTS=1 (make test-outage)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, infratest.PulsarAdminURL()+"/admin/v2/brokers/health", nil)
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("broker health answered %s", resp.Status)
		}
	}
	if err != nil {
		t.Fatalf("RS_OUTAGE_TESTS=1 needs the local Pulsar broker (deploy/local/pulsar.sh start): %v\n%s", err, infratest.LogTail("pulsar.log", 30))
	}
}

// runPulsarScript runs deploy/local/pulsar.sh with cmd.
func runPulsarScript(cmd string) (time.Duration, error) {
	script, err := filepath.Abs("../../deploy/local/pulsar.sh")
	if err != nil {
		return 0, err
	}
	start := time.Now()
	out, err := exec.Command(script, cmd).CombinedOutput()
	if err != nil {
		return time.Since(start), fmt.Errorf("pulsar.sh %s: %w\n%s", cmd, err, out)
	}
	return time.Since(start), nil
}

// pulsarScript runs deploy/local/pulsar.sh with cmd, or fails the test.
func pulsarScript(t *testing.T, cmd string) {
	t.Helper()
	took, err := runPulsarScript(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pulsar.sh %s took %s", cmd, took.Round(time.Millisecond))
}

// watchBroker polls the broker's port every 10ms from now on and returns a
// function giving the first time it refused a connection (zero while it
// never did). The health transition is measured from that moment, not from
// the stop script's start or end (the broker's graceful stop takes seconds).
func watchBroker(t *testing.T) func() time.Time {
	t.Helper()
	addr := "127.0.0.1:" + infratest.Env("RS_PULSAR_PORT", "16650")
	var mu sync.Mutex
	var refused time.Time
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
			if err == nil {
				c.Close()
				continue
			}
			mu.Lock()
			refused = time.Now()
			mu.Unlock()
			return
		}
	}()
	t.Cleanup(func() { close(stop) })
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return refused
	}
}

// writer commits outbox rows to every shard, round robin, until stopped,
// counting them: the write path does not need the broker.
type writer struct {
	env     *relaysvctest.Env
	mu      sync.Mutex
	ids     map[string]bool
	dataIDs map[int64]string // data id -> its shard
	perShrd []int
	errs    []error
	total   atomic.Int64
	stop    chan struct{}
	done    chan struct{}
}

func startWriter(env *relaysvctest.Env) *writer {
	w := &writer{env: env, ids: map[string]bool{}, dataIDs: map[int64]string{}, perShrd: make([]int, len(env.Shards)),
		stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		next := make([]int64, len(env.Shards))
		for i := range next {
			next[i] = int64(i+1) * 10_000_000
		}
		for round := 0; ; round++ {
			select {
			case <-w.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			i := round % len(env.Shards)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			ids, err := outboxtest.Fill(ctx, env.Shards[i].DB, relaysvctest.ShardID(i), next[i], 5)
			cancel()
			w.mu.Lock()
			if err != nil {
				w.errs = append(w.errs, err)
			} else {
				for k := range int64(len(ids)) {
					w.dataIDs[next[i]+k] = relaysvctest.ShardID(i)
				}
				next[i] += int64(len(ids))
				w.perShrd[i] += len(ids)
				for _, id := range ids {
					w.ids[id] = true
				}
				w.total.Add(int64(len(ids)))
			}
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *writer) finish(t *testing.T) {
	t.Helper()
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, err := range w.errs {
		t.Errorf("a write to the outbox failed: %v", err)
	}
}

// counts sums the outbox statuses of every shard.
func counts(t *testing.T, env *relaysvctest.Env) (sum map[string]int, per []map[string]int) {
	t.Helper()
	sum = map[string]int{}
	for _, d := range env.Shards {
		c, err := outboxtest.StatusCounts(context.Background(), d.DB)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range c {
			sum[k] += v
		}
		per = append(per, c)
	}
	return sum, per
}

// The broker stops under two running relays and a consumer server while
// writes keep committing: the health of the relay and of the consumer turns
// NOT_SERVING (the server and dependency/pulsar) within the probe interval,
// and a relay stopped meanwhile stops within its grace; when the broker is
// back, health turns SERVING by itself and every outbox row ends SENT, each
// event on the topic and each record in ClickHouse, nothing lost.
func TestBrokerOutage(t *testing.T) {
	requireOutageTests(t)
	if infratest.ClickHouseIsInProcess() {
		t.Skip("the consumer server reaches ClickHouse over the network: runs with the ClickHouse server")
	}
	const probe = time.Second
	env := relaysvctest.NewEnv(t, 2)
	cfg := env.Config(t, probe, nil)

	// A durable subscription made before anything is published keeps every
	// event on the topic for the final count.
	client := infratest.NewPulsarClient(t)
	audit, err := client.Subscribe(pulsar.ConsumerOptions{Topic: env.Topic, SubscriptionName: "outage-audit",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	audit.Close()
	client.Close()

	// Two instances share the shards; the second is stopped during the
	// outage, with its producer reconnecting and batches in flight.
	r := relaysvctest.Start(t, cfg)
	r2 := relaysvctest.Start(t, cfg)
	t.Logf("relay SERVING %s after start", r.WaitHealth(t, "", serving, 20*time.Second).Round(time.Millisecond))
	r2.WaitHealth(t, "", serving, 20*time.Second)
	// The consumer server writes the topic into a projection of its own.
	ch := infratest.NewClickHouseDatabase(t, true)
	c := consumersvctest.Start(t, consumersvctest.Config(env.Topic, ch.Name, probe))
	t.Logf("consumer SERVING %s after start", c.WaitHealth(t, "", serving, 20*time.Second).Round(time.Millisecond))
	w := startWriter(env)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, _ := counts(t, env); c[outbox.StatusSent] >= 50 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing was relayed before the outage")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The outage. The broker is started again whatever happens next.
	t.Cleanup(func() { pulsarScript(t, "start") })
	refusedAt := watchBroker(t)
	stopBegan := time.Now()
	var notServingAt, consumerNotServingAt time.Time
	scriptDone := make(chan error, 1)
	go func() {
		_, err := runPulsarScript("stop")
		scriptDone <- err
	}()
	// Health is watched while the broker shuts down.
	deadline = time.Now().Add(2 * time.Minute)
	for notServingAt.IsZero() || consumerNotServingAt.IsZero() {
		if notServingAt.IsZero() && r.Health(server.DependencyHealthName("pulsar")) == notServing && r.Health("") == notServing {
			notServingAt = time.Now()
		}
		if consumerNotServingAt.IsZero() && c.Health(server.DependencyHealthName("pulsar")) == notServing && c.Health("") == notServing {
			consumerNotServingAt = time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatal("health never turned NOT_SERVING after the broker was stopped")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := <-scriptDone; err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	if refusedAt().IsZero() {
		t.Fatal("the broker's port still accepts connections after pulsar.sh stop")
	}
	downAfter := notServingAt.Sub(refusedAt())
	t.Logf("TRANSITION broker stop -> NOT_SERVING: %s after the broker's port first refused a connection "+
		"(%s after pulsar.sh stop began, which took %s; probe interval %s)",
		downAfter.Round(time.Millisecond), notServingAt.Sub(stopBegan).Round(time.Millisecond),
		stopped.Sub(stopBegan).Round(time.Millisecond), probe)
	if downAfter > 2*probe+time.Second {
		t.Errorf("NOT_SERVING %s after the broker went away; want within the probe interval and its timeout (%s) plus 1s", downAfter, 2*probe)
	}
	consumerDownAfter := consumerNotServingAt.Sub(refusedAt())
	t.Logf("TRANSITION broker stop -> consumer NOT_SERVING: %s after the broker's port first refused a connection (probe interval %s)",
		consumerDownAfter.Round(time.Millisecond), probe)
	if consumerDownAfter > 2*probe+time.Second {
		t.Errorf("consumer NOT_SERVING %s after the broker went away; want within the probe interval and its timeout (%s) plus 1s", consumerDownAfter, 2*probe)
	}
	if got := c.Health(server.DependencyHealthName("clickhouse")); got != serving {
		t.Errorf("consumer dependency/clickhouse = %v while only the broker is down", got)
	}
	for _, svc := range []string{server.DependencyHealthName("shard-0"), server.DependencyHealthName("shard-1"), server.DependencyHealthName("shards")} {
		if got := r.Health(svc); got != serving {
			t.Errorf("%s = %v while only the broker is down", svc, got)
		}
	}

	// Writes keep committing; nothing is sent; health stays down.
	before := w.total.Load()
	sentBefore, _ := counts(t, env)
	for range 10 {
		time.Sleep(500 * time.Millisecond)
		if got := r.Health(""); got != notServing {
			t.Errorf("health turned %v during the outage", got)
		}
		if got := c.Health(""); got != notServing {
			t.Errorf("consumer health turned %v during the outage", got)
		}
	}
	during := w.total.Load() - before
	sentDuring, _ := counts(t, env)
	t.Logf("during the outage (%s): %d rows committed to the outboxes, SENT %d -> %d",
		time.Since(stopped).Round(time.Millisecond), during, sentBefore[outbox.StatusSent], sentDuring[outbox.StatusSent])
	if during == 0 {
		t.Error("no write committed to the outboxes while the broker was down")
	}
	if sentDuring[outbox.StatusSent] != sentBefore[outbox.StatusSent] {
		t.Errorf("rows turned SENT while the broker was down: %d -> %d", sentBefore[outbox.StatusSent], sentDuring[outbox.StatusSent])
	}
	took, err := r2.Stop(t)
	t.Logf("TRANSITION stop during the outage -> second relay stopped: %s (grace %s)", took.Round(time.Millisecond), cfg.Server.ShutdownGrace)
	if err != nil {
		t.Errorf("the second relay's Run = %v, want nil", err)
	}
	if took > cfg.Server.ShutdownGrace {
		t.Errorf("the second relay took %s to stop during the outage, longer than its %s grace", took, cfg.Server.ShutdownGrace)
	}

	// The broker returns.
	pulsarScript(t, "start")
	back := time.Now()
	t.Logf("outage lasted %s (pulsar.sh stop began -> pulsar.sh start returned)", back.Sub(stopBegan).Round(time.Millisecond))
	upAfter := r.WaitHealth(t, "", serving, 60*time.Second)
	r.WaitHealth(t, server.DependencyHealthName("pulsar"), serving, probe)
	t.Logf("TRANSITION broker ready -> SERVING: %s after pulsar.sh start returned", upAfter.Round(time.Millisecond))
	if limit := cfg.Relay.PublishTimeout + 4*probe + 2*time.Second; upAfter > limit {
		t.Errorf("SERVING %s after the broker was ready, want within %s", upAfter, limit)
	}
	c.WaitHealth(t, "", serving, 60*time.Second)
	t.Logf("TRANSITION broker ready -> consumer SERVING: at most %s after pulsar.sh start returned", time.Since(back).Round(time.Millisecond))
	c.WaitHealth(t, server.DependencyHealthName("pulsar"), serving, probe)
	time.Sleep(time.Second) // a few more writes after the recovery
	w.finish(t)
	written := int(w.total.Load())

	// Every row ends SENT.
	deadline = time.Now().Add(2 * time.Minute)
	for {
		sum, per := counts(t, env)
		if sum[outbox.StatusSent] == written {
			t.Logf("TRANSITION broker ready -> every row SENT: %s (%d rows: shard-0 %d, shard-1 %d)",
				time.Since(back).Round(time.Millisecond), written, per[0][outbox.StatusSent], per[1][outbox.StatusSent])
			break
		}
		if sum[outbox.StatusParked] > 0 {
			t.Fatalf("rows PARKED during the outage: %v", sum)
		}
		if time.Now().After(deadline) {
			t.Fatalf("outboxes %v, want all %d rows SENT", per, written)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i, c := range func() []map[string]int { _, per := counts(t, env); return per }() {
		if c[outbox.StatusSent] != w.perShrd[i] || len(c) != 1 {
			t.Errorf("shard-%d: %v, want exactly the %d rows written, all SENT", i, c, w.perShrd[i])
		}
	}

	// Every event is on the topic (duplicates allowed, none missing).
	got := drain(t, env.Topic, w.ids)
	missing := 0
	for id := range w.ids {
		if !got[id] {
			missing++
		}
	}
	t.Logf("topic holds %d distinct events of the %d written", len(got), len(w.ids))
	if missing > 0 {
		t.Errorf("%d events never reached the topic", missing)
	}

	// Every event is in ClickHouse: each record at version 1 with its
	// content, none missing, none more.
	want := make([]chstore.Current, 0, len(w.dataIDs))
	for id, sh := range w.dataIDs {
		ev := outboxtest.Event(sh, id, time.Now())
		result, err := canonical.Decimal(ev.GetResult())
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, chstore.Current{DataID: id, Version: 1, SchoolID: ev.GetSchoolId(), ProjectID: ev.GetProjectId(),
			Grade: int16(ev.GetGrade()), Result: result, Unit: ev.GetUnit()})
	}
	sort.Slice(want, func(i, j int) bool { return want[i].DataID < want[j].DataID })
	proj := chstore.NewProjection(ch.Conn)
	var state []chstore.Current
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if state, err = proj.CurrentState(context.Background(), 10001); err != nil {
			t.Fatal(err)
		}
		if cmp.Equal(want, state) || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("TRANSITION broker ready -> every record in ClickHouse: %s (%d records, %d applied events)",
		time.Since(back).Round(time.Millisecond), len(state), c.Svc.Lag().Applied())
	if diff := cmp.Diff(want, state); diff != "" {
		t.Errorf("ClickHouse after the outage (-want +got):\n%s", diff)
	}
	took, err = c.Stop(t)
	t.Logf("consumer stopped %s after ctx ended", took.Round(time.Millisecond))
	if err != nil {
		t.Errorf("consumer Run = %v after the outage, want nil", err)
	}

	took, err = r.Stop(t)
	t.Logf("relay stopped %s after ctx ended", took.Round(time.Millisecond))
	if err != nil {
		t.Errorf("Run = %v after the outage, want nil", err)
	}
}

// drain reads the audit subscription until every wanted event arrived or
// nothing new comes for a while, and returns the distinct event ids seen.
func drain(t *testing.T, topic string, want map[string]bool) map[string]bool {
	t.Helper()
	client := infratest.NewPulsarClient(t)
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "outage-audit",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest, ReceiverQueueSize: 2000})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]bool{}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		msg, err := cons.Receive(ctx)
		cancel()
		if err != nil {
			return seen // nothing more within 15s
		}
		if id := msg.Properties()["event_id"]; want[id] {
			seen[id] = true
		}
		_ = cons.Ack(msg)
		if len(seen) == len(want) {
			return seen
		}
	}
}
