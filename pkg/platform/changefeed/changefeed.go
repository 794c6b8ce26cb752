// Package changefeed wakes, in this process, whoever watches a resource
// when the process changes it, so a watch waits for a change instead of
// reading the database on a tight poll. It carries no data: a woken watcher
// reads the resource again. Changes made by other processes (other replicas
// of a server) are not seen here; Watch therefore also reads on a slower
// fallback poll.
//
// Keys are chosen by the store that owns the resource ("repair:<id>",
// "run:<id>"): the store calls Notify after every write of the resource,
// and the watchers Subscribe to that key.
package changefeed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/resultsync/resultsync/pkg/platform/config"
)

// Feed delivers change notifications by key. The zero value is not usable;
// a nil *Feed is: Notify does nothing and a subscription never fires.
type Feed struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

// New returns an empty feed.
func New() *Feed { return &Feed{subs: map[string]map[chan struct{}]struct{}{}} }

// Subscribe returns a channel that receives a value after Notify(key) (a
// burst of notifications before the receiver reads may arrive as one), and
// a cancel that must be called when the subscriber is done.
func (f *Feed) Subscribe(key string) (<-chan struct{}, func()) {
	if f == nil {
		return nil, func() {}
	}
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs[key] == nil {
		f.subs[key] = map[chan struct{}]struct{}{}
	}
	f.subs[key][ch] = struct{}{}
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs[key], ch)
		if len(f.subs[key]) == 0 {
			delete(f.subs, key)
		}
	}
}

// Notify wakes every subscriber of key. It never blocks.
func (f *Feed) Notify(key string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs[key] {
		select {
		case ch <- struct{}{}:
		default: // already pending
		}
	}
}

// Subscribers is how many subscriptions key has (for tests and metrics).
func (f *Feed) Subscribers(key string) int {
	if f == nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs[key])
}

// WatchOptions bound a watch.
type WatchOptions struct {
	// Poll is the fallback poll: how often the resource is read when no
	// notification came (it changed in another process). Must be positive.
	Poll time.Duration
	// MinInterval is the least time between two reads when notifications
	// come faster (a busy writer), so a watcher never reads more often
	// than that. 0: no floor.
	MinInterval time.Duration
	// MaxDuration bounds the watch: after it, Watch returns ErrMaxDuration.
	// 0: unbounded.
	MaxDuration time.Duration
}

// ErrMaxDuration ends a watch that reached WatchOptions.MaxDuration.
var ErrMaxDuration = errors.New("watch reached its maximum duration")

// Watch calls step at once, then after each notification of key on f (at
// most every MinInterval) or each Poll without one, until step reports done
// or fails (its error is returned, nil when done), ctx ends (ctx's error),
// or MaxDuration has passed since the start (ErrMaxDuration). It subscribes
// before the first step, so a change between a step's read and the wait is
// not missed.
func Watch(ctx context.Context, f *Feed, key string, o WatchOptions, step func(context.Context) (done bool, err error)) error {
	if o.Poll <= 0 {
		return errors.New("changefeed: watch poll must be positive")
	}
	changed, cancel := f.Subscribe(key)
	defer cancel()
	var bound <-chan time.Time
	if o.MaxDuration > 0 {
		t := time.NewTimer(o.MaxDuration)
		defer t.Stop()
		bound = t.C
	}
	poll := time.NewTimer(o.Poll)
	defer poll.Stop()
	for {
		last := time.Now()
		done, err := step(ctx)
		if err != nil || done {
			return err
		}
		poll.Reset(o.Poll)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-bound:
			return ErrMaxDuration
		case <-poll.C:
			continue
		case <-changed:
		}
		if wait := o.MinInterval - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-bound:
				t.Stop()
				return ErrMaxDuration
			case <-t.C:
			}
		}
	}
}

// DefaultWatchOptions are the servers' defaults: a fallback poll of 2 s
// (changes made by another replica show within it), reads at most every
// 200 ms (the tight poll watches had before, now paid only while the
// resource changes), and streams of at most 30 minutes.
func DefaultWatchOptions() WatchOptions {
	return WatchOptions{Poll: 2 * time.Second, MinInterval: 200 * time.Millisecond, MaxDuration: 30 * time.Minute}
}

// Validate rejects a non-positive poll, a negative floor, and a bound that
// is not positive or is shorter than one poll.
func (o WatchOptions) Validate() error {
	var errs []error
	if o.Poll <= 0 {
		errs = append(errs, fmt.Errorf("watch poll must be positive, got %s", o.Poll))
	}
	if o.MinInterval < 0 {
		errs = append(errs, fmt.Errorf("watch minimum interval must not be negative, got %s", o.MinInterval))
	}
	if o.MaxDuration <= 0 || o.MaxDuration < o.Poll {
		errs = append(errs, fmt.Errorf("watch max duration (%s) must be positive and at least the watch poll (%s)", o.MaxDuration, o.Poll))
	}
	return errors.Join(errs...)
}

// Flags registers --watch-poll and --watch-max-duration (environment
// <envPrefix>_WATCH_POLL, <envPrefix>_WATCH_MAX_DURATION) into o, with the
// DefaultWatchOptions; MinInterval keeps its default.
func (o *WatchOptions) Flags(l *config.Loader, envPrefix string) {
	d := DefaultWatchOptions()
	o.MinInterval = d.MinInterval
	l.Duration(&o.Poll, "watch-poll", envPrefix+"_WATCH_POLL", d.Poll,
		"how often a watch stream reads its resource when this server did not change it (a change made here wakes it at once)")
	l.Duration(&o.MaxDuration, "watch-max-duration", envPrefix+"_WATCH_MAX_DURATION", d.MaxDuration,
		"longest watch stream: then it ends with UNAVAILABLE and the client watches again to resume")
}
