package relaysvc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/resultsync/resultsync/pkg/delivery/relay"
)

// shardCheck fails when the relay's last cycle on the shard failed (a
// refused claim, a failed completion) or when the shard does not answer a
// ping (unreachable, hung: the relay's own statements may still be waiting).
func shardCheck(lastErr func() error, ping func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := lastErr(); err != nil {
			return fmt.Errorf("last relay cycle: %w", err)
		}
		return ping(ctx)
	}
}

// anyOf passes when at least one check passes; the checks run concurrently.
func anyOf(checks []func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		errs := make([]error, len(checks))
		var wg sync.WaitGroup
		for i, c := range checks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = c(ctx)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err == nil {
				return nil
			}
		}
		return fmt.Errorf("no shard can be relayed: %w", errors.Join(errs...))
	}
}

// brokerCheck fails while a lookup gets no answer from the broker, and while
// the latest publish, within window, got no acknowledgment at all (a broker
// that answers lookups but stores nothing cannot do the relay's job). A
// failed publish older than window is no evidence any more: the next
// successful one, or the window, clears it.
func brokerCheck(lookup func(context.Context) error, last func() relay.Outcome, window time.Duration, now func() time.Time) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := lookup(ctx); err != nil {
			return fmt.Errorf("broker lookup: %w", err)
		}
		if o := last(); o.Err != nil {
			if age := now().Sub(o.At); age < window {
				return fmt.Errorf("the broker answers lookups but acknowledged nothing of the last publish (%s ago): %w",
					age.Round(time.Millisecond), o.Err)
			}
		}
		return nil
	}
}
