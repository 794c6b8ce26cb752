package retention_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/platform/retention"
	"github.com/resultsync/resultsync/pkg/testkit/metrictest"
)

// fakeTable holds rows with ages; its purge removes the oldest ones past
// the cutoff, at most a batch per call, and can be made to fail.
type fakeTable struct {
	rows    []time.Time
	fail    error
	calls   int
	cutoffs []time.Time
}

func (f *fakeTable) purge(_ context.Context, cutoff time.Time, batch int) (retention.Removed, error) {
	f.calls++
	f.cutoffs = append(f.cutoffs, cutoff)
	if f.fail != nil {
		return nil, f.fail
	}
	var kept []time.Time
	n := int64(0)
	for _, r := range f.rows {
		if r.Before(cutoff) && n < int64(batch) {
			n++
			continue
		}
		kept = append(kept, r)
	}
	f.rows = kept
	return retention.Removed{"t": n}, nil
}

// TestRound: every table is purged in batches until a call removes nothing,
// with its own cutoff; a failing table is counted and logged and the others
// are purged all the same; the metrics count it all.
func TestRound(t *testing.T) {
	now := time.Now()
	ok := &fakeTable{}
	for _, age := range []time.Duration{50, 40, 30, 20, 11, 9, 1} {
		ok.rows = append(ok.rows, now.Add(-age*time.Hour))
	}
	broken := &fakeTable{fail: errors.New("shard down")}
	reg := prometheus.NewRegistry()
	w, err := retention.New(slog.New(slog.DiscardHandler), retention.Config{Interval: time.Hour, Batch: 2, CallTimeout: time.Minute}, reg, []retention.Table{
		{Name: "broken", Store: "shard-1", Retention: time.Hour, Purge: broken.purge},
		{Name: "t", Store: "shard-0", Retention: 10 * time.Hour, Purge: ok.purge},
	})
	if err != nil {
		t.Fatal(err)
	}
	err = w.Round(context.Background())
	if err == nil || !strings.Contains(err.Error(), "purging broken on shard-1: shard down") {
		t.Fatalf("round error = %v, want the broken table's", err)
	}
	if len(ok.rows) != 2 || ok.calls != 4 {
		t.Errorf("kept %d rows in %d calls, want the 2 newer than 10h after 4 calls (2, 2, 1, 0)", len(ok.rows), ok.calls)
	}
	if c := ok.cutoffs[0]; c.Before(now.Add(-10*time.Hour-time.Minute)) || c.After(time.Now().Add(-10*time.Hour)) {
		t.Errorf("cutoff %s, want now - 10h", c)
	}
	if got := series(t, reg, "retention_rows_purged_total", "t", "shard-0"); got != 5 {
		t.Errorf("rows purged = %v, want 5", got)
	}
	if got := series(t, reg, "retention_errors_total", "broken", "shard-1"); got != 1 {
		t.Errorf("errors of the broken table = %v, want 1", got)
	}
	if got := series(t, reg, "retention_errors_total", "t", "shard-0"); got != 0 {
		t.Errorf("errors of the working table = %v, want 0", got)
	}
}

// TestRunStopsWithItsContext: Run returns nil once its context ends, and a
// lock held elsewhere skips the round.
func TestRunStopsWithItsContext(t *testing.T) {
	f := &fakeTable{rows: []time.Time{time.Now().Add(-48 * time.Hour)}}
	held := func(context.Context) (func(), bool, error) { return nil, false, nil }
	w, err := retention.New(slog.New(slog.DiscardHandler), retention.Config{Interval: time.Second, Batch: 10, CallTimeout: time.Minute, Lock: held}, prometheus.NewRegistry(),
		[]retention.Table{{Name: "t", Store: "s", Retention: time.Hour, Purge: f.purge}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v after its context ended, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s of its context ending")
	}
	if f.calls != 0 {
		t.Errorf("purged %d times while the lock was held elsewhere", f.calls)
	}
}

// TestConfig refuses an impossible cadence and tables without a retention.
func TestConfig(t *testing.T) {
	for _, c := range []retention.Config{
		{Interval: time.Millisecond, Batch: 1, CallTimeout: time.Minute}, {Interval: time.Hour, Batch: 0, CallTimeout: time.Minute},
		{Interval: time.Hour, Batch: 1, Pause: -1, CallTimeout: time.Minute}, {Interval: time.Hour, Batch: 1},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	purge := func(context.Context, time.Time, int) (retention.Removed, error) { return nil, nil }
	if _, err := retention.New(slog.New(slog.DiscardHandler), retention.Config{Interval: time.Hour, Batch: 1, CallTimeout: time.Minute}, prometheus.NewRegistry(),
		[]retention.Table{{Name: "t", Store: "s", Purge: purge}}); err == nil {
		t.Error("a table without a retention was accepted")
	}
}

// series is the value of name{table, store} in reg (-1 when absent).
func series(t *testing.T, reg *prometheus.Registry, name, table, store string) float64 {
	t.Helper()
	v, ok := metrictest.Value(t, reg, name, map[string]string{"table": table, "store": store})
	if !ok {
		return -1
	}
	return v
}
