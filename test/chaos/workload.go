package main

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
)

const school = 8

// campaigns the workload writes to (fresh per run: offset by the seed).
func campaignsOf(seed uint64) []int64 {
	base := int64(80_000_000 + (seed%100_000)*10)
	return []int64{base + 1, base + 2, base + 3}
}

// acked is what the workload knows of one record: the state its last
// acknowledged command left.
type acked struct {
	detect  int64
	version int64
	milli   int64
	deleted bool
}

// workload writes through ResultService and keeps its own log of what was
// acknowledged and refused. Every command is retried with its request id
// until it gets a definite answer (the write path replays the stored
// outcome of a request id), so no command stays in doubt.
type workload struct {
	rs        fitnessv1.ResultServiceClient
	campaigns []int64
	seed      uint64

	mu      sync.Mutex
	records map[int64]acked
	doubt   map[int64]bool // a command without a definite answer when the run gave up

	sent, ackedN, refused, refusedApplied, retries, hardErrors atomic.Int64
	firstHard                                                  atomic.Value // string
}

func newWorkload(addr string, campaigns []int64, seed uint64) (*workload, func(), error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	return &workload{rs: fitnessv1.NewResultServiceClient(conn), campaigns: campaigns, seed: seed, records: map[int64]acked{}, doubt: map[int64]bool{}},
		func() { conn.Close() }, nil
}

func operator(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer dev-operator"), cancel
}

// retryable says whether an answer is no answer (the call may or may not
// have been applied): the same request id is sent again.
func retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Unknown, codes.Internal, codes.ResourceExhausted:
		return true
	}
	return false
}

// call sends f until it gets a definite answer or giveUp is closed (then
// the last error is returned).
func (w *workload) call(giveUp <-chan struct{}, f func(ctx context.Context) error) error {
	for {
		ctx, cancel := operator(context.Background())
		err := f(ctx)
		cancel()
		if err == nil || !retryable(err) {
			return err
		}
		w.retries.Add(1)
		select {
		case <-giveUp:
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (w *workload) hard(format string, args ...any) {
	if w.hardErrors.Add(1) == 1 {
		w.firstHard.Store(fmt.Sprintf(format, args...))
	}
}

// milliString is a result in metres with three decimals ("1.234").
func milliString(m int64) string { return fmt.Sprintf("%d.%03d", m/1000, m%1000) }

// run is one writer until stop; giveUp (closed well after stop) ends the
// retries of its last command.
func (w *workload) run(id int, stop, giveUp <-chan struct{}) {
	rng := rand.New(rand.NewPCG(w.seed, uint64(id)))
	var mine []int64
	next := int64(id+1)*1_000_000 + int64(w.seed%1000)*10_000_000
	for {
		select {
		case <-stop:
			return
		default:
		}
		// A standing long jump in metres: 1.000-2.999, unique enough per command.
		m := 1000 + rng.Int64N(2000)
		switch op := rng.IntN(10); {
		case len(mine) < 10 || op < 3:
			next++
			rid, detect := next, w.campaigns[rng.IntN(len(w.campaigns))]
			req := &fitnessv1.RecordResultRequest{RequestId: fmt.Sprintf("chaos-%d", rid), DataId: rid, DetectId: detect, UserId: 41,
				ProjectId: 3, SchoolId: school, Grade: 5, Result: milliString(m), Unit: "m"}
			w.sent.Add(1)
			var resp *fitnessv1.RecordResultResponse
			err := w.call(giveUp, func(ctx context.Context) (err error) { resp, err = w.rs.RecordResult(ctx, req); return err })
			if err != nil {
				w.failed(rid, err, "recording %d: %v", rid, err)
				return
			}
			w.ackedN.Add(1)
			w.set(rid, acked{detect: detect, version: resp.GetResult().GetVersion(), milli: m})
			mine = append(mine, rid)
		case op < 8:
			rid := mine[rng.IntN(len(mine))]
			cur := w.get(rid)
			if cur.deleted {
				continue
			}
			req := &fitnessv1.CorrectResultRequest{RequestId: fmt.Sprintf("chaos-%d-v%d", rid, cur.version+1), SchoolId: school, DataId: rid,
				ExpectedVersion: cur.version, Result: milliString(m), Unit: "m", Reason: "re-measured"}
			w.sent.Add(1)
			var resp *fitnessv1.CorrectResultResponse
			err := w.call(giveUp, func(ctx context.Context) (err error) { resp, err = w.rs.CorrectResult(ctx, req); return err })
			if err != nil {
				w.failed(rid, err, "correcting %d at v%d: %v", rid, cur.version, err)
				return
			}
			w.ackedN.Add(1)
			cur.version, cur.milli = resp.GetResult().GetVersion(), m
			w.set(rid, cur)
		case op < 9:
			// A stale correction: the version before the current one. It must
			// be refused (ABORTED) and change nothing.
			rid := mine[rng.IntN(len(mine))]
			cur := w.get(rid)
			if cur.deleted || cur.version < 2 {
				continue
			}
			req := &fitnessv1.CorrectResultRequest{RequestId: fmt.Sprintf("chaos-%d-stale-%d", rid, rng.Uint32()), SchoolId: school, DataId: rid,
				ExpectedVersion: cur.version - 1, Result: milliString(m), Unit: "m", Reason: "stale"}
			w.sent.Add(1)
			err := w.call(giveUp, func(ctx context.Context) error { _, err := w.rs.CorrectResult(ctx, req); return err })
			switch {
			case status.Code(err) == codes.Aborted:
				w.refused.Add(1)
			case err == nil:
				w.refusedApplied.Add(1)
				w.hard("a stale correction of %d at v%d was applied", rid, cur.version-1)
			case retryable(err):
				w.failed(rid, err, "")
				return
			default:
				w.hard("stale correction of %d: %v", rid, err)
			}
		default:
			rid := mine[rng.IntN(len(mine))]
			cur := w.get(rid)
			if cur.deleted {
				continue
			}
			req := &fitnessv1.DeleteResultRequest{RequestId: fmt.Sprintf("chaos-%d-del", rid), SchoolId: school, DataId: rid,
				ExpectedVersion: cur.version, Reason: "recorded for the wrong student"}
			w.sent.Add(1)
			var resp *fitnessv1.DeleteResultResponse
			err := w.call(giveUp, func(ctx context.Context) (err error) { resp, err = w.rs.DeleteResult(ctx, req); return err })
			if err != nil {
				w.failed(rid, err, "deleting %d at v%d: %v", rid, cur.version, err)
				return
			}
			w.ackedN.Add(1)
			cur.version, cur.deleted = resp.GetResult().GetVersion(), true
			w.set(rid, cur)
		}
	}
}

// failed ends a writer on a command without a definite answer: its record
// is in doubt (retryable error at give-up) or the answer was wrong.
func (w *workload) failed(id int64, err error, format string, args ...any) {
	if retryable(err) {
		w.mu.Lock()
		w.doubt[id] = true
		w.mu.Unlock()
		return
	}
	w.hard(format, args...)
}

func (w *workload) get(id int64) acked {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.records[id]
}

func (w *workload) set(id int64, a acked) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.records[id] = a
}

func (w *workload) snapshot() (map[int64]acked, map[int64]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.records), maps.Clone(w.doubt)
}
