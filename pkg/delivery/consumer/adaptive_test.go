package consumer_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
)

// gate is a Writer that records every insert (rows, start time) and holds
// the first one until released.
type gate struct {
	w        consumer.Writer
	entered  chan struct{} // closed when the first insert starts
	release  chan struct{} // the first insert proceeds once closed
	mu       sync.Mutex
	inserts  []int       // rows per insert
	starts   []time.Time // when each insert started
	holdOnce sync.Once
}

func newGate(w consumer.Writer, hold bool) *gate {
	g := &gate{w: w, entered: make(chan struct{}), release: make(chan struct{})}
	if !hold {
		close(g.release)
	}
	return g
}

func (g *gate) Insert(ctx context.Context, rows []chstore.Row) error {
	g.mu.Lock()
	g.starts = append(g.starts, time.Now())
	g.mu.Unlock()
	g.holdOnce.Do(func() {
		close(g.entered)
		select {
		case <-g.release:
		case <-ctx.Done():
		}
	})
	if err := g.w.Insert(ctx, rows); err != nil {
		return err
	}
	g.mu.Lock()
	g.inserts = append(g.inserts, len(rows))
	g.mu.Unlock()
	return nil
}

func (g *gate) snapshot() ([]int, []time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.inserts...), append([]time.Time(nil), g.starts...)
}

// metered starts a consumer instance with its metrics in reg.
func (f *fixture) metered(t *testing.T, w consumer.Writer, cfg consumer.Config, reg *prometheus.Registry) *instance {
	t.Helper()
	cons, err := consumer.Subscribe(f.client, f.topic, "projection")
	if err != nil {
		t.Fatal(err)
	}
	dlq, err := consumer.NewDLQ(f.client, f.topic+"-dlq", f.proj)
	if err != nil {
		t.Fatal(err)
	}
	c, err := consumer.New(quiet, cfg, consumer.Deps{Sub: cons, Writer: w, DLQ: dlq, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop := func() error {
		var err error
		once.Do(func() {
			cancel()
			err = <-done
			cons.Close()
			dlq.Close()
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return &instance{c: c, stop: stop}
}

// counter reads a counter of reg (with the label value, when the family has
// one).
func counter(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range fams {
		if fam.GetName() != name {
			continue
		}
		for _, m := range fam.GetMetric() {
			if label == "" || labelIs(m, label) {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no counter %s{%s}", name, label)
	return 0
}

func labelIs(m *dto.Metric, v string) bool {
	for _, l := range m.GetLabel() {
		if l.GetValue() == v {
			return true
		}
	}
	return false
}

// A lone event is written at once when no insert is in flight: long before
// the batch wait (10 s here) would cut it.
func TestLoneEventWrittenAtOnce(t *testing.T) {
	f := newFixture(t)
	cfg := consumer.DefaultConfig()
	cfg.BatchWait = 10 * time.Second
	reg := prometheus.NewRegistry()
	g := newGate(f.proj, false)
	in := f.metered(t, g, cfg, reg)
	sent := time.Now()
	f.send(t, event(910001, 1, "2.21", false))
	waitFor(t, "the lone event applied", 5*time.Second, func() bool { return in.c.Lag().Applied() >= 1 })
	_, starts := g.snapshot()
	t.Logf("insert started %s after the send, applied %s after it", starts[0].Sub(sent).Round(time.Millisecond), time.Since(sent).Round(time.Millisecond))
	if got := counter(t, reg, "consumer_batches_cut_total", "idle"); got != 1 {
		t.Errorf("batches cut because the writer was idle = %v, want 1", got)
	}
	if got := counter(t, reg, "consumer_batches_cut_total", "wait"); got != 0 {
		t.Errorf("batches cut by the batch wait = %v, want 0", got)
	}
}

// Events that arrive while an insert is in flight go into the next insert,
// together, cut the moment the first insert is done (group commit): one
// insert of 1 row, then one of 3.
func TestEventsArrivingDuringAnInsertShareTheNext(t *testing.T) {
	f := newFixture(t)
	cfg := consumer.DefaultConfig()
	cfg.BatchWait, cfg.MinInsertGap = 10*time.Second, 0
	reg := prometheus.NewRegistry()
	g := newGate(f.proj, true)
	in := f.metered(t, g, cfg, reg)
	f.send(t, event(920001, 1, "2.21", false))
	select {
	case <-g.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first insert never started")
	}
	f.send(t, event(920002, 1, "1.10", false), event(920003, 1, "1.20", false), event(920004, 1, "1.30", false))
	waitFor(t, "4 events received", 10*time.Second, func() bool { return counter(t, reg, "consumer_received_events_total", "") >= 4 })
	close(g.release)
	in.waitApplied(t, 4)
	if inserts, _ := g.snapshot(); len(inserts) != 2 || inserts[0] != 1 || inserts[1] != 3 {
		t.Errorf("rows per insert = %v, want [1 3]", inserts)
	}
	if got := counter(t, reg, "consumer_batches_cut_total", "idle"); got != 2 {
		t.Errorf("batches cut because the writer was idle = %v, want 2", got)
	}
	if got := len(f.state(t)); got != 4 {
		t.Errorf("records = %d, want 4", got)
	}
}

// Early cuts are at least MinInsertGap apart, bounding the parts ClickHouse
// creates: a second event sent right after the first is written no sooner
// than the gap after the first insert started.
func TestEarlyCutsAreAGapApart(t *testing.T) {
	f := newFixture(t)
	cfg := consumer.DefaultConfig()
	cfg.BatchWait, cfg.MinInsertGap = 10*time.Second, 400*time.Millisecond
	g := newGate(f.proj, false)
	in := f.metered(t, g, cfg, prometheus.NewRegistry())
	f.send(t, event(930001, 1, "2.21", false))
	in.waitApplied(t, 1)
	f.send(t, event(930002, 1, "2.31", false))
	in.waitApplied(t, 2)
	inserts, starts := g.snapshot()
	if len(inserts) != 2 {
		t.Fatalf("rows per insert = %v, want two inserts", inserts)
	}
	// The cut precedes the insert's start by the handoff only, so the
	// starts are at least the gap apart, less a margin for the handoff.
	if gap := starts[1].Sub(starts[0]); gap < cfg.MinInsertGap-20*time.Millisecond {
		t.Errorf("inserts started %s apart, want at least the gap %s", gap, cfg.MinInsertGap)
	}
}
