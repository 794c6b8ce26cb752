package consumer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type fixture struct {
	ch       *infratest.ClickHouseDatabase
	proj     *chstore.Projection
	client   pulsar.Client
	topic    string
	producer pulsar.Producer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ch := infratest.NewClickHouseDatabase(t, true)
	client := infratest.NewPulsarClient(t)
	topic := infratest.Topic(t, "consumer")
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return &fixture{ch: ch, proj: chstore.NewProjection(ch.Conn), client: client, topic: topic, producer: p}
}

// instance is one running consumer.
type instance struct {
	c    *consumer.Consumer
	stop func() error
}

// start runs a consumer instance of the fixture's subscription, reaching the
// broker through client (the fixture's when nil) and writing through w (the
// fixture's projection when nil).
func (f *fixture) start(t *testing.T, client pulsar.Client, w consumer.Writer) *instance {
	t.Helper()
	cfg := consumer.DefaultConfig()
	cfg.BatchWait = 50 * time.Millisecond
	return f.startWith(t, client, w, cfg)
}

// startWith is start with the consumer configured by cfg (its retry waits
// shortened for the tests).
func (f *fixture) startWith(t *testing.T, client pulsar.Client, w consumer.Writer, cfg consumer.Config) *instance {
	t.Helper()
	if client == nil {
		client = f.client
	}
	if w == nil {
		w = f.proj
	}
	cons, err := consumer.Subscribe(client, f.topic, "projection")
	if err != nil {
		t.Fatal(err)
	}
	dlq, err := consumer.NewDLQ(f.client, f.topic+"-dlq", f.proj)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RetryBase = 50 * time.Millisecond
	cfg.RetryMax = 200 * time.Millisecond
	c, err := consumer.New(quiet, cfg, consumer.Deps{Sub: cons, Writer: w, DLQ: dlq})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			runErr = <-done
			cons.Close()
			dlq.Close()
		})
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return &instance{c: c, stop: stop}
}

func event(dataID, version int64, result string, deleted bool) *fitnessv1.FitnessResultChanged {
	return &fitnessv1.FitnessResultChanged{
		EventId: canonical.EventID(dataID, version), DataId: dataID, DetectId: 10001, UserId: 4, ProjectId: 3,
		SchoolId: 7, Grade: 5, Version: version, Result: result, Unit: "m", IsDeleted: deleted, SchemaVersion: 1,
		SourceCommitTime: timestamppb.Now(), ShardId: "shard-1",
	}
}

func (f *fixture) send(t *testing.T, evs ...*fitnessv1.FitnessResultChanged) {
	t.Helper()
	for _, ev := range evs {
		b, err := proto.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		f.sendRaw(t, fmt.Sprint(ev.GetDataId()), ev.GetEventId(), b)
	}
}

func (f *fixture) sendRaw(t *testing.T, key, eventID string, payload []byte) {
	t.Helper()
	if _, err := f.producer.Send(context.Background(), &pulsar.ProducerMessage{Key: key, Payload: payload,
		Properties: map[string]string{"event_id": eventID}}); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	infratest.WaitFor(t, what, timeout, cond)
}

func (i *instance) waitApplied(t *testing.T, n int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d applied events", n), 30*time.Second, func() bool { return i.c.Lag().Applied() >= n })
}

