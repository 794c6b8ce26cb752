package server

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// SharedCheck returns a probe check that runs fn at most once at a time,
// under its own timeout, and gives every caller that arrives meanwhile the
// same result. A caller stops waiting when its own context ends, so a check
// whose dependency ignores contexts (the Pulsar client takes none) can
// neither hold a probe past its deadline nor pile up behind itself.
func SharedCheck(timeout time.Duration, fn func(context.Context) error) func(context.Context) error {
	f := &flight{timeout: timeout, fn: fn}
	return f.check
}

type flight struct {
	timeout time.Duration
	fn      func(context.Context) error

	mu  sync.Mutex
	cur *call
}

type call struct {
	done chan struct{}
	err  error
}

func (f *flight) check(ctx context.Context) error {
	f.mu.Lock()
	c := f.cur
	if c == nil {
		c = &call{done: make(chan struct{})}
		f.cur = c
		//nolint:gosec // G118: on purpose; the call is shared by callers with different deadlines and bounded by its own timeout
		go func() {
			cctx, cancel := context.WithTimeout(context.Background(), f.timeout)
			err := f.fn(cctx)
			cancel()
			f.mu.Lock()
			c.err, f.cur = err, nil
			f.mu.Unlock()
			close(c.done)
		}()
	}
	f.mu.Unlock()
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return fmt.Errorf("no answer: %w", ctx.Err())
	}
}

// Within runs fn, waiting for it at most d (fn carries on in the background
// after that). Releasing a client whose Close may block on an unreachable
// dependency goes through it, so shutdown stays within its grace.
func Within(d time.Duration, fn func()) {
	done := make(chan struct{})
	go func() {
		fn()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
