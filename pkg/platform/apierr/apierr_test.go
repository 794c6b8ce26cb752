package apierr_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/resultsync/resultsync/pkg/platform/apierr"
)

// conflict is a Detailed error of a domain package: an Aborted with its own
// details.
type conflict struct{ current int64 }

func (e *conflict) Error() string        { return fmt.Sprintf("at version %d", e.current) }
func (e *conflict) Is(target error) bool { return target == apierr.Aborted }
func (e *conflict) StatusDetails() []protoadapt.MessageV1 {
	return []protoadapt.MessageV1{wrapperspb.Int64(e.current)}
}

func badRequest(fields ...string) *errdetails.BadRequest {
	br := &errdetails.BadRequest{}
	for i := 0; i < len(fields); i += 2 {
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: fields[i], Description: fields[i+1]})
	}
	return br
}

// withoutReason is st without its ErrorInfo and RetryInfo (TestReasons
// checks them), after checking it has exactly one ErrorInfo in apierr.Domain.
func withoutReason(t *testing.T, st *status.Status) *status.Status {
	t.Helper()
	out := status.New(st.Code(), st.Message())
	var infos int
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			infos++
			if d.GetDomain() != apierr.Domain {
				t.Errorf("ErrorInfo domain %q, want %q", d.GetDomain(), apierr.Domain)
			}
		case *errdetails.RetryInfo:
		case protoadapt.MessageV1:
			var err error
			if out, err = out.WithDetails(d); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("detail %T", d)
		}
	}
	if infos != 1 {
		t.Errorf("%d ErrorInfo in %v, want 1", infos, st.Proto())
	}
	return out
}

