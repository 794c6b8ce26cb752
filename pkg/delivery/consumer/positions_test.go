package consumer_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
)

// positioned is a Writer and PositionWriter in front of the projection
// that logs what it stored, can hold the first position insert until
// released, and can refuse position inserts (ClickHouse refusing them).
type positioned struct {
	p        *chstore.Projection
	hold     bool
	entered  chan struct{} // closed when the first position insert starts
	release  chan struct{} // the first position insert proceeds once closed
	holdOnce sync.Once
	refuse   atomic.Bool

	mu sync.Mutex
	// stored is the newest source commit (ms) of the rows stored so far,
	// per shard.
	stored   map[string]int64
	rowCalls int
	// recorded lists each position insert that reached ClickHouse; ahead
	// the positions that were newer than the rows stored when it began.
	recorded [][]chstore.AppliedPosition
	ahead    []chstore.AppliedPosition
	attempts atomic.Int32
}

func newPositioned(p *chstore.Projection, hold bool) *positioned {
	return &positioned{p: p, hold: hold, entered: make(chan struct{}), release: make(chan struct{}), stored: map[string]int64{}}
}

func (w *positioned) Insert(ctx context.Context, rows []chstore.Row) error {
	if err := w.p.Insert(ctx, rows); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rowCalls++
	for _, r := range rows {
		w.stored[r.ShardID] = max(w.stored[r.ShardID], r.SourceCommitMs)
	}
	return nil
}

func (w *positioned) InsertAppliedPositions(ctx context.Context, ps []chstore.AppliedPosition, nowMs int64) error {
	w.attempts.Add(1)
	w.mu.Lock()
	for _, a := range ps {
		if a.CommitMs > w.stored[a.ShardID] {
			w.ahead = append(w.ahead, a)
		}
	}
	w.mu.Unlock()
	if w.hold {
		w.holdOnce.Do(func() {
			close(w.entered)
			select {
			case <-w.release:
			case <-ctx.Done():
			}
		})
	}
	if w.refuse.Load() {
		return errors.New("injected: ClickHouse refused the positions' insert")
	}
	if err := w.p.InsertAppliedPositions(ctx, ps, nowMs); err != nil {
		return err
	}
	w.mu.Lock()
	w.recorded = append(w.recorded, ps)
	w.mu.Unlock()
	return nil
}

func (w *positioned) rowInserts() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rowCalls
}

// eventAt is event() committed at ms on the source.
func eventAt(dataID int64, ms int64) *fitnessv1.FitnessResultChanged {
	ev := event(dataID, 1, "2.21", false)
	ev.SourceCommitTime = timestamppb.New(time.UnixMilli(ms))
	return ev
}

