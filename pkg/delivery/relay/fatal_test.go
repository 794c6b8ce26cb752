package relay_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
)

// fakeStore is a shard whose claims fail or succeed as the test says; no
// database is involved (these tests are about the relay's reaction to shard
// errors, which a real server produces in the smoke and outage tests).
type fakeStore struct {
	id string
	// next returns the outcome of the n-th claim (from 1).
	next   func(n int) (outbox.Claim, error)
	claims atomic.Int32
	// markFailed, when set, replaces the FAILED update.
	markFailed func(ctx context.Context) error
	failed     atomic.Int32
}

func (s *fakeStore) ShardID() string { return s.id }

func (s *fakeStore) ClaimBatch(ctx context.Context, _ outbox.ClaimSpec) (outbox.Claim, error) {
	if err := ctx.Err(); err != nil {
		return outbox.Claim{}, err
	}
	return s.next(int(s.claims.Add(1)))
}

func (s *fakeStore) MarkSent(_ context.Context, _ string, ids []int64) (int64, error) {
	return int64(len(ids)), nil
}

func (s *fakeStore) MarkFailed(ctx context.Context, _ string, ids []int64, _ string, _ int, _ outbox.Backoff) (int64, int64, error) {
	s.failed.Add(1)
	if s.markFailed != nil {
		if err := s.markFailed(ctx); err != nil {
			return 0, 0, err
		}
	}
	return int64(len(ids)), 0, nil
}

func always(err error) func(int) (outbox.Claim, error) {
	return func(int) (outbox.Claim, error) { return outbox.Claim{}, err }
}

func mysqlErr(n uint16, msg string) error {
	return fmt.Errorf("claiming on shard: %w", &mysql.MySQLError{Number: n, Message: msg})
}

var (
	errAccessDenied = mysqlErr(1045, "Access denied for user 'nobody'@'127.0.0.1' (using password: YES)")
	errRefused      = fmt.Errorf("claiming on shard: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
)

func fastConfig() relay.Config {
	cfg := testConfig()
	cfg.PollInterval = time.Millisecond
	cfg.FatalClaimFailures = 5
	return cfg
}

// runAsync runs r and returns a channel with Run's result.
func runAsync(t *testing.T, ctx context.Context, r *relay.Relay) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return done
}

// A failure retrying cannot fix, on every shard, ends Run with an error that
// names every shard and keeps the server's own error.
func TestEveryShardRefusingEndsRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"wrong password", errAccessDenied},
		{"no grant on the database", mysqlErr(1044, "Access denied for user 'relay'@'%' to database 'rs_shard_0'")},
		{"no grant on the table", mysqlErr(1142, "SELECT command denied to user 'relay'@'%' for table 'outbox_event'")},
		{"unknown database", mysqlErr(1049, "Unknown database 'rs_shard_9'")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s0 := &fakeStore{id: "shard-0", next: always(tc.err)}
			s1 := &fakeStore{id: "shard-1", next: always(tc.err)}
			r := newRelay(t, fastConfig(), &faultPublisher{}, nil, s0, s1)
			select {
			case err := <-runAsync(t, context.Background(), r):
				if !errors.Is(err, relay.ErrEveryShardRefused) {
					t.Fatalf("Run = %v, want ErrEveryShardRefused", err)
				}
				var me *mysql.MySQLError
				if !errors.As(err, &me) {
					t.Errorf("Run's error %v does not keep the server's error", err)
				}
				for _, want := range []string{"shard-0", "shard-1", tc.err.Error()} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("Run's error %q does not name %q", err, want)
					}
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("Run's error spans lines (it is one log line): %q", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run kept going although every shard refuses the relay")
			}
			for _, s := range []*fakeStore{s0, s1} {
				if n := s.claims.Load(); n < 5 {
					t.Errorf("%s: gave up after %d claims, want at least FatalClaimFailures (5)", s.id, n)
				}
			}
		})
	}
}