// TestStatus maps every kind, the context errors, statuses, field errors,
// detailed errors, database errors and unknown errors to the code, message
// and details a caller sees, bare and wrapped.
func TestStatus(t *testing.T) {
	errGone := apierr.New(apierr.NotFound, "result 7 not found")
	deadlock := &mysql.MySQLError{Number: 1213, Message: "Deadlock found"}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	passed, _ := status.New(codes.InvalidArgument, "bad").WithDetails(badRequest("a", "b"))
	tests := []struct {
		name    string
		err     error
		code    codes.Code
		msg     string
		details []protoadapt.MessageV1
		inDB    string // the message of StatusIn("control database", err) if not msg
		reason  apierr.Reason
	}{
		// Every kind, by New, by Errorf and wrapped directly.
		{name: "invalid argument", reason: "INVALID_ARGUMENT", err: apierr.New(apierr.InvalidArgument, "bad"), code: codes.InvalidArgument, msg: "bad"},
		{name: "not found sentinel", reason: "NOT_FOUND", err: errGone, code: codes.NotFound, msg: "result 7 not found"},
		{name: "wrapped not found", reason: "NOT_FOUND", err: fmt.Errorf("getting: %w", errGone), code: codes.NotFound, msg: "getting: result 7 not found"},
		{name: "kind wrapped directly", reason: "NOT_FOUND", err: fmt.Errorf("run 9: %w", apierr.NotFound), code: codes.NotFound, msg: "run 9: not found"},
		{name: "already exists", reason: "ALREADY_EXISTS", err: apierr.New(apierr.AlreadyExists, "taken"), code: codes.AlreadyExists, msg: "taken"},
		{name: "failed precondition by Errorf", reason: "FAILED_PRECONDITION", err: apierr.FailedPrecondition.Errorf("run %s is %s", "r1", "RUNNING"), code: codes.FailedPrecondition,
			msg: "failed precondition: run r1 is RUNNING"},
		{name: "request reused", reason: "REQUEST_ID_REUSED", err: fmt.Errorf("%w: request_id %q", apierr.ErrRequestReused, "k1"), code: codes.FailedPrecondition,
			msg: `request_id was already used for a different request: request_id "k1"`},
		{name: "aborted", reason: "ABORTED", err: apierr.New(apierr.Aborted, "version moved"), code: codes.Aborted, msg: "version moved"},
		{name: "unavailable wrapping its cause", reason: "DEPENDENCY_UNAVAILABLE", err: fmt.Errorf("%w: reading: %w", apierr.New(apierr.Unavailable, "dependency unavailable"), refused),
			code: codes.Unavailable, msg: "dependency unavailable: reading: dial tcp: connection refused"},
		{name: "permission denied", reason: "PERMISSION_DENIED", err: apierr.New(apierr.PermissionDenied, "self approval"), code: codes.PermissionDenied, msg: "self approval"},
		{name: "resource exhausted", reason: "RESOURCE_EXHAUSTED", err: apierr.New(apierr.ResourceExhausted, "queue full"), code: codes.ResourceExhausted, msg: "queue full"},

		// Context errors, before any kind they are wrapped with.
		{name: "cancelled", reason: "CANCELLED", err: context.Canceled, code: codes.Canceled, msg: "context canceled"},
		{name: "wrapped cancellation", reason: "CANCELLED", err: fmt.Errorf("reading shard-1: %w", context.Canceled), code: codes.Canceled, msg: "reading shard-1: context canceled"},
		{name: "deadline", reason: "DEADLINE_EXCEEDED", err: fmt.Errorf("claiming: %w", context.DeadlineExceeded), code: codes.DeadlineExceeded, msg: "claiming: context deadline exceeded"},
		{name: "deadline under a kind", reason: "DEADLINE_EXCEEDED", err: apierr.Unavailable.Errorf("reading: %w", context.DeadlineExceeded), code: codes.DeadlineExceeded,
			msg: "unavailable: reading: context deadline exceeded"},

		// Statuses pass through, details included.
		{name: "a status passes through", reason: "PERMISSION_DENIED", err: status.Error(codes.PermissionDenied, "no"), code: codes.PermissionDenied, msg: "no"},
		{name: "a wrapped status keeps its code", reason: "UNAVAILABLE", err: fmt.Errorf("calling: %w", status.Error(codes.Unavailable, "down")), code: codes.Unavailable,
			msg: "calling: rpc error: code = Unavailable desc = down"},
		{name: "a status keeps its details", reason: "INVALID_ARGUMENT", err: passed.Err(), code: codes.InvalidArgument, msg: "bad", details: []protoadapt.MessageV1{badRequest("a", "b")}},

		// Field errors: their own message and a BadRequest, whatever wraps them.
		{name: "field error", reason: "FIELD_VIOLATION", err: &apierr.FieldError{Field: "unit", Description: "unknown unit"}, code: codes.InvalidArgument,
			msg: "invalid request: unit: unknown unit", details: []protoadapt.MessageV1{badRequest("unit", "unknown unit")}},
		{name: "wrapped field error", reason: "FIELD_VIOLATION", err: fmt.Errorf("planning: %w", &apierr.FieldError{Field: "epoch", Description: "must be greater than 3"}),
			code: codes.InvalidArgument, msg: "invalid request: epoch: must be greater than 3", details: []protoadapt.MessageV1{badRequest("epoch", "must be greater than 3")}},

		// Detailed errors: their kind's code, their own message, their details.
		{name: "detailed", reason: "ABORTED", err: &conflict{current: 4}, code: codes.Aborted, msg: "at version 4", details: []protoadapt.MessageV1{wrapperspb.Int64(4)}},
		{name: "wrapped detailed", reason: "ABORTED", err: fmt.Errorf("correcting: %w", &conflict{current: 5}), code: codes.Aborted, msg: "at version 5",
			details: []protoadapt.MessageV1{wrapperspb.Int64(5)}},

		// Database errors without a kind, by their class; their text kept,
		// or the database named at an edge that names it (StatusIn).
		{name: "deadlock", reason: "CONTENTION", err: fmt.Errorf("committing: %w", deadlock), code: codes.Aborted, msg: "committing: Error 1213: Deadlock found",
			inDB: "transaction rolled back for contention; retry: committing: Error 1213: Deadlock found"},
		{name: "lock wait timeout", reason: "CONTENTION", err: &mysql.MySQLError{Number: 1205, Message: "Lock wait timeout"}, code: codes.Aborted, msg: "Error 1205: Lock wait timeout",
			inDB: "transaction rolled back for contention; retry: Error 1205: Lock wait timeout"},
		{name: "refused connection", reason: "DEPENDENCY_UNAVAILABLE", err: fmt.Errorf("shard-0: %w", refused), code: codes.Unavailable, msg: "shard-0: dial tcp: connection refused",
			inDB: "control database unavailable: shard-0: dial tcp: connection refused"},
		{name: "broken connection", reason: "DEPENDENCY_UNAVAILABLE", err: driver.ErrBadConn, code: codes.Unavailable, msg: "driver: bad connection", inDB: "control database unavailable: driver: bad connection"},
		{name: "invalid connection", reason: "DEPENDENCY_UNAVAILABLE", err: mysql.ErrInvalidConn, code: codes.Unavailable, msg: "invalid connection", inDB: "control database unavailable: invalid connection"},
		{name: "closed connection", reason: "DEPENDENCY_UNAVAILABLE", err: sql.ErrConnDone, code: codes.Unavailable, msg: "sql: connection is already closed", inDB: "control database unavailable: sql: connection is already closed"},

		// Anything else is INTERNAL, with its text (nothing is hidden).
		{name: "another server error", reason: "INTERNAL", err: &mysql.MySQLError{Number: 1146, Message: "Table doesn't exist"}, code: codes.Internal,
			msg: "Error 1146: Table doesn't exist"},
		{name: "unknown error", reason: "INTERNAL", err: errors.New("boom"), code: codes.Internal, msg: "boom"},
		{name: "wrapped unknown error", reason: "INTERNAL", err: fmt.Errorf("executing: %w", errors.New("boom")), code: codes.Internal, msg: "executing: boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := apierr.Code(tc.err); got != tc.code {
				t.Errorf("Code(%v) = %v, want %v", tc.err, got, tc.code)
			}
			for _, db := range []string{"", "control database"} {
				msg := tc.msg
				if db != "" && tc.inDB != "" {
					msg = tc.inDB
				}
				want := status.New(tc.code, msg)
				if len(tc.details) > 0 {
					var err error
					if want, err = want.WithDetails(tc.details...); err != nil {
						t.Fatal(err)
					}
				}
				serr := apierr.StatusIn(db, tc.err)
				got, ok := status.FromError(serr)
				if !ok {
					t.Fatalf("StatusIn(%q, %v) is not a status", db, tc.err)
				}
				if diff := cmp.Diff(want.Proto(), withoutReason(t, got).Proto(), protocmp.Transform()); diff != "" {
					t.Errorf("StatusIn(%q, %v) (-want +got):\n%s", db, tc.err, diff)
				}
				if r, _ := apierr.ReasonOf(serr); r != tc.reason {
					t.Errorf("StatusIn(%q, %v): reason %s, want %s", db, tc.err, r, tc.reason)
				}
				if db == "" {
					if diff := cmp.Diff(want.Proto(), withoutReason(t, status.Convert(apierr.Status(tc.err))).Proto(), protocmp.Transform()); diff != "" {
						t.Errorf("Status(%v) (-want +got):\n%s", tc.err, diff)
					}
				}
			}
		})
	}
	if apierr.Status(nil) != nil || apierr.StatusIn("x", nil) != nil || apierr.Code(nil) != codes.OK {
		t.Error("nil must map to nil and OK")
	}
}

