package idempotency

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// counter is an action that counts its calls and answers the repair
// "r-<n>" of its n-th call, recording the attempts it was given.
type counter struct {
	mu       sync.Mutex
	n        int
	attempts []Attempt
	err      error         // returned instead of an answer while set
	hold     chan struct{} // when set, the action waits for it to close
}

func (c *counter) act(ctx context.Context, a Attempt) (*fitnessv1.CancelRepairResponse, error) {
	c.mu.Lock()
	c.n++
	n, hold, err := c.n, c.hold, c.err
	c.attempts = append(c.attempts, a)
	c.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	return &fitnessv1.CancelRepairResponse{Repair: &fitnessv1.Repair{RepairId: fmt.Sprintf("r-%d", n), State: fitnessv1.RepairState_REPAIR_STATE_CANCELLED}}, nil
}

func (c *counter) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func newStore(t *testing.T, o Options) *Store {
	t.Helper()
	d := infratest.NewMySQLDatabase(t, schema.Control)
	t.Logf("engine %s", infratest.MySQLEngine())
	return New(d.DB, o)
}

func req(id, reason string) *fitnessv1.CancelRepairRequest {
	return &fitnessv1.CancelRepairRequest{RepairId: "rep-1", Reason: reason, RequestId: id}
}

// reasonOf returns the status code and ErrorInfo reason err leaves a server with.
func reasonOf(err error) (codes.Code, string, *errdetails.RetryInfo) {
	st := apierr.Status(err)
	s, _ := status.FromError(st)
	var reason string
	var retry *errdetails.RetryInfo
	for _, d := range s.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			reason = d.GetReason()
		case *errdetails.RetryInfo:
			retry = d
		}
	}
	return s.Code(), reason, retry
}

func row(t *testing.T, s *Store, method, id string) (state string, attempts int, ok bool) {
	t.Helper()
	err := s.db.QueryRowContext(context.Background(), "SELECT state, attempts FROM control_request WHERE method = ? AND request_id = ?", method, id).
		Scan(&state, &attempts)
	if err != nil {
		return "", 0, false
	}
	return state, attempts, true
}

func TestRetryGetsTheFirstAnswer(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	var c counter
	first, err := Do(ctx, s, "CancelRepair", "otto", req("k-1", "INC-1"), c.act)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		again, err := Do(ctx, s, "CancelRepair", "otto", req("k-1", "INC-1"), c.act)
		if err != nil || !proto.Equal(first, again) {
			t.Fatalf("retry = %v, %v; want the first answer %v", again, err, first)
		}
	}
	if c.calls() != 1 || c.attempts[0].Retry || len(c.attempts[0].Token) != 32 {
		t.Errorf("acted %d times, attempts %+v; want once, not a retry, with a token", c.calls(), c.attempts)
	}
	if state, attempts, _ := row(t, s, "CancelRepair", "k-1"); state != stateDone || attempts != 1 {
		t.Errorf("row state %q attempts %d, want DONE 1", state, attempts)
	}

	// Keys compare byte for byte: another case is another key.
	if _, err := Do(ctx, s, "CancelRepair", "otto", req("K-1", "INC-1"), c.act); err != nil || c.calls() != 2 {
		t.Fatalf("K-1 after k-1: %v, %d calls; want it to act", err, c.calls())
	}
	// The same id of another method is another key.
	if _, err := Do(ctx, s, "ApproveRepair", "otto", req("k-1", "INC-1"), c.act); err != nil || c.calls() != 3 {
		t.Errorf("the same id for another method: %v, %d calls; want it to act", err, c.calls())
	}
	// Without a request_id every call acts, and nothing is kept.
	for range 2 {
		if _, err := Do(ctx, s, "CancelRepair", "otto", req("", "INC-1"), c.act); err != nil {
			t.Fatal(err)
		}
	}
	if c.calls() != 5 {
		t.Errorf("calls without a request_id acted %d times in all, want 5", c.calls())
	}
	// A nil store (a service built without one) simply acts.
	if _, err := Do(ctx, (*Store)(nil), "CancelRepair", "otto", req("k-1", "INC-1"), c.act); err != nil || c.calls() != 6 {
		t.Errorf("nil store: %v, %d calls", err, c.calls())
	}
}