// Outages are not terminal: a relay whose shards are all unreachable, or
// fail in any other transient way, keeps retrying until ctx ends, and then
// returns nil.
func TestTransientFailuresNeverEndRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"connection refused", errRefused},
		{"broken connection", fmt.Errorf("claiming: %w", driver.ErrBadConn)},
		{"lock wait timeout", mysqlErr(1205, "Lock wait timeout exceeded")},
		{"server gone", fmt.Errorf("claiming: %w", mysql.ErrInvalidConn)},
		{"statement timeout", fmt.Errorf("claiming: %w", context.DeadlineExceeded)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s0 := &fakeStore{id: "shard-0", next: always(tc.err)}
			s1 := &fakeStore{id: "shard-1", next: always(tc.err)}
			cfg := fastConfig()
			cfg.FatalClaimFailures = 2
			r := newRelay(t, cfg, &faultPublisher{}, nil, s0, s1)
			ctx, cancel := context.WithCancel(context.Background())
			done := runAsync(t, ctx, r)
			deadline := time.Now().Add(10 * time.Second)
			for s0.claims.Load() < 8 || s1.claims.Load() < 8 {
				select {
				case err := <-done:
					t.Fatalf("Run ended during a transient failure: %v", err)
				case <-time.After(5 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					t.Fatalf("only %d/%d claims in 10s", s0.claims.Load(), s1.claims.Load())
				}
			}
			if err := r.ShardErr("shard-0"); !errors.Is(err, tc.err) {
				t.Errorf("ShardErr(shard-0) = %v, want the last claim's error", err)
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run after ctx ended = %v, want nil", err)
			}
		})
	}
}

