package consumersvc_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/service/consumersvc"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/configtest"
	"github.com/resultsync/resultsync/pkg/testkit/consumersvctest"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

const (
	serving    = healthpb.HealthCheckResponse_SERVING
	notServing = healthpb.HealthCheckResponse_NOT_SERVING
)

func TestLoad(t *testing.T) {
	configtest.Load(t, consumersvc.Load, []configtest.Case{
		{Name: "local profile", Args: []string{"--profile=local"}},
		{Name: "nothing set", WantErr: []string{"--pulsar-url", "--clickhouse-addr", "--auth-jwt-keys"}},
		{Name: "impossible values", Args: []string{"--profile=local", "--epoch=70000", "--probe-interval=1ms",
			"--pulsar-url=http://x", "--clickhouse-addr=nohost", "--batch-size=0"},
			WantErr: []string{"epoch must be 0-65535", "probe-interval", "pulsar-url", "clickhouse-addr", "batch size"}},
	}, func(t *testing.T, cfg consumersvc.Config) {
		if cfg.ProbeInterval != 2*time.Second || cfg.Subscription != "clickhouse-projection" {
			t.Errorf("defaults: probe %s, subscription %q", cfg.ProbeInterval, cfg.Subscription)
		}
	})
}

// env is a fresh projection database and topic, a producer of the topic,
// and proxies in front of the broker and ClickHouse.
type env struct {
	ch       *infratest.ClickHouseDatabase
	proj     *chstore.Projection
	topic    string
	producer pulsar.Producer
	pulsarPx *infratest.Proxy
	chPx     *infratest.Proxy
}

func newEnv(t *testing.T) *env { return newEnvMigrated(t, true) }

// newEnvMigrated is newEnv with a projection database that has the schema,
// or (migrated false) none yet.
func newEnvMigrated(t *testing.T, migrated bool) *env {
	t.Helper()
	if infratest.ClickHouseIsInProcess() {
		t.Skip("the consumer server reaches ClickHouse over the network; runs on the ClickHouse server pass")
	}
	ch := infratest.NewClickHouseDatabase(t, migrated)
	client := infratest.NewPulsarClient(t)
	e := &env{ch: ch, proj: chstore.NewProjection(ch.Conn), topic: infratest.Topic(t, "consumersvc"),
		pulsarPx: infratest.NewProxy(t, infratest.PulsarAddr()), chPx: infratest.NewProxy(t, infratest.ClickHouseAddr())}
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: e.topic})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	e.producer = p
	return e
}

// config reaches the broker and ClickHouse through the proxies.
func (e *env) config(probe time.Duration) consumersvc.Config {
	cfg := consumersvctest.Config(e.topic, e.ch.Name, probe)
	cfg.PulsarURL, cfg.Stores.CHAddr = "pulsar://"+e.pulsarPx.Addr(), e.chPx.Addr()
	return cfg
}

// send publishes version 1 of data ids first..first+n-1 and returns the
// current state they make.
func (e *env) send(t *testing.T, first int64, n int) []chstore.Current {
	t.Helper()
	var want []chstore.Current
	for id := first; id < first+int64(n); id++ {
		ev := &fitnessv1.FitnessResultChanged{EventId: canonical.EventID(id, 1), DataId: id, DetectId: 10001, UserId: 4,
			ProjectId: 3, SchoolId: 7, Grade: 5, Version: 1, Result: "2.31", Unit: "m", SchemaVersion: 1,
			SourceCommitTime: timestamppb.Now(), ShardId: "shard-0"}
		b, err := proto.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.producer.Send(context.Background(), &pulsar.ProducerMessage{Key: fmt.Sprint(id), Payload: b,
			Properties: map[string]string{"event_id": ev.GetEventId()}}); err != nil {
			t.Fatal(err)
		}
		want = append(want, chstore.Current{DataID: id, Version: 1, SchoolID: 7, ProjectID: 3, Grade: 5, Result: "2.31", Unit: "m"})
	}
	return want
}

