// Package apierr is the one mapping from errors to gRPC status codes, shared
// by every service. Domain packages mark their errors with a Kind (New, or
// %w of a Kind); the RPC edge returns Status(err). Context errors, database
// contention and unreachable dependencies are recognised wherever they were
// wrapped; anything else is INTERNAL, never a guess.
package apierr

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/resultsync/resultsync/pkg/mysqldb"
)

// Kind is a class of domain error with one gRPC meaning. A Kind is itself an
// error, so errors.Is(err, apierr.NotFound) works on any error marked with it.
type Kind uint8

// The kinds, each with the status code it maps to.
const (
	_                  Kind = iota
	InvalidArgument         // the request is malformed: INVALID_ARGUMENT
	NotFound                // the named resource does not exist: NOT_FOUND
	AlreadyExists           // the resource to create exists: ALREADY_EXISTS
	FailedPrecondition      // the system is not in a state for it: FAILED_PRECONDITION
	Aborted                 // a concurrency conflict; retry at a higher level: ABORTED
	Unavailable             // a dependency is unreachable; retry later: UNAVAILABLE
	PermissionDenied        // the caller may not do this: PERMISSION_DENIED
	ResourceExhausted       // a limit is reached: RESOURCE_EXHAUSTED
)

var kinds = [...]struct {
	name string
	code codes.Code
}{
	{"unknown", codes.Unknown},
	{"invalid argument", codes.InvalidArgument},
	{"not found", codes.NotFound},
	{"already exists", codes.AlreadyExists},
	{"failed precondition", codes.FailedPrecondition},
	{"aborted", codes.Aborted},
	{"unavailable", codes.Unavailable},
	{"permission denied", codes.PermissionDenied},
	{"resource exhausted", codes.ResourceExhausted},
}

func (k Kind) Error() string {
	if int(k) < len(kinds) {
		return kinds[k].name
	}
	return "unknown"
}

type kindError struct {
	kind Kind
	msg  string
}

func (e *kindError) Error() string { return e.msg }

// Is makes errors.Is(err, kind) true for an error created with New(kind, ...).
func (e *kindError) Is(target error) bool {
	k, ok := target.(Kind)
	return ok && k == e.kind
}

// New returns an error with message msg marked with kind: a sentinel that
// errors.Is finds both by identity and by its kind.
func New(kind Kind, msg string) error { return &kindError{kind: kind, msg: msg} }

// Code returns the gRPC code err maps to (OK for nil).
func Code(err error) codes.Code {
	switch {
	case err == nil:
		return codes.OK
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	if st, ok := status.FromError(err); ok {
		// Already a status (from a downstream call or an RPC edge): keep it.
		return st.Code()
	}
	for k := Kind(1); int(k) < len(kinds); k++ {
		if errors.Is(err, k) {
			return kinds[k].code
		}
	}
	switch {
	case mysqldb.IsRetryable(err):
		return codes.Aborted
	case mysqldb.IsUnavailable(err), errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone):
		return codes.Unavailable
	}
	return codes.Internal
}

// Status maps err to a gRPC status error (nil for nil). A status error passes
// through unchanged, details included; every other error keeps its message.
func Status(err error) error {
	if err == nil {
		return nil
	}
	if st, ok := status.FromError(err); ok && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return st.Err()
	}
	return status.Error(Code(err), err.Error())
}