func TestReusedForAnotherRequest(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	var c counter
	if _, err := Do(ctx, s, "CancelRepair", "otto", req("k-1", "INC-1"), c.act); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"another reason": func() error {
			_, err := Do(ctx, s, "CancelRepair", "otto", req("k-1", "INC-2"), c.act)
			return err
		},
		"another caller": func() error {
			_, err := Do(ctx, s, "CancelRepair", "olga", req("k-1", "INC-1"), c.act)
			return err
		},
	} {
		err := call()
		if !errors.Is(err, apierr.ErrRequestReused) {
			t.Errorf("%s: %v, want ErrRequestReused", name, err)
		}
		if code, reason, _ := reasonOf(err); code != codes.FailedPrecondition || reason != string(apierr.RequestIDReused) {
			t.Errorf("%s: %s %s, want FAILED_PRECONDITION REQUEST_ID_REUSED", name, code, reason)
		}
	}
	if c.calls() != 1 {
		t.Errorf("acted %d times, want once", c.calls())
	}
}

// Concurrent calls with one key: one acts, the others get its answer (they
// wait for it), or REQUEST_IN_PROGRESS with RetryInfo when it takes longer
// than their wait.
func TestConcurrentDuplicates(t *testing.T) {
	s := newStore(t, Options{Wait: 5 * time.Second})
	ctx := context.Background()
	c := counter{hold: make(chan struct{})}
	const n = 8
	var wg sync.WaitGroup
	answers := make([]*fitnessv1.CancelRepairResponse, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], errs[i] = Do(ctx, s, "CancelRepair", "otto", req("k-1", "INC-1"), c.act)
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.calls() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first call never acted")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A caller with a short wait, while the first still acts.
	short := New(s.db, Options{Wait: 100 * time.Millisecond})
	_, err := Do(ctx, short, "CancelRepair", "otto", req("k-1", "INC-1"), c.act)
	if code, reason, retry := reasonOf(err); code != codes.Aborted || reason != string(apierr.RequestInProgress) || retry == nil {
		t.Errorf("a duplicate while the first call acts: %s %s retry %v (%v); want ABORTED REQUEST_IN_PROGRESS with RetryInfo", code, reason, retry, err)
	}
	close(c.hold)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || answers[i].GetRepair().GetRepairId() != "r-1" {
			t.Errorf("call %d = %v, %v; want the one answer r-1", i, answers[i], errs[i])
		}
	}
	if c.calls() != 1 {
		t.Errorf("acted %d times, want once", c.calls())
	}
}

// A refused call did nothing: its key is released and a retry decides
// again. A call that failed otherwise may have acted: the next call takes
// its reservation over as a retry, with its token.
func TestFailedCalls(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	c := counter{err: apierr.WithReason(apierr.FailedPrecondition.Errorf("repair rep-1 is VERIFIED"), apierr.InvalidState)}
	if _, err := Do(ctx, s, "CancelRepair", "otto", req("k-1", "INC-1"), c.act); apierr.Code(err) != codes.FailedPrecondition {
		t.Fatalf("refused call: %v", err)
	}
	if _, _, ok := row(t, s, "CancelRepair", "k-1"); ok {
		t.Error("a refused call left its key")
	}
	c.err = errors.New("connection reset by peer")
	if _, err := Do(ctx, s, "CancelRepair", "otto", req("k-1", "INC-1"), c.act); err == nil {
		t.Fatal("failed call succeeded")
	}
	c.err = nil
	got, err := Do(ctx, s, "CancelRepair", "otto", req("k-1", "INC-1"), c.act)
	if err != nil || got.GetRepair().GetRepairId() != "r-3" {
		t.Fatalf("retry after a failure = %v, %v", got, err)
	}
	if a := c.attempts; a[1].Retry || !a[2].Retry || a[2].Token != a[1].Token || a[0].Token == a[1].Token {
		t.Errorf("attempts %+v: want the retry after the failure to take over the failed call's reservation (same token, Retry)", a)
	}
	if state, attempts, _ := row(t, s, "CancelRepair", "k-1"); state != stateDone || attempts != 2 {
		t.Errorf("row state %q attempts %d, want DONE 2", state, attempts)
	}
}