func (f *fixture) state(t *testing.T) []chstore.Current {
	t.Helper()
	s, err := f.proj.CurrentState(context.Background(), 10001)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *fixture) report(t *testing.T) []chstore.ProjectReport {
	t.Helper()
	r, err := f.proj.CampaignReport(context.Background(), 10001)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *fixture) physical(t *testing.T) uint64 {
	t.Helper()
	var n uint64
	if err := f.ch.Conn.QueryRow(context.Background(), "SELECT count() FROM fitness_result_versions").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func cur(dataID, version int64, result string) chstore.Current {
	return chstore.Current{DataID: dataID, Version: version, SchoolID: 7, ProjectID: 3, Grade: 5, Result: result, Unit: "m"}
}

func TestVersion2BeforeVersion1(t *testing.T) {
	f := newFixture(t)
	in := f.start(t, nil, nil)
	f.send(t, event(900001, 2, "2.31", false), event(900001, 1, "2.21", false))
	in.waitApplied(t, 2)
	if diff := cmp.Diff([]chstore.Current{cur(900001, 2, "2.31")}, f.state(t)); diff != "" {
		t.Errorf("current state (-want +got):\n%s", diff)
	}
}

func TestSameVersionFiveTimesCountsOnce(t *testing.T) {
	f := newFixture(t)
	in := f.start(t, nil, nil)
	for range 5 {
		f.send(t, event(900001, 1, "2.21", false))
	}
	f.send(t, event(900002, 1, "1.50", false))
	in.waitApplied(t, 6)
	// ClickHouse 18.16 stores all six rows until a merge; a current one
	// collapses equal keys inside one insert (optimize_on_insert). Either
	// way the current state and the report count the record once.
	if got := f.physical(t); got < 2 {
		t.Errorf("physical rows = %d, want at least one per record", got)
	}
	if diff := cmp.Diff([]chstore.Current{cur(900001, 1, "2.21"), cur(900002, 1, "1.5")}, f.state(t)); diff != "" {
		t.Errorf("current state (-want +got):\n%s", diff)
	}
	want := []chstore.ProjectReport{{ProjectID: 3, Unit: "m", Results: 2, Mean: "1.855", Min: "1.5", Max: "2.21"}}
	if diff := cmp.Diff(want, f.report(t)); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}

func TestTombstoneLeavesStateAndReports(t *testing.T) {
	f := newFixture(t)
	in := f.start(t, nil, nil)
	f.send(t, event(900001, 1, "2.21", false), event(900002, 1, "1.50", false), event(900001, 2, "2.21", true))
	in.waitApplied(t, 3)
	if diff := cmp.Diff([]chstore.Current{cur(900002, 1, "1.5")}, f.state(t)); diff != "" {
		t.Errorf("current state (-want +got):\n%s", diff)
	}
	want := []chstore.ProjectReport{{ProjectID: 3, Unit: "m", Results: 1, Mean: "1.5", Min: "1.5", Max: "1.5"}}
	if diff := cmp.Diff(want, f.report(t)); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}

// Failure point: ClickHouse acknowledged the batch's insert, the consumer
// acknowledged its messages, and the acknowledgments never reached the
// broker (the consumer's connection failed, as when it crashes right after
// the insert). The consumer reaches the broker through a TCP proxy that
// holds what the consumer sends once it has subscribed, and is cut once the
// rows are in ClickHouse; a second instance, connected directly, gets the
// batch again. The redelivery leaves the current state and the report
// unchanged, record by record.
func TestAckLostAfterInsertRedeliveryChangesNothing(t *testing.T) {
	f := newFixture(t)
	px := infratest.NewProxy(t, infratest.PulsarAddr())
	proxied, err := pulsarbus.NewClient(quiet, pulsarbus.Options{URL: "pulsar://" + px.Addr(), OperationTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer proxied.Close()
	first := f.start(t, proxied, nil)
	// The subscription gave the broker its permits: messages flow to the
	// consumer; nothing the consumer sends from now on reaches the broker.
	waitFor(t, "the consumer's permits at the broker", 10*time.Second, func() bool { return subStats(t, f.topic, "projection").permits > 0 })
	px.HoldToServer()

	evs := []*fitnessv1.FitnessResultChanged{event(900001, 1, "2.21", false), event(900001, 2, "2.31", false), event(900002, 1, "1.50", false)}
	f.send(t, evs...)
	want := []chstore.Current{cur(900001, 2, "2.31"), cur(900002, 1, "1.5")}
	// Applied counts a batch once its messages are acknowledged.
	first.waitApplied(t, int64(len(evs)))
	if diff := cmp.Diff(want, f.state(t)); diff != "" {
		t.Fatalf("state after the first instance's insert (-want +got):\n%s", diff)
	}
	// Longer than the client's acknowledgment grouping (100ms): had they
	// not been held, the acknowledgments would have reached the broker.
	time.Sleep(500 * time.Millisecond)
	// The instance stops while the proxy still holds what it sends (its
	// close request waits out the client's 3 s operation timeout), then the
	// held acknowledgments are lost with the connection. Cutting the
	// connection first would let the client handle the connection loss while
	// the consumer closes: pulsar-client-go v0.19.0 races there (a data race
	// between its connection goroutine and the closing consumer's event loop,
	// seen once under -race in CI), a defect of the library, not of the
	// failure point this test reproduces.
	if err := first.stop(); err != nil {
		t.Fatalf("first instance: %v", err)
	}
	px.Down() // the held acknowledgments are lost with the connection
	if got := subStats(t, f.topic, "projection").backlog; got != int64(len(evs)) {
		t.Fatalf("backlog after the lost acknowledgments = %d, want %d (none reached the broker)", got, len(evs))
	}
	state, report := f.state(t), f.report(t)

	second := f.start(t, nil, nil)
	// The second instance applies (inserts) all three again: the batch was
	// redelivered because its acknowledgments never arrived.
	second.waitApplied(t, int64(len(evs)))
	if diff := cmp.Diff(state, f.state(t)); diff != "" {
		t.Errorf("state changed by the redelivery (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(report, f.report(t)); diff != "" {
		t.Errorf("report changed by the redelivery (-before +after):\n%s", diff)
	}
	waitFor(t, "an empty backlog", 10*time.Second, func() bool { return backlog(t, f.topic, "projection") == 0 })
}

// recorder is a Writer that records the size of every insert it passes on.
type recorder struct {
	w       consumer.Writer
	payload map[int64]int // payload bytes by data_id
	mu      sync.Mutex
	inserts [][2]int // rows, payload bytes
}

func (r *recorder) Insert(ctx context.Context, rows []chstore.Row) error {
	if err := r.w.Insert(ctx, rows); err != nil {
		return err
	}
	n := 0
	for _, row := range rows {
		n += r.payload[row.DataID]
	}
	r.mu.Lock()
	r.inserts = append(r.inserts, [2]int{len(rows), n})
	r.mu.Unlock()
	return nil
}

// Batches are bounded by count and by payload bytes: no insert holds more
// than BatchSize events or more than BatchBytes of their payload, and every
// event is written.
func TestBatchesBoundedByCountAndBytes(t *testing.T) {
	const n = 12
	evs := make([]*fitnessv1.FitnessResultChanged, n)
	payload := map[int64]int{}
	lo, hi := 1<<30, 0
	for i := range evs {
		evs[i] = event(900000+int64(i), 1, "2.00", false)
		b, err := proto.Marshal(evs[i])
		if err != nil {
			t.Fatal(err)
		}
		payload[evs[i].GetDataId()] = len(b)
		lo, hi = min(lo, len(b)), max(hi, len(b))
	}
	if 2*hi >= 3*lo {
		t.Fatalf("payload sizes %d-%d too uneven for the test", lo, hi)
	}
	tests := []struct {
		name             string
		size, bytes      int
		maxRows, maxSize int
	}{
		{name: "count", size: 3, bytes: 1 << 20, maxRows: 3, maxSize: 1 << 20},
		{name: "bytes", size: 1000, bytes: 2 * hi, maxRows: 2, maxSize: 2 * hi}, // three never fit
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			rec := &recorder{w: f.proj, payload: payload}
			cfg := consumer.DefaultConfig()
			cfg.BatchSize, cfg.BatchBytes, cfg.BatchWait = tc.size, tc.bytes, 2*time.Second // cut by count or bytes, not time
			in := f.startWith(t, nil, rec, cfg)
			f.send(t, evs...)
			in.waitApplied(t, n)
			rec.mu.Lock()
			defer rec.mu.Unlock()
			t.Logf("inserts (rows, payload bytes): %v", rec.inserts)
			total := 0
			for _, ins := range rec.inserts {
				total += ins[0]
				if ins[0] > tc.maxRows || ins[1] > tc.maxSize {
					t.Errorf("an insert of %d rows, %d payload bytes; want at most %d rows, %d bytes (inserts: %v)",
						ins[0], ins[1], tc.maxRows, tc.maxSize, rec.inserts)
				}
			}
			if total != n {
				t.Errorf("rows inserted = %d, want %d", total, n)
			}
			if got := len(f.state(t)); got != n {
				t.Errorf("records = %d, want %d", got, n)
			}
		})
	}
}

// subscription is what the broker's admin API says of a subscription.
type subscription struct {
	backlog int64 // messages not acknowledged
	permits int64 // messages its consumers asked for and were not sent yet
}

func subStats(t *testing.T, topic, sub string) subscription {
	t.Helper()
	path := strings.TrimPrefix(topic, "persistent://")
	resp, err := http.Get(infratest.PulsarAdminURL() + "/admin/v2/persistent/" + path + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Subscriptions map[string]struct {
			MsgBacklog int64 `json:"msgBacklog"`
			Consumers  []struct {
				AvailablePermits int64 `json:"availablePermits"`
			} `json:"consumers"`
		} `json:"subscriptions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	s := subscription{backlog: st.Subscriptions[sub].MsgBacklog}
	for _, c := range st.Subscriptions[sub].Consumers {
		s.permits += c.AvailablePermits
	}
	return s
}

// backlog reads the subscription's unacknowledged message count from the
// broker's admin API.
func backlog(t *testing.T, topic, sub string) int64 {
	t.Helper()
	return subStats(t, topic, sub).backlog
}

// Failure point: ClickHouse is down for a while. Nothing is acknowledged
// while it is down, nothing is lost, and the projection catches up.
func TestClickHouseDown(t *testing.T) {
	if infratest.ClickHouseIsInProcess() {
		t.Skip("needs a ClickHouse reached over the network (the outage is a TCP proxy); runs on the 18.16 server pass")
	}
	f := newFixture(t)
	proxy := infratest.NewProxy(t, infratest.ClickHouseAddr())
	conn, err := chstore.Open(context.Background(), chstore.Options{Addr: proxy.Addr(), Database: f.ch.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	in := f.start(t, nil, chstore.NewProjection(conn))

	proxy.Down()
	const n = 20
	for i := range int64(n) {
		f.send(t, event(900000+i, 1, "2.00", false))
	}
	time.Sleep(1500 * time.Millisecond)
	if got := in.c.Lag().Applied(); got != 0 {
		t.Fatalf("%d events applied while ClickHouse was down", got)
	}
	if got := backlog(t, f.topic, "projection"); got != n {
		t.Errorf("subscription backlog while ClickHouse is down = %d, want %d (nothing acknowledged)", got, n)
	}
	proxy.Up()
	in.waitApplied(t, n)
	if got := len(f.state(t)); got != n {
		t.Errorf("records after catching up = %d, want %d", got, n)
	}
	waitFor(t, "an empty backlog", 10*time.Second, func() bool { return backlog(t, f.topic, "projection") == 0 })
}

// A malformed event and an event of an unknown schema version go to the
// dead-letter topic while the events behind them are applied.
func TestDeadLetters(t *testing.T) {
	f := newFixture(t)
	dlqCol := infratest.Collect(t, f.client, f.topic+"-dlq")
	in := f.start(t, nil, nil)
	f.sendRaw(t, "1", "garbage", []byte("\xff\xffnot a protobuf"))
	v2 := event(900005, 1, "2.21", false)
	v2.SchemaVersion = 2
	bad := event(900006, 1, "NaN", false)
	f.send(t, v2, bad, event(900007, 1, "2.31", false))
	in.waitApplied(t, 1)
	waitFor(t, "3 dead letters", 10*time.Second, func() bool { return in.c.Lag().DeadLettered() >= 3 })
	if diff := cmp.Diff([]chstore.Current{cur(900007, 1, "2.31")}, f.state(t)); diff != "" {
		t.Errorf("current state (-want +got):\n%s", diff)
	}
	dlqCol.WaitDistinct(t, 3, 10*time.Second)
	dl, err := f.proj.DeadLetters(context.Background(), 0, 10)
	if err != nil || len(dl) != 3 {
		t.Fatalf("dead letters listed = %v, %v", dl, err)
	}
	reasons := ""
	for _, d := range dl {
		reasons += d.Reason + "\n"
	}
	for _, want := range []string{"malformed payload", "unknown schema version 2", "result"} {
		if !strings.Contains(reasons, want) {
			t.Errorf("dead-letter reasons lack %q:\n%s", want, reasons)
		}
	}
}
