package outbox_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/outboxtest"
)

// The retry delay of a failed publish, computed per row by the database, is
// base * 2^(attempts before the failure), capped at Max, times a jitter in
// [0.5, 1): every delay stays inside that window, the capped ones never
// exceed Max, and the jitter really spreads the delays over the window
// (rows failed together do not retry together).
func TestMarkFailedBackoffIsJitteredAndCapped(t *testing.T) {
	const perGroup = 200
	b := outbox.Backoff{Base: 100 * time.Millisecond, Max: 2 * time.Second}
	groups := []struct {
		attempts int           // before the failure
		window   time.Duration // the un-jittered delay: min(Max, Base * 2^attempts)
	}{
		{0, 100 * time.Millisecond},
		{3, 800 * time.Millisecond},
		{4, 1600 * time.Millisecond},
		{5, 2 * time.Second}, // 3.2s capped
		{30, 2 * time.Second},
	}
	ctx := context.Background()
	db := infratest.NewMySQLDatabase(t, schema.Shard)
	repo := outbox.NewRepo("shard-0", db.DB)
	if _, err := outboxtest.Fill(ctx, db.DB, "shard-0", 900000, perGroup*len(groups)); err != nil {
		t.Fatal(err)
	}
	c, err := repo.Claim(ctx, perGroup*len(groups), time.Minute)
	if err != nil || len(c.Rows) != perGroup*len(groups) {
		t.Fatalf("claim: %d rows, %v", len(c.Rows), err)
	}
	ids := make([]int64, len(c.Rows))
	for i, r := range c.Rows {
		ids[i] = r.ID
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for g, gr := range groups {
		lo, hi := ids[g*perGroup], ids[(g+1)*perGroup-1]
		if _, err := db.DB.ExecContext(ctx, "UPDATE outbox_event SET attempts = ? WHERE id BETWEEN ? AND ?", gr.attempts, lo, hi); err != nil {
			t.Fatal(err)
		}
	}

	before := time.Now().UTC().Truncate(time.Millisecond)
	failed, parked, err := repo.MarkFailed(ctx, c.Token, ids, "broker unreachable (injected)", 1000, b)
	after := time.Now().UTC()
	if err != nil || failed != int64(len(ids)) || parked != 0 {
		t.Fatalf("MarkFailed = %d failed, %d parked, %v; want %d failed", failed, parked, err, len(ids))
	}

	// DATETIME(3) rounds to the millisecond.
	const tolerance = time.Millisecond
	for g, gr := range groups {
		t.Run(fmt.Sprintf("attempts=%d", gr.attempts), func(t *testing.T) {
			rows, err := db.DB.QueryContext(ctx, "SELECT due_time, attempts FROM outbox_event WHERE id BETWEEN ? AND ? ORDER BY id",
				ids[g*perGroup], ids[(g+1)*perGroup-1])
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			minF, maxF := 2.0, 0.0
			distinct := map[time.Time]bool{}
			for rows.Next() {
				var due time.Time
				var attempts int
				if err := rows.Scan(&due, &attempts); err != nil {
					t.Fatal(err)
				}
				if attempts != gr.attempts+1 {
					t.Errorf("attempts %d after a failure, want %d", attempts, gr.attempts+1)
				}
				// The delay was added to a clock reading between before and after.
				longest, shortest := due.Sub(before), due.Sub(after)
				if longest < gr.window/2-tolerance || shortest >= gr.window+tolerance {
					t.Errorf("delay in [%s, %s], outside the jitter window [%s, %s)", shortest, longest, gr.window/2, gr.window)
				}
				if shortest > b.Max+tolerance {
					t.Errorf("delay of at least %s exceeds the cap %s", shortest, b.Max)
				}
				f := float64(due.Sub(before)) / float64(gr.window)
				minF, maxF = min(minF, f), max(maxF, f)
				distinct[due] = true
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			// 200 uniform draws over [0.5, 1): both ends of the window are
			// reached (a miss has probability 0.8^200) and the delays differ.
			// Only on windows long enough for the statement's own duration
			// (after - before) not to blur the fractions.
			if gr.window < 800*time.Millisecond {
				return
			}
			if minF > 0.6 || maxF < 0.9 {
				t.Errorf("delays span %.3f-%.3f of the window, want the jitter to cover [0.5, 1) (below 0.6 and above 0.9)", minF, maxF)
			}
			if want := perGroup / 4; len(distinct) < want {
				t.Errorf("%d distinct retry times among %d rows, want at least %d", len(distinct), perGroup, want)
			}
		})
	}
}

// Claim slots bound the claim loops of a shard across relay instances: with
// two slots a third session stands by until a holder releases its slot, dies
// (its connection closes) or idles past its wait_timeout (a vanished host).
func TestClaimSlotsAreExclusiveAndTakenOver(t *testing.T) {
	ctx := context.Background()
	db := infratest.NewMySQLDatabase(t, schema.Shard)
	repo := outbox.NewRepo("shard-0", db.DB)
	open := func(idle time.Duration) *outbox.SlotSession {
		t.Helper()
		s, err := repo.OpenSlotSession(ctx, idle)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(ctx) })
		return s
	}
	take := func(s *outbox.SlotSession) bool {
		t.Helper()
		ok, err := s.Take(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	a, b, c := open(time.Minute), open(2*time.Second), open(time.Minute)
	if !take(a) || !take(b) {
		t.Fatal("two sessions could not take the two free slots")
	}
	if a.Slot() == b.Slot() {
		t.Fatalf("two sessions hold slot %d", a.Slot())
	}
	if take(c) {
		t.Fatal("a third session took a slot while both were held")
	}
	if err := a.Check(ctx); err != nil {
		t.Errorf("holder's check: %v", err)
	}

	// Released: taken over at once.
	freed := a.Slot()
	a.Close(ctx)
	if !take(c) || c.Slot() != freed {
		t.Fatalf("after a release the standby holds slot %d, want %d", c.Slot(), freed)
	}

	// A holder that vanished without closing (idle past its 2s wait_timeout):
	// the server drops its session and the slot with it.
	d := open(time.Minute)
	if take(d) {
		t.Fatal("a slot was free while both were held")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !take(d) {
		if time.Now().After(deadline) {
			t.Fatal("the slot of an idle holder was never released")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := b.Check(ctx); err == nil {
		t.Error("the dropped holder still believes it holds its slot")
	}
}

// A standby session waits for a slot in one blocking GET_LOCK instead of
// polling: it takes the slot the moment its holder releases it (well before
// its wait ends), gives up with false when nobody releases within the wait,
// and a cancelled context ends the wait at once (the driver closes the
// connection) without leaving the slot taken.
func TestTakeWaitingBlocksUntilTheSlotIsReleased(t *testing.T) {
	ctx := context.Background()
	db := infratest.NewMySQLDatabase(t, schema.Shard)
	repo := outbox.NewRepo("shard-0", db.DB)
	open := func() *outbox.SlotSession {
		t.Helper()
		s, err := repo.OpenSlotSession(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(ctx) })
		return s
	}
	holder := open()
	if ok, err := holder.Take(ctx, 1); err != nil || !ok {
		t.Fatalf("holder: Take = %v, %v", ok, err)
	}

	// Nobody releases: false after the wait (whole seconds: 1s), not before.
	standby := open()
	start := time.Now()
	ok, err := standby.TakeWaiting(ctx, 1, 0, time.Second)
	if err != nil || ok {
		t.Fatalf("standby with the slot held: TakeWaiting = %v, %v; want false, nil", ok, err)
	}
	if took := time.Since(start); took < 900*time.Millisecond {
		t.Errorf("TakeWaiting gave up after %s, want it to wait its whole second", took)
	}

	// Released during a long wait: taken then, not at the wait's end.
	const long = 60 * time.Second
	type result struct {
		ok  bool
		err error
		at  time.Time
	}
	got := make(chan result, 1)
	go func() {
		ok, err := standby.TakeWaiting(ctx, 1, 0, long)
		got <- result{ok, err, time.Now()}
	}()
	db.WaitRunning(t, "SELECT GET_LOCK(", 1, 10*time.Second)
	released := time.Now()
	holder.Close(ctx)
	select {
	case r := <-got:
		if r.err != nil || !r.ok {
			t.Fatalf("standby after the release: TakeWaiting = %v, %v; want true", r.ok, r.err)
		}
		if standby.Slot() != 0 {
			t.Errorf("standby holds slot %d, want 0", standby.Slot())
		}
		if lag := r.at.Sub(released); lag > long/2 {
			t.Errorf("the standby took the slot %s after its release", lag)
		}
	case <-time.After(long / 2):
		t.Fatalf("the standby still waits %s after the holder released the slot", long/2)
	}

	// Cancelled while waiting: returns at once with the context's error.
	waiter := open()
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		ok, err := waiter.TakeWaiting(cctx, 1, 0, long)
		if ok {
			err = fmt.Errorf("took a held slot")
		}
		errc <- err
	}()
	db.WaitRunning(t, "SELECT GET_LOCK(", 1, 10*time.Second)
	cancel()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("a cancelled wait returned no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled wait did not return within 10s (of a 60s wait)")
	}
	if err := standby.Check(ctx); err != nil {
		t.Errorf("the holder lost its slot to a cancelled waiter: %v", err)
	}
}