// A reservation whose call crashed (IN_PROGRESS, lease expired) is taken
// over by the next call with the key, as a retry with the same token; one
// whose lease still runs is REQUEST_IN_PROGRESS.
func TestCrashedReservationIsTakenOver(t *testing.T) {
	s := newStore(t, Options{Wait: 100 * time.Millisecond})
	ctx := context.Background()
	h, err := hashRequest("CancelRepair", "otto", req("k-1", "INC-1"))
	if err != nil {
		t.Fatal(err)
	}
	insert := func(id, lease string) {
		t.Helper()
		if _, err := s.db.ExecContext(ctx, `INSERT INTO control_request (method, request_id, request_hash, caller, state, token, owner, lease_expire, create_time, update_time)
			VALUES ('CancelRepair', ?, ?, 'otto', 'IN_PROGRESS', REPEAT('a', 32), REPEAT('b', 32), DATE_ADD(UTC_TIMESTAMP(3), INTERVAL `+lease+`), UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`,
			id, h); err != nil {
			t.Fatal(err)
		}
	}
	insert("k-1", "-5 SECOND")
	var c counter
	got, err := Do(ctx, s, "CancelRepair", "otto", req("k-1", "INC-1"), c.act)
	if err != nil || got.GetRepair().GetRepairId() != "r-1" {
		t.Fatalf("call over a crashed reservation = %v, %v", got, err)
	}
	if a := c.attempts; len(a) != 1 || !a[0].Retry || a[0].Token != "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
		t.Errorf("attempts %+v: want one retry with the crashed reservation's token", a)
	}
	if state, attempts, _ := row(t, s, "CancelRepair", "k-1"); state != stateDone || attempts != 2 {
		t.Errorf("row state %q attempts %d, want DONE 2", state, attempts)
	}

	h2, _ := hashRequest("CancelRepair", "otto", req("k-2", "INC-1"))
	if h2 != h {
		t.Fatal("the request hash depends on the request_id")
	}
	insert("k-2", "1 MINUTE")
	_, err = Do(ctx, s, "CancelRepair", "otto", req("k-2", "INC-1"), c.act)
	if code, reason, _ := reasonOf(err); code != codes.Aborted || reason != string(apierr.RequestInProgress) {
		t.Errorf("call over a live reservation: %s %s (%v), want ABORTED REQUEST_IN_PROGRESS", code, reason, err)
	}
	if c.calls() != 1 {
		t.Errorf("acted %d times, want once", c.calls())
	}
}

// Concurrent calls over one crashed reservation: exactly one takes it over.
func TestConcurrentTakeOver(t *testing.T) {
	s := newStore(t, Options{Wait: 5 * time.Second})
	ctx := context.Background()
	h, _ := hashRequest("CancelRepair", "otto", req("k-1", "INC-1"))
	if _, err := s.db.ExecContext(ctx, `INSERT INTO control_request (method, request_id, request_hash, caller, state, token, owner, lease_expire, create_time, update_time)
		VALUES ('CancelRepair', 'k-1', ?, 'otto', 'IN_PROGRESS', REPEAT('a', 32), REPEAT('b', 32), DATE_SUB(UTC_TIMESTAMP(3), INTERVAL 1 SECOND), UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`, h); err != nil {
		t.Fatal(err)
	}
	var c counter
	var wg sync.WaitGroup
	var ok atomic.Int32
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, err := Do(ctx, s, "CancelRepair", "otto", req("k-1", "INC-1"), c.act); err == nil && got.GetRepair().GetRepairId() == "r-1" {
				ok.Add(1)
			} else {
				t.Errorf("call = %v, %v", got, err)
			}
		}()
	}
	wg.Wait()
	if c.calls() != 1 || ok.Load() != 6 {
		t.Errorf("acted %d times, %d calls answered r-1; want one action, six answers", c.calls(), ok.Load())
	}
}

func TestPurge(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	var c counter
	for _, id := range []string{"k-1", "k-2", "k-3"} {
		if _, err := Do(ctx, s, "CancelRepair", "otto", req(id, "INC-1"), c.act); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.db.ExecContext(ctx, "UPDATE control_request SET create_time = DATE_SUB(create_time, INTERVAL 2 DAY) WHERE request_id <> 'k-3'"); err != nil {
		t.Fatal(err)
	}
	cutoff := time.Now().Add(-24 * time.Hour)
	var got []int64
	for {
		n, err := s.Purge(ctx, cutoff, 1)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
		if n == 0 {
			break
		}
	}
	if len(got) != 3 || got[0] != 1 || got[1] != 1 {
		t.Errorf("removed per call %v, want [1 1 0]", got)
	}
	if _, _, ok := row(t, s, "CancelRepair", "k-3"); !ok {
		t.Error("the newer key was purged")
	}
	// A purged key is a new key.
	if _, err := Do(ctx, s, "CancelRepair", "otto", req("k-1", "INC-2"), c.act); err != nil || c.calls() != 4 {
		t.Errorf("a purged key reused: %v, %d calls", err, c.calls())
	}
}
