// Package idempotency makes a control call with a client-chosen request_id
// happen at most once: StartReconciliationRun, ApproveRepair, CancelRepair,
// VerifyRepair, ApproveRebuild, CancelRebuild and ReplayParkedEvents keep
// their keys in the control database's control_request table (control
// migration 0010), one row per (method, request_id).
//
// Do reserves the key (an INSERT: the row is IN_PROGRESS under a lease),
// acts, and stores the marshalled response (DONE). A retry with the same
// request_id and the same request (the same fields and the same caller)
// gets the stored response and acts no more; the same request_id with a
// different request is apierr.ErrRequestReused (FAILED_PRECONDITION,
// REQUEST_ID_REUSED) and changes nothing; a call whose key another call is
// still answering waits up to Options.Wait for its answer, then is ABORTED
// with REQUEST_IN_PROGRESS (RetryInfo 1 s).
//
// A refused call (INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION, ...: it
// did nothing) releases its key, so a retry decides again. A call that
// failed otherwise, or whose server crashed between acting and storing the
// response, may have acted: its reservation is taken over by the next call
// with the key once its lease expired (at once after a failure), and that
// call acts with Attempt.Retry set. The action must then recognise its own
// earlier effect: the callers use the reservation's Token (kept across
// takeovers) as the id of what they create, or accept the state their
// action leads to (an approval by the same approver, a cancellation) as
// done. An empty request_id is not idempotent: Do simply acts.
package idempotency

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
)

// Defaults of Options.
const (
	// DefaultLease is how long a reservation is held before another call
	// may take it over; the action runs under a deadline shorter than it.
	DefaultLease = 2 * time.Minute
	// DefaultWait is how long a call waits for another call answering the
	// same key before it is REQUEST_IN_PROGRESS.
	DefaultWait = 2 * time.Second
	// poll is how often a waiting call looks at the key again.
	poll = 50 * time.Millisecond
)

// States of a control_request row.
const (
	stateInProgress = "IN_PROGRESS"
	stateDone       = "DONE"
)

// Options tune a Store.
type Options struct {
	// Lease (default DefaultLease): a reservation older than this whose
	// call has not answered is taken over by the next call with its key.
	Lease time.Duration
	// Wait (default DefaultWait): how long a duplicate waits for the first
	// call's answer before REQUEST_IN_PROGRESS.
	Wait time.Duration
	// Log receives the failures to store a response (default slog.Default).
	Log *slog.Logger
}

// Store keeps the idempotency keys of the control calls.
type Store struct {
	db    *sql.DB
	lease time.Duration
	wait  time.Duration
	log   *slog.Logger
}

