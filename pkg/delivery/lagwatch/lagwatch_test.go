package lagwatch_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/delivery/lagwatch"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

type fixture struct {
	shards []lagwatch.Shard
	ch     *infratest.ClickHouseDatabase
	proj   *chstore.Projection
	seq    int
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{ch: infratest.NewClickHouseDatabase(t, true)}
	f.proj = chstore.NewProjection(f.ch.Conn)
	for _, id := range []string{"shard-0", "shard-1"} {
		db := infratest.NewMySQLDatabase(t, schema.Shard)
		f.shards = append(f.shards, lagwatch.Shard{ID: id, DB: db.DB})
	}
	return f
}

// commit writes an outbox row of shard i committed at t, as the write path
// does (the payload is irrelevant here).
func (f *fixture) commit(t *testing.T, i int, at time.Time) int64 {
	t.Helper()
	f.seq++
	id := int64(700000 + f.seq)
	if _, err := f.shards[i].DB.Exec(`INSERT INTO outbox_event (event_id, data_id, version, payload, status, due_time, create_time)
		VALUES (?, ?, 1, x'00', 'SENT', ?, ?)`, fmt.Sprintf("fitness-result-%d-v1", id), id, at, at); err != nil {
		t.Fatal(err)
	}
	return id
}

// apply writes the event of data id committed at t into the projection, as
// the consumer does.
func (f *fixture) apply(t *testing.T, i int, id int64, at time.Time) {
	t.Helper()
	if err := f.proj.Insert(context.Background(), []chstore.Row{{DetectID: 1, DataID: id, UserID: 1, ProjectID: 3, SchoolID: 7, Grade: 5, Version: 1,
		Result: "1.000", Unit: "m", EventID: fmt.Sprintf("fitness-result-%d-v1", id), ShardID: f.shards[i].ID,
		SourceCommitMs: at.UnixMilli(), IngestMs: time.Now().UnixMilli()}}); err != nil {
		t.Fatal(err)
	}
}

// The consumer stopped: events committed after the applied position are
// counted per shard and the lag is the age of the oldest, whatever the
// outbox status says (here every row is SENT: the relay drained it). Once
// they are applied the lag is 0; a new Watcher (another server, a restart)
// reads the same.
func TestLagFromDurableState(t *testing.T) {
	f := newFixture(t)
	base := time.Now().UTC().Add(-10 * time.Minute).Truncate(time.Millisecond)
	// Shard 0: two events applied, then four not (the oldest 7 minutes ago).
	for k := 0; k < 2; k++ {
		at := base.Add(time.Duration(k) * time.Second)
		f.apply(t, 0, f.commit(t, 0, at), at)
	}
	var late []int64
	var lateAt []time.Time
	for k := 0; k < 4; k++ {
		at := base.Add(3*time.Minute + time.Duration(k)*time.Second)
		late, lateAt = append(late, f.commit(t, 0, at)), append(lateAt, at)
	}
	// Shard 1: everything applied.
	at1 := base.Add(time.Minute)
	f.apply(t, 1, f.commit(t, 1, at1), at1)

	reg := prometheus.NewRegistry()
	e := lagwatch.NewExporter(slog.New(slog.NewTextHandler(io.Discard, nil)), lagwatch.New(f.ch.Conn, f.shards), time.Second, reg)
	if err := e.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	lag0 := gauge(t, reg, "projection_durable_lag_seconds", "shard-0")
	if want := time.Since(lateAt[0]).Seconds(); math.Abs(lag0-want) > 5 {
		t.Errorf("shard-0 lag = %.1f s, want about %.1f s (the oldest unapplied event's age)", lag0, want)
	}
	if n := gauge(t, reg, "projection_unapplied_events", "shard-0"); n != 4 {
		t.Errorf("shard-0 unapplied = %v, want 4", n)
	}
	if v := gauge(t, reg, "projection_durable_lag_seconds", "shard-1"); v != 0 {
		t.Errorf("shard-1 lag = %v, want 0", v)
	}

	for k, id := range late {
		f.apply(t, 0, id, lateAt[k])
	}
	again, err := lagwatch.New(f.ch.Conn, f.shards).Lags(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range again {
		if l.Seconds != 0 || l.Pending != 0 {
			t.Errorf("%s after catch-up: %+v, want no lag", l.ShardID, l)
		}
	}
	if !again[0].Applied.Equal(lateAt[3]) {
		t.Errorf("shard-0 applied position = %s, want %s", again[0].Applied, lateAt[3])
	}
}

// A shard that cannot be read is named and shows projection_lag_up 0; the
// other is still measured.
func TestShardDownIsNamed(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewRegistry()
	_ = f.shards[1].DB.Close()
	e := lagwatch.NewExporter(slog.New(slog.NewTextHandler(io.Discard, nil)), lagwatch.New(f.ch.Conn, f.shards), time.Second, reg)
	err := e.Refresh(context.Background())
	if err == nil {
		t.Fatal("no error with shard-1 closed")
	}
	if up := gauge(t, reg, "projection_lag_up", "shard-1"); up != 0 {
		t.Errorf("shard-1 up = %v, want 0", up)
	}
	if up := gauge(t, reg, "projection_lag_up", "shard-0"); up != 1 {
		t.Errorf("shard-0 up = %v, want 1", up)
	}
}

// gauge is the value of the gauge of the shard in reg.
func gauge(t *testing.T, reg *prometheus.Registry, name, shard string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "shard" && l.GetValue() == shard {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{shard=%q}", name, shard)
	return 0
}
