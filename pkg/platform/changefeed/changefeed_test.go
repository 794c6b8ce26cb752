package changefeed_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/platform/changefeed"
)

// A notification of the watched key wakes the watch at once, far before
// its fallback poll (an hour); another key's does not; the subscription
// is gone when the watch returns.
func TestWatchWakesOnNotify(t *testing.T) {
	f := changefeed.New()
	var steps atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- changefeed.Watch(context.Background(), f, "repair:1", changefeed.WatchOptions{Poll: time.Hour},
			func(context.Context) (bool, error) { return steps.Add(1) == 3, nil })
	}()
	waitFor(t, "the first step", func() bool { return steps.Load() == 1 && f.Subscribers("repair:1") == 1 })
	f.Notify("repair:2")
	f.Notify("repair:1")
	waitFor(t, "the second step", func() bool { return steps.Load() == 2 })
	f.Notify("repair:1")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Watch = %v, want nil once step is done", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end within 10s of the notification that made it done")
	}
	if n := f.Subscribers("repair:1"); n != 0 {
		t.Errorf("%d subscriptions left after the watch returned", n)
	}
}

// A watch ends with ErrMaxDuration at its bound, and with ctx's error when
// ctx ends; the fallback poll steps without notifications.
func TestWatchBoundsAndPoll(t *testing.T) {
	var steps atomic.Int32
	start := time.Now()
	err := changefeed.Watch(context.Background(), nil, "run:1", changefeed.WatchOptions{Poll: 20 * time.Millisecond, MaxDuration: 300 * time.Millisecond},
		func(context.Context) (bool, error) { steps.Add(1); return false, nil })
	if !errors.Is(err, changefeed.ErrMaxDuration) {
		t.Fatalf("Watch = %v, want ErrMaxDuration", err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("the watch ended after %s, before its 300ms bound", took)
	}
	if steps.Load() < 2 {
		t.Errorf("%d steps in 300ms with a 20ms fallback poll, want the poll to step again", steps.Load())
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = changefeed.Watch(ctx, changefeed.New(), "run:1", changefeed.WatchOptions{Poll: time.Hour},
		func(context.Context) (bool, error) { return false, nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Watch with a cancelled context = %v, want context.Canceled", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s never happened within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