// positionOf reads the applied position ClickHouse holds for shard.
func (f *fixture) positionOf(t *testing.T, shard string) int64 {
	t.Helper()
	var ms int64
	if err := f.ch.Conn.QueryRow(context.Background(),
		"SELECT max(max_commit_ms) FROM projection_partition_applied WHERE shard_id = ?", shard).Scan(&ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

// The applied positions are recorded off the rows' path: while the first
// batch's position insert is held, the writer goes on inserting the next
// batches' rows, and nothing is acknowledged until a position covering it
// was recorded. The batches written meanwhile are recorded by one insert,
// with their newest position, and no position is ever ahead of the rows
// stored when its insert began.
func TestPositionsRecordedOffTheRowsPathBeforeAcknowledging(t *testing.T) {
	f := newFixture(t)
	cfg := consumer.DefaultConfig()
	cfg.BatchWait, cfg.MinInsertGap = 10*time.Second, 0
	w := newPositioned(f.proj, true)
	in := f.startWith(t, nil, w, cfg)
	base := time.Now().Add(-time.Minute).UnixMilli()

	f.send(t, eventAt(940001, base))
	select {
	case <-w.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first position insert never started")
	}
	// Two more batches, one event each: the second is cut only once the
	// first was inserted (no insert in flight) because of MinInsertGap 0
	// and the writer being idle; both inserted while the position is held.
	f.send(t, eventAt(940002, base+10))
	waitFor(t, "the second batch's rows inserted", 10*time.Second, func() bool { return w.rowInserts() >= 2 })
	f.send(t, eventAt(940003, base+20))
	waitFor(t, "the third batch's rows inserted", 10*time.Second, func() bool { return w.rowInserts() >= 3 })
	if got := in.c.Lag().Applied(); got != 0 {
		t.Fatalf("acknowledged %d events before any position was recorded, want 0", got)
	}
	close(w.release)
	in.waitApplied(t, 3)

	w.mu.Lock()
	recorded, ahead := w.recorded, w.ahead
	w.mu.Unlock()
	if len(ahead) != 0 {
		t.Errorf("positions ahead of the rows stored when their insert began: %+v", ahead)
	}
	if len(recorded) != 2 {
		t.Fatalf("position inserts = %d (%+v), want 2: the first batch's, then one for the two written meanwhile", len(recorded), recorded)
	}
	if len(recorded[1]) != 1 || recorded[1][0].CommitMs != base+20 {
		t.Errorf("the coalesced insert recorded %+v, want one position at %d (the newer batch's)", recorded[1], base+20)
	}
	if got := f.positionOf(t, "shard-1"); got != base+20 {
		t.Errorf("ClickHouse's applied position = %d, want %d", got, base+20)
	}
	if got := len(f.state(t)); got != 3 {
		t.Errorf("records = %d, want 3", got)
	}
}

// Failure point: ClickHouse refuses the positions' insert after storing the
// rows. The positions are retried (the rows are not inserted again), the
// consumer reports the failure (WriteErr, its health) and acknowledges
// nothing; stopped meanwhile, the broker redelivers the batch to the next
// instance, which stores and records it.
func TestRefusedPositionsAreRetriedAndNothingAcknowledged(t *testing.T) {
	f := newFixture(t)
	cfg := consumer.DefaultConfig()
	cfg.BatchWait = 50 * time.Millisecond
	w := newPositioned(f.proj, false)
	w.refuse.Store(true)
	in := f.startWith(t, nil, w, cfg)
	ms := time.Now().Add(-time.Minute).UnixMilli()
	f.send(t, eventAt(950001, ms))
	waitFor(t, "the positions' insert retried", 10*time.Second, func() bool { return w.attempts.Load() >= 3 })
	if err := in.c.WriteErr(); err == nil {
		t.Error("WriteErr = nil while the positions are refused, want the failure")
	}
	if got := in.c.Lag().Applied(); got != 0 {
		t.Errorf("acknowledged %d events while their position was refused, want 0", got)
	}
	if rows := w.rowInserts(); rows != 1 {
		t.Errorf("row inserts = %d, want 1 (only the positions are retried)", rows)
	}

	// ClickHouse takes the positions again: recorded, then acknowledged.
	w.refuse.Store(false)
	in.waitApplied(t, 1)
	waitFor(t, "WriteErr cleared", 10*time.Second, func() bool { return in.c.WriteErr() == nil })
	if got := f.positionOf(t, "shard-1"); got != ms {
		t.Errorf("ClickHouse's applied position = %d, want %d", got, ms)
	}

	// Refused again, then stopped: the batch is not acknowledged, and the
	// next instance gets it again.
	w.refuse.Store(true)
	before := w.attempts.Load()
	f.send(t, eventAt(950002, ms+10))
	waitFor(t, "the second batch's positions refused", 10*time.Second, func() bool { return w.attempts.Load() >= before+2 })
	if err := in.stop(); err != nil {
		t.Fatalf("stopping: %v", err)
	}
	if got := in.c.Lag().Applied(); got != 1 {
		t.Errorf("acknowledged %d events, want 1 (the second's position was never recorded)", got)
	}
	f.start(t, nil, nil)
	waitFor(t, "the redelivered batch's position recorded by the next instance", 30*time.Second,
		func() bool { return f.positionOf(t, "shard-1") == ms+10 })
	if got := len(f.state(t)); got != 2 {
		t.Errorf("records = %d, want 2", got)
	}
}