// New returns a Store over the control database.
func New(db *sql.DB, o Options) *Store {
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Wait <= 0 {
		o.Wait = DefaultWait
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Store{db: db, lease: o.Lease, wait: o.Wait, log: o.Log}
}

// Request is a request message with an optional request_id field.
type Request interface {
	proto.Message
	GetRequestId() string
}

// Attempt is what an action knows about its key.
type Attempt struct {
	// Token identifies the reservation (32 hex characters); a call that
	// takes over an expired reservation gets the same token. Empty without
	// a request_id.
	Token string
	// Retry is set when an earlier call with this key may have acted (it
	// failed, or its server crashed, before storing its response).
	Retry bool
}

// Do answers req once per (method, request_id): it runs act for a new key
// (or one taken over, with Attempt.Retry) and stores its response, and
// returns the stored response for a retry of the same request by the same
// caller. See the package documentation for the errors.
func Do[R proto.Message](ctx context.Context, s *Store, method, caller string, req Request, act func(context.Context, Attempt) (R, error)) (R, error) {
	var zero R
	if s == nil || req.GetRequestId() == "" {
		return act(ctx, Attempt{})
	}
	h, err := hashRequest(method, caller, req)
	if err != nil {
		return zero, err
	}
	k := key{method: method, id: req.GetRequestId(), caller: caller, hash: h}
	r, stored, err := s.reserve(ctx, k)
	if err != nil {
		return zero, err
	}
	if stored != nil {
		resp := zero.ProtoReflect().New().Interface().(R) //nolint:forcetypeassert // New of R's own type is an R
		if err := proto.Unmarshal(stored.bytes, resp); err != nil {
			return zero, fmt.Errorf("reading the stored response of request %q of %s: %w", k.id, method, err)
		}
		return resp, nil
	}
	// The action ends before the lease does, so a live call is never taken over.
	actCtx, cancel := context.WithTimeout(ctx, s.lease-s.lease/10)
	resp, err := act(actCtx, r.Attempt)
	cancel()
	keep := context.WithoutCancel(ctx)
	if err != nil {
		if rerr := s.release(keep, k, r.owner, refused(err)); rerr != nil {
			s.log.WarnContext(ctx, "releasing an idempotency key", "method", method, "request_id", k.id, "err", rerr)
		}
		return zero, err
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(resp)
	if err == nil {
		err = s.finish(keep, k, r.owner, b)
	}
	if err != nil {
		// The call acted: answer it. A retry takes the reservation over
		// once its lease expires and recognises the action (Attempt.Retry).
		s.log.WarnContext(ctx, "storing the response of an idempotent call", "method", method, "request_id", k.id, "err", err)
	}
	return resp, nil
}

type key struct{ method, id, caller, hash string }

type reservation struct {
	Attempt
	owner string
}

type storedResponse struct{ bytes []byte }

// hashRequest is the sha256 of the method, the caller and req without its
// request_id, deterministically marshalled.
func hashRequest(method, caller string, req Request) (string, error) {
	c := proto.Clone(req)
	m := c.ProtoReflect()
	if fd := m.Descriptor().Fields().ByName(protoreflect.Name("request_id")); fd != nil {
		m.Clear(fd)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("hashing request of %s: %w", method, err)
	}
	sum := sha256.New()
	fmt.Fprintf(sum, "v1\x00%s\x00%s\x00", method, caller)
	sum.Write(b)
	return hex.EncodeToString(sum.Sum(nil)), nil
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// refused reports an error that says the call did nothing: its key is
// released so that a retry decides again.
func refused(err error) bool {
	switch apierr.Code(err) {
	case codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.FailedPrecondition, codes.PermissionDenied,
		codes.Unauthenticated, codes.ResourceExhausted, codes.OutOfRange, codes.Unimplemented:
		return true
	}
	return false
}

// ErrInProgress is the status of a call whose key another call is still
// answering: ABORTED, REQUEST_IN_PROGRESS, with RetryInfo.
var ErrInProgress = apierr.NewReason(apierr.Aborted, apierr.RequestInProgress, "a call with this request_id is still being answered; send the same request again")

// reserve inserts k IN_PROGRESS, takes over an expired reservation of k,
// or returns k's stored response; it waits up to s.wait for another call
// answering k.
func (s *Store) reserve(ctx context.Context, k key) (reservation, *storedResponse, error) {
	deadline := time.Now().Add(s.wait)
	for {
		r := reservation{Attempt: Attempt{Token: newID()}, owner: newID()}
		_, err := s.db.ExecContext(ctx, `INSERT INTO control_request (method, request_id, request_hash, caller, state, token, owner, attempts, lease_expire,
			create_time, update_time) VALUES (?, ?, ?, ?, ?, ?, ?, 1, DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND), UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`,
			k.method, k.id, k.hash, clip(k.caller, 128), stateInProgress, r.Token, r.owner, s.lease.Microseconds())
		if err == nil {
			return r, nil, nil
		}
		if !mysqldb.IsErrorNumber(err, 1062) {
			return reservation{}, nil, fmt.Errorf("reserving request %q of %s: %w", k.id, k.method, err)
		}
		var (
			hash, state, token, owner string
			resp                      []byte
			expired                   bool
		)
		err = s.db.QueryRowContext(ctx, `SELECT request_hash, state, token, owner, response, lease_expire < UTC_TIMESTAMP(3)
			FROM control_request WHERE method = ? AND request_id = ?`, k.method, k.id).Scan(&hash, &state, &token, &owner, &resp, &expired)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			continue // released meanwhile: reserve again
		case err != nil:
			return reservation{}, nil, fmt.Errorf("reading request %q of %s: %w", k.id, k.method, err)
		case hash != k.hash:
			return reservation{}, nil, fmt.Errorf("%w: request_id %q of %s", apierr.ErrRequestReused, k.id, k.method)
		case state == stateDone:
			if resp == nil {
				resp = []byte{}
			}
			return reservation{}, &storedResponse{bytes: resp}, nil
		case expired:
			r := reservation{Attempt: Attempt{Token: token, Retry: true}, owner: newID()}
			res, err := s.db.ExecContext(ctx, `UPDATE control_request SET owner = ?, attempts = attempts + 1,
				lease_expire = DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND), update_time = UTC_TIMESTAMP(3)
				WHERE method = ? AND request_id = ? AND state = ? AND owner = ? AND lease_expire < UTC_TIMESTAMP(3)`,
				r.owner, s.lease.Microseconds(), k.method, k.id, stateInProgress, owner)
			if err != nil {
				return reservation{}, nil, fmt.Errorf("taking over request %q of %s: %w", k.id, k.method, err)
			}
			if n, err := res.RowsAffected(); err == nil && n == 1 {
				return r, nil, nil
			}
			continue // another call took it over first
		}
		if !time.Now().Before(deadline) {
			return reservation{}, nil, fmt.Errorf("%w (request_id %q of %s)", ErrInProgress, k.id, k.method)
		}
		select {
		case <-ctx.Done():
			return reservation{}, nil, fmt.Errorf("waiting for request %q of %s: %w", k.id, k.method, ctx.Err())
		case <-time.After(poll):
		}
	}
}

// finish stores the response of the reservation owner holds.
func (s *Store) finish(ctx context.Context, k key, owner string, resp []byte) error {
	res, err := s.db.ExecContext(ctx, `UPDATE control_request SET state = ?, response = ?, update_time = UTC_TIMESTAMP(3)
		WHERE method = ? AND request_id = ? AND state = ? AND owner = ?`, stateDone, resp, k.method, k.id, stateInProgress, owner)
	if err != nil {
		return fmt.Errorf("storing the response of request %q of %s: %w", k.id, k.method, err)
	}
	if n, err := res.RowsAffected(); err == nil && n != 1 {
		return fmt.Errorf("storing the response of request %q of %s: another call took its reservation over", k.id, k.method)
	}
	return nil
}

// release gives a reservation up after its call failed: removed when the
// call was refused (it did nothing), else expired at once, so the next call
// with the key takes it over as a retry.
func (s *Store) release(ctx context.Context, k key, owner string, remove bool) error {
	q := `UPDATE control_request SET lease_expire = DATE_SUB(UTC_TIMESTAMP(3), INTERVAL 1 SECOND), update_time = UTC_TIMESTAMP(3)
		WHERE method = ? AND request_id = ? AND state = ? AND owner = ?`
	if remove {
		q = "DELETE FROM control_request WHERE method = ? AND request_id = ? AND state = ? AND owner = ?"
	}
	if _, err := s.db.ExecContext(ctx, q, k.method, k.id, stateInProgress, owner); err != nil {
		return fmt.Errorf("releasing request %q of %s: %w", k.id, k.method, err)
	}
	return nil
}

// Purge removes at most batch keys created before cutoff, oldest first (a
// range of control_request.idx_create_time), and returns how many it
// removed: the retention worker's purge, with the write path's retention of
// idempotency keys (at least the clients' retry window).
func (s *Store) Purge(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	res, err := s.db.ExecContext(ctx, "DELETE FROM control_request WHERE create_time < ? ORDER BY create_time LIMIT ?", cutoff.UTC(), batch)
	if err != nil {
		return 0, fmt.Errorf("purging control_request rows older than %s: %w", cutoff.UTC().Format(time.RFC3339), err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("purging control_request rows: %w", err)
	}
	return n, nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