// One shard refusing the relay is not terminal while another can be relayed:
// the refused shard shows in ShardErr, the other keeps working.
func TestOneShardRefusingKeepsTheOthersGoing(t *testing.T) {
	refused := &fakeStore{id: "shard-0", next: always(errAccessDenied)}
	fine := &fakeStore{id: "shard-1", next: always(nil)}
	r := newRelay(t, fastConfig(), &faultPublisher{}, nil, refused, fine)
	ctx, cancel := context.WithCancel(context.Background())
	done := runAsync(t, ctx, r)
	deadline := time.Now().Add(10 * time.Second)
	for refused.claims.Load() < 10 { // the error backoff doubles: ~1s
		select {
		case err := <-done:
			t.Fatalf("Run ended although shard-1 works: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("too few claims")
		}
	}
	if err := r.ShardErr("shard-0"); !relay.IsPermanent(err) {
		t.Errorf("ShardErr(shard-0) = %v, want the access-denied error", err)
	}
	if err := r.ShardErr("shard-1"); err != nil {
		t.Errorf("ShardErr(shard-1) = %v, want nil", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

// Only consecutive refusals count: a shard that refuses, then is briefly
// unreachable or works, starts counting again.
func TestRefusalsMustBeConsecutive(t *testing.T) {
	var permanentOnly atomic.Bool
	flaky := func(n int) (outbox.Claim, error) {
		if !permanentOnly.Load() && n%3 == 0 {
			return outbox.Claim{}, errRefused // every third claim: transient
		}
		return outbox.Claim{}, errAccessDenied
	}
	s0 := &fakeStore{id: "shard-0", next: flaky}
	s1 := &fakeStore{id: "shard-1", next: flaky}
	cfg := fastConfig()
	cfg.FatalClaimFailures = 3
	r := newRelay(t, cfg, &faultPublisher{}, nil, s0, s1)
	done := runAsync(t, context.Background(), r)
	deadline := time.Now().Add(10 * time.Second)
	for s0.claims.Load() < 9 || s1.claims.Load() < 9 {
		select {
		case err := <-done:
			t.Fatalf("Run ended after refusals that were never 3 in a row: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("too few claims")
		}
	}
	permanentOnly.Store(true)
	select {
	case err := <-done:
		if !errors.Is(err, relay.ErrEveryShardRefused) {
			t.Errorf("Run = %v, want ErrEveryShardRefused once the refusals are consecutive", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not end once every shard refused the relay consecutively")
	}
}

// A negative FatalClaimFailures never gives up.
func TestFatalClaimFailuresDisabled(t *testing.T) {
	s0 := &fakeStore{id: "shard-0", next: always(errAccessDenied)}
	cfg := fastConfig()
	cfg.FatalClaimFailures = -1
	r := newRelay(t, cfg, &faultPublisher{}, nil, s0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := r.Run(ctx); err != nil {
		t.Errorf("Run = %v, want nil (giving up is disabled)", err)
	}
	if n := s0.claims.Load(); n < 6 {
		t.Errorf("only %d claims", n)
	}
}

func TestIsPermanent(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"access denied", errAccessDenied, true},
		{"database access denied", mysqlErr(1044, "denied"), true},
		{"table command denied", mysqlErr(1142, "denied"), true},
		{"unknown database", mysqlErr(1049, "unknown"), true},
		{"missing table", mysqlErr(1146, "doesn't exist"), true},
		{"account locked", mysqlErr(3118, "locked"), true},
		{"deadlock", mysqlErr(1213, "deadlock"), false},
		{"lock wait timeout", mysqlErr(1205, "timeout"), false},
		{"too many connections", mysqlErr(1040, "too many"), false},
		{"connection refused", errRefused, false},
		{"bad connection", driver.ErrBadConn, false},
		{"context", context.Canceled, false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := relay.IsPermanent(tc.err); got != tc.want {
				t.Errorf("IsPermanent(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// hangingPublisher never gets an acknowledgment: it returns only when its
// context ends (like a producer waiting for a broker that does not answer).
type hangingPublisher struct{ started chan struct{} }

func (p *hangingPublisher) Publish(ctx context.Context, msgs []relay.Message) []error {
	close(p.started)
	<-ctx.Done()
	errs := make([]error, len(msgs))
	for i := range errs {
		errs[i] = relay.ErrNoAck
	}
	return errs
}

// Whatever the broker and the shard do with an in-flight batch, Run returns
// within about twice StopTimeout after ctx ends, having tried to write the
// batch's completion; the publish timeout and the completion bound (both
// far longer) do not hold it.
func TestStopTimeoutBoundsAnInFlightBatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		// markFailed is the shard's FAILED update.
		markFailed func(ctx context.Context) error
	}{
		{"broker silent", nil},
		{"broker silent and shard hangs on the completion", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var once sync.Once
			claim := func(int) (outbox.Claim, error) {
				var c outbox.Claim
				once.Do(func() {
					c = outbox.Claim{Token: "t", Lease: time.Now().Add(time.Minute), Rows: []outbox.Row{{ID: 1, EventID: "e", DataID: 1}}}
				})
				return c, nil
			}
			s := &fakeStore{id: "shard-0", next: claim, markFailed: tc.markFailed}
			pub := &hangingPublisher{started: make(chan struct{})}
			cfg := fastConfig()
			cfg.Lease, cfg.PublishTimeout = time.Minute, 30*time.Second
			cfg.StopTimeout = 200 * time.Millisecond
			r := newRelay(t, cfg, pub, nil, s)
			ctx, cancel := context.WithCancel(context.Background())
			done := runAsync(t, ctx, r)
			<-pub.started
			start := time.Now()
			cancel()
			select {
			case err := <-done:
				took := time.Since(start)
				t.Logf("Run returned %s after ctx ended (stop timeout %s)", took, cfg.StopTimeout)
				if err != nil {
					t.Errorf("Run = %v", err)
				}
				if took > 2*cfg.StopTimeout+300*time.Millisecond {
					t.Errorf("Run took %s after ctx ended, want about 2 x %s at most", took, cfg.StopTimeout)
				}
				if s.failed.Load() != 1 {
					t.Errorf("the batch's completion was attempted %d times, want 1", s.failed.Load())
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run held by an in-flight batch")
			}
		})
	}
}
