package server_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/platform/server"
)

var errDown = errors.New("connection refused")

// A check that ignores its context (as the Pulsar client's lookups do)
// cannot hold a probe past the probe's deadline, and is never started again
// on top of itself: callers meanwhile share the one in flight.
func TestSharedCheckBoundsAndSharesAHangingCheck(t *testing.T) {
	release := make(chan struct{})
	var started atomic.Int32
	f := server.SharedCheck(time.Minute, func(context.Context) error {
		started.Add(1)
		<-release // ignores its context
		return errDown
	})
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := f(ctx)
			if took := time.Since(start); took > time.Second {
				t.Errorf("check took %s with a 100ms deadline", took)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("check = %v, want the caller's deadline", err)
			}
		}()
	}
	wg.Wait()
	if n := started.Load(); n != 1 {
		t.Errorf("the hanging check was started %d times, want once", n)
	}
	close(release)
	// The hung call ends; a waiter gets its result, a later call starts anew.
	if err := f(context.Background()); !errors.Is(err, errDown) {
		t.Errorf("check after the hang = %v, want %v", err, errDown)
	}
	if n := started.Load(); n > 2 {
		t.Errorf("started %d times", n)
	}
}

// The flight gives its check its own timeout, not the caller's: a caller that
// joins late does not see the first caller's deadline as a failure.
func TestSharedCheckRunsUnderItsOwnTimeout(t *testing.T) {
	f := server.SharedCheck(50*time.Millisecond, func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	})
	start := time.Now()
	if err := f(context.Background()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("check = %v, want its own timeout", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("check took %s with a 50ms flight timeout", took)
	}
}
