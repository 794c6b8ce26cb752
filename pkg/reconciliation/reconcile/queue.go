package reconcile

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// The runner is a supervised worker with a queue: the API and the
// scheduler Admit a run, create it, and Submit it; Run (a worker of the
// server's supervisor) executes up to MaxConcurrentRuns at once, in arrival
// order, under its own context, and shows the others QUEUED. When Run's
// context ends, the runs executing are cancelled and the runs waiting are
// ended FAILED; each is recorded like any other end.

// job is a submitted run waiting for, or holding, a run slot.
type job struct {
	r       Run
	start   time.Time // submitted: the run's duration counts its wait
	release func()    // Admit's place, given back once the run has ended
	done    chan Run  // receives the run in its terminal state (buffered)
	queued  bool      // shown QUEUED (and counted in the gauge)

	stopOnce sync.Once
	stop     chan struct{} // closed when the submitter's context ended
	unwatch  func() bool   // stops watching the submitter's context
}

// cancel ends the job: waiting, it is dropped; executing, its context is
// cancelled.
func (j *job) cancel() { j.stopOnce.Do(func() { close(j.stop) }) }

func (j *job) cancelled() bool {
	select {
	case <-j.stop:
		return true
	default:
		return false
	}
}

// Admit reserves a place for a run about to be submitted: at most
// MaxConcurrentRuns executing plus MaxQueuedRuns queued; ErrQueueFull
// beyond. release gives the place back; Submit calls it once the run has
// ended.
func (rn *Runner) Admit() (release func(), err error) {
	if rn.admitted.Add(1) > int64(cap(rn.slots))+rn.maxQueued {
		rn.admitted.Add(-1)
		return nil, ErrQueueFull
	}
	var once sync.Once
	return func() { once.Do(func() { rn.admitted.Add(-1) }) }, nil
}

// Submit hands r, a stored run admitted by Admit, to the worker (Run),
// which executes it once a run slot is free and then calls release. The
// returned channel receives r in its terminal state. r ends FAILED when ctx
// ends first (pass a context without cancellation for a run that outlives
// its request) or when the worker stops; submitted after the worker
// stopped, r is recorded FAILED at once. A runner whose Run is never called
// never executes what is submitted.
func (rn *Runner) Submit(ctx context.Context, r Run, release func()) <-chan Run {
	j := &job{r: r, start: time.Now(), release: release, done: make(chan Run, 1), stop: make(chan struct{})}
	j.unwatch = context.AfterFunc(ctx, func() {
		j.cancel()
		rn.poke()
	})
	rn.mu.Lock()
	if rn.closed {
		rn.mu.Unlock()
		rn.end(context.WithoutCancel(ctx), j, nil, fmt.Errorf("the run executor has stopped: %w", context.Canceled))
		return j.done
	}
	rn.waiting = append(rn.waiting, j)
	rn.mu.Unlock()
	rn.poke()
	return j.done
}

// Run is the worker that executes the submitted runs until ctx ends; then
// it ends the runs waiting FAILED, waits for those executing (cancelled
// with ctx) to record their end, and returns nil.
func (rn *Runner) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for {
		rn.dispatch(ctx, &wg)
		select {
		case <-ctx.Done():
			rn.mu.Lock()
			rn.closed = true
			waiting := rn.waiting
			rn.waiting = nil
			rn.mu.Unlock()
			for _, j := range waiting {
				wg.Go(func() { rn.end(ctx, j, nil, ctx.Err()) })
			}
			wg.Wait()
			return nil
		case <-rn.wake:
		}
	}
}

// poke makes the worker look at its queue.
func (rn *Runner) poke() {
	select {
	case rn.wake <- struct{}{}:
	default:
	}
}

// dispatch ends the waiting runs whose submitter gave up, starts the runs
// at the head of the queue while run slots are free, and shows the others
// QUEUED.
func (rn *Runner) dispatch(ctx context.Context, wg *sync.WaitGroup) {
	rn.mu.Lock()
	var gone, start, waiting []*job
	for _, j := range rn.waiting {
		switch {
		case j.cancelled():
			gone = append(gone, j)
		case len(waiting) == 0 && rn.trySlot():
			start = append(start, j)
		default:
			waiting = append(waiting, j)
		}
	}
	rn.waiting = waiting
	rn.mu.Unlock()
	for _, j := range gone {
		wg.Go(func() { rn.end(ctx, j, nil, context.Canceled) })
	}
	for _, j := range start {
		wg.Go(func() { rn.execute(ctx, j) })
	}
	for _, j := range waiting {
		if j.queued {
			continue
		}
		if err := rn.showQueued(ctx, j); err != nil {
			rn.mu.Lock()
			rn.waiting = without(rn.waiting, j)
			rn.mu.Unlock()
			wg.Go(func() { rn.end(ctx, j, nil, err) })
		}
	}
}

func without(js []*job, j *job) []*job {
	out := js[:0]
	for _, k := range js {
		if k != j {
			out = append(out, k)
		}
	}
	return out
}

// trySlot takes a run slot if one is free.
func (rn *Runner) trySlot() bool {
	select {
	case rn.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// freeSlot gives a run slot back and lets the worker start the next run.
func (rn *Runner) freeSlot() {
	<-rn.slots
	rn.poke()
}

// showQueued records j QUEUED, behind the runs executing.
func (rn *Runner) showQueued(ctx context.Context, j *job) error {
	j.r.State = StateQueued
	j.r.Message += fmt.Sprintf("queued behind the %d runs executing (at most %d at once). ", cap(rn.slots), cap(rn.slots))
	if err := rn.store.Update(ctx, j.r); err != nil {
		return err
	}
	j.queued = true
	rn.m.queued.Inc()
	return nil
}

// execute runs j, which holds a run slot, to its end under ctx (the
// worker's), cancelled early when j's submitter gives up.
func (rn *Runner) execute(ctx context.Context, j *job) {
	defer rn.freeSlot()
	if j.queued {
		rn.m.queued.Dec()
		j.queued = false
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-j.stop:
			cancel()
		case <-rctx.Done():
		}
	}()
	bad := map[int64]bool{}
	err := rn.compare(rctx, &j.r, bad)
	rn.end(ctx, j, bad, err)
}

// end records j's end (err: FAILED), gives its place back and hands the
// terminal run to its submitter.
func (rn *Runner) end(ctx context.Context, j *job, bad map[int64]bool, err error) {
	if j.queued {
		rn.m.queued.Dec()
		j.queued = false
	}
	r := rn.finish(ctx, j.r, j.start, bad, err)
	j.unwatch()
	j.release()
	j.done <- r
}