// waitState waits until the campaign's current state is want, record by
// record.
func (e *env) waitState(t *testing.T, want []chstore.Current, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got, err := e.proj.CurrentState(context.Background(), 10001)
		if err == nil && cmp.Equal(want, got) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("current state after %s (-want +got):\n%s (err %v)", timeout, cmp.Diff(want, got), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ClickHouse and then the broker become unreachable under a running
// consumer server: each turns its dependency/<name> and the server
// NOT_SERVING within the probe interval (and its timeout), SERVING again
// when it returns, and every event sent meanwhile reaches ClickHouse.
func TestHealthFollowsClickHouseAndTheBroker(t *testing.T) {
	e := newEnv(t)
	const probe = 500 * time.Millisecond
	c := consumersvctest.Start(t, e.config(probe))
	c.WaitHealth(t, "", serving, 20*time.Second)
	want := e.send(t, 900000, 10)
	e.waitState(t, want, 30*time.Second)

	for _, dep := range []struct {
		name string
		px   *infratest.Proxy
	}{{"clickhouse", e.chPx}, {"pulsar", e.pulsarPx}} {
		other := "pulsar"
		if dep.name == "pulsar" {
			other = "clickhouse"
		}
		dep.px.Down()
		took := c.WaitHealth(t, server.DependencyHealthName(dep.name), notServing, 10*time.Second)
		t.Logf("%s down -> dependency/%s NOT_SERVING in %s", dep.name, dep.name, took.Round(time.Millisecond))
		if took > 2*probe+time.Second {
			t.Errorf("dependency/%s NOT_SERVING %s after the cut, want within %s", dep.name, took, 2*probe+time.Second)
		}
		if got := c.Health(""); got != notServing {
			t.Errorf("server health = %v with %s down", got, dep.name)
		}
		if got := c.Health(server.DependencyHealthName(other)); got != serving {
			t.Errorf("dependency/%s = %v while only %s is down", other, got, dep.name)
		}
		want = append(want, e.send(t, 900000+int64(len(want)), 10)...) // published directly, consumed after the return
		time.Sleep(2 * probe)
		if got := c.Health(""); got != notServing {
			t.Errorf("server health turned %v during the %s outage", got, dep.name)
		}
		dep.px.Up()
		took = c.WaitHealth(t, "", serving, 20*time.Second)
		t.Logf("%s back -> SERVING in %s", dep.name, took.Round(time.Millisecond))
		e.waitState(t, want, 30*time.Second)
	}
	if took, err := c.Stop(t); err != nil || took > 3*time.Second {
		t.Errorf("Run = %v after %s, want nil within the 3s grace", err, took)
	}
}

// ClickHouse hangs (connections open, nothing answered) while the consumer
// writes a batch: health turns NOT_SERVING, and Run still returns within
// the shutdown grace when the server is stopped.
func TestStopsWithinGraceWhileClickHouseHangs(t *testing.T) {
	e := newEnv(t)
	cfg := e.config(200 * time.Millisecond)
	c := consumersvctest.Start(t, cfg)
	c.WaitHealth(t, "", serving, 20*time.Second)
	e.waitState(t, e.send(t, 900000, 3), 30*time.Second) // connections to ClickHouse are open
	e.chPx.Pause()
	e.send(t, 900003, 3)
	c.WaitHealth(t, server.DependencyHealthName("clickhouse"), notServing, 10*time.Second)
	time.Sleep(time.Second) // the insert waits on the hung server
	took, err := c.Stop(t)
	t.Logf("stopped %s after ctx ended, ClickHouse hung", took.Round(time.Millisecond))
	if err != nil || took > cfg.Server.ShutdownGrace {
		t.Errorf("Run = %v after %s, want nil within the %s grace", err, took, cfg.Server.ShutdownGrace)
	}
}

// A ClickHouse that answers pings but refuses the consumer's inserts (here:
// the projection's tables do not exist yet) is no working dependency:
// dependency/clickhouse and the server are NOT_SERVING while the batch is
// retried, and SERVING once it is written (the tables created).
func TestClickHouseRefusingInsertsIsNotServing(t *testing.T) {
	e := newEnvMigrated(t, false)
	const probe = 200 * time.Millisecond
	c := consumersvctest.Start(t, e.config(probe))
	c.WaitHealth(t, "", serving, 20*time.Second) // pings pass, nothing written yet
	want := e.send(t, 900000, 3)
	c.WaitHealth(t, server.DependencyHealthName("clickhouse"), notServing, 10*time.Second)
	if got := c.Health(""); got != notServing {
		t.Errorf("server health = %v while every insert fails", got)
	}
	if _, err := schema.ApplyClickHouse(context.Background(), e.ch.Conn); err != nil {
		t.Fatal(err)
	}
	took := c.WaitHealth(t, "", serving, 20*time.Second)
	t.Logf("tables created -> SERVING in %s", took.Round(time.Millisecond))
	e.waitState(t, want, 10*time.Second)
}

// A retired transformation epoch is terminal: Run ends with
// consumer.ErrEpochRetired (the process exits non-zero) and health never
// says SERVING again.
func TestRetiredEpochEndsRun(t *testing.T) {
	e := newEnv(t)
	cfg := e.config(200 * time.Millisecond)
	cfg.Consumer.EpochCheck = 100 * time.Millisecond
	c := consumersvctest.Start(t, cfg)
	c.WaitHealth(t, "", serving, 20*time.Second)
	if err := e.proj.RaiseEpochFloor(context.Background(), chstore.EpochRetirement{Epoch: 1, Time: time.Now(), DetectID: 10001}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * cfg.Consumer.EpochCheck)
	e.send(t, 900000, 1)
	select {
	case <-c.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the consumer server kept running at a retired epoch")
	}
	if err := c.Err(); !errors.Is(err, consumer.ErrEpochRetired) || !strings.Contains(err.Error(), "worker consumer stopped") {
		t.Errorf("Run = %v, want the consumer worker's ErrEpochRetired", err)
	}
	if got := c.Health(""); got == serving {
		t.Error("health SERVING after the epoch was retired")
	}
	if st, err := e.proj.CurrentState(context.Background(), 10001); err != nil || len(st) != 0 {
		t.Errorf("state = %v, %v; want nothing written at the retired epoch", st, err)
	}
}

// --clickhouse-user and --clickhouse-password reach the server's ClickHouse
// connections: with an account that has a password the server is SERVING
// and writes; with a wrong password dependency/clickhouse and the server
// stay NOT_SERVING and nothing is written.
func TestClickHouseAccount(t *testing.T) {
	e := newEnv(t)
	user, password := infratest.ClickHouseAppAccount()
	const probe = 200 * time.Millisecond

	bad := e.config(probe)
	bad.Stores.CHAddr, bad.Stores.CHUser, bad.Stores.CHPassword = infratest.ClickHouseAddr(), user, "not-the-password"
	c := consumersvctest.Start(t, bad)
	c.WaitHealth(t, server.DependencyHealthName("clickhouse"), notServing, 10*time.Second)
	first := e.send(t, 900000, 3) // not acknowledged: delivered again to the next consumer
	time.Sleep(4 * probe)
	if got := c.Health(""); got != notServing {
		t.Errorf("server health = %v with a wrong ClickHouse password", got)
	}
	if got, err := e.proj.CurrentState(context.Background(), 10001); err != nil || len(got) != 0 {
		t.Errorf("written with a wrong password: %v, %v", got, err)
	}
	if _, err := c.Stop(t); err != nil {
		t.Errorf("stopping: %v", err)
	}

	good := e.config(probe)
	good.Stores.CHAddr, good.Stores.CHUser, good.Stores.CHPassword = infratest.ClickHouseAddr(), user, password
	c = consumersvctest.Start(t, good)
	c.WaitHealth(t, "", serving, 20*time.Second)
	e.waitState(t, append(first, e.send(t, 900003, 3)...), 30*time.Second)
}