// TestStatusInNamesTheDatabase: only an unmarked database error's message
// names the edge's database (TestStatus); a database error under a kind or
// a context error, and any other error, keep their message.
func TestStatusInNamesTheDatabase(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code codes.Code
		msg  string
	}{
		{"a kind wrapping an outage", fmt.Errorf("%w: reading: %w", apierr.New(apierr.Unavailable, "dependency unavailable"), driver.ErrBadConn),
			codes.Unavailable, "dependency unavailable: reading: driver: bad connection"},
		{"cancelled", fmt.Errorf("reading: %w", context.Canceled), codes.Canceled, "reading: context canceled"},
		{"not found", apierr.New(apierr.NotFound, "repair not found"), codes.NotFound, "repair not found"},
		{"unknown", errors.New("boom"), codes.Internal, "boom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := status.Convert(apierr.StatusIn("control database", tc.err))
			if st.Code() != tc.code || st.Message() != tc.msg {
				t.Errorf("StatusIn = %v %q, want %v %q", st.Code(), st.Message(), tc.code, tc.msg)
			}
		})
	}
}

func TestViolations(t *testing.T) {
	var v apierr.Violations
	if err := v.Err(); err != nil {
		t.Fatalf("no violations: %v", err)
	}
	v.RequestID("")
	v.Add("grade", "must be 1-12")
	v.RequestID(string(make([]byte, apierr.MaxRequestID)))
	want, _ := status.New(codes.InvalidArgument, "invalid request: request_id: required: a client-chosen idempotency key; grade: must be 1-12").
		WithDetails(badRequest("request_id", "required: a client-chosen idempotency key", "grade", "must be 1-12"))
	if diff := cmp.Diff(want.Proto(), withoutReason(t, status.Convert(v.Err())).Proto(), protocmp.Transform()); diff != "" {
		t.Errorf("Violations.Err (-want +got):\n%s", diff)
	}
	if r, meta := apierr.ReasonOf(v.Err()); r != apierr.FieldViolation || meta["fields"] != "request_id,grade" {
		t.Errorf("Violations.Err: reason %s %v, want FIELD_VIOLATION of request_id,grade", r, meta)
	}
	v = nil
	v.RequestID(string(make([]byte, apierr.MaxRequestID+1)))
	if got := status.Convert(v.Err()).Message(); got != "invalid request: request_id: at most 64 characters" {
		t.Errorf("long request_id: %q", got)
	}
}

func TestSentinelKeepsIdentityAndMessage(t *testing.T) {
	errGone := apierr.New(apierr.NotFound, "result not found")
	err := fmt.Errorf("shard-1: %w", errGone)
	if !errors.Is(err, errGone) || !errors.Is(err, apierr.NotFound) || errors.Is(err, apierr.AlreadyExists) {
		t.Errorf("errors.Is on a wrapped sentinel: identity %v, kind %v, other kind %v",
			errors.Is(err, errGone), errors.Is(err, apierr.NotFound), errors.Is(err, apierr.AlreadyExists))
	}
	fe := fmt.Errorf("x: %w", &apierr.FieldError{Field: "f", Description: "d"})
	var got *apierr.FieldError
	if !errors.Is(fe, apierr.InvalidArgument) || !errors.As(fe, &got) || got.Field != "f" || fe.Error() != "x: f: d" {
		t.Errorf("a wrapped FieldError: Is %v, As %v, message %q", errors.Is(fe, apierr.InvalidArgument), errors.As(fe, &got), fe.Error())
	}
	pre := apierr.FailedPrecondition.Errorf("rebuild %s is %s", "b1", "RUNNING")
	if !errors.Is(pre, apierr.FailedPrecondition) || errors.Is(pre, apierr.NotFound) {
		t.Errorf("Kind.Errorf is not marked with its kind alone")
	}
}
