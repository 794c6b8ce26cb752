// Package apierr is the one mapping from errors to gRPC status, shared by
// every service: its code, message and details. Domain packages mark their
// errors with a Kind (New, Kind.Errorf, or %w of a Kind), name an invalid
// request field with a FieldError, or carry their own details (Detailed);
// every RPC edge returns Status(err) (StatusIn for one naming its database).
// Context errors, database contention and unreachable dependencies are
// recognised wherever they were wrapped; anything else is INTERNAL with its
// message, never a guess.
//
// Every status carries a google.rpc.ErrorInfo with a stable Reason of the
// catalogue (reasons.go) in Domain: the reason a domain error was marked with
// (NewReason, WithReason, an error with an ErrorReason method), else the
// generic reason of its code. RetryInfo says how long to wait where a wait
// helps (UNAVAILABLE, RESOURCE_EXHAUSTED, CONTENTION). The interceptors
// (UnaryServerInterceptor, StreamServerInterceptor) give every status leaving
// a server its ErrorInfo, so none is missed.
package apierr

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"

	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
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

// Errorf returns an error marked with k whose message is k's name, ": " and
// the formatted text ("failed precondition: run 7 is RUNNING"); %w verbs wrap
// as in fmt.Errorf.
func (k Kind) Errorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{k}, args...)...)
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
// errors.Is finds both by identity and by its kind. Its status has the
// generic reason of its kind's code (NewReason names a specific one).
func New(kind Kind, msg string) error { return &kindError{kind: kind, msg: msg} }

// ErrRequestReused is a client-chosen idempotency key (request_id) sent
// again with a different request: FAILED_PRECONDITION with the reason
// REQUEST_ID_REUSED, nothing is done. FAILED_PRECONDITION (not
// INVALID_ARGUMENT) because the same request is valid with a fresh key: it
// is refused for the state the key is in (and was the code of the write
// path's keys before the reasons).
var ErrRequestReused = NewReason(FailedPrecondition, RequestIDReused, "request_id was already used for a different request")

// FieldError names an invalid request field and why it is invalid. It is an
// InvalidArgument; its status is "invalid request: <field>: <description>"
// with the field in a google.rpc.BadRequest, whatever it was wrapped in.
type FieldError struct {
	Field       string
	Description string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Description }

// Is makes errors.Is(err, InvalidArgument) true for a FieldError.
func (e *FieldError) Is(target error) bool { return target == InvalidArgument }

// Violations collects the invalid fields of one request.
type Violations []FieldError

// Add records that field is invalid, and why.
func (v *Violations) Add(field, description string) {
	*v = append(*v, FieldError{Field: field, Description: description})
}

// MaxRequestID is the longest request_id (idempotency key) accepted.
const MaxRequestID = 64

// RequestID checks the request_id field every mutating call carries.
func (v *Violations) RequestID(id string) {
	switch {
	case id == "":
		v.Add("request_id", "required: a client-chosen idempotency key")
	case len(id) > MaxRequestID:
		v.Add("request_id", fmt.Sprintf("at most %d characters", MaxRequestID))
	}
}

// OptionalRequestID checks the optional request_id of a control call
// (empty: the call is not idempotent).
func (v *Violations) OptionalRequestID(id string) {
	if len(id) > MaxRequestID {
		v.Add("request_id", fmt.Sprintf("at most %d characters", MaxRequestID))
	}
}

// Scope checks a reconciliation scope's fields (scope.detect_id required,
// scope.project_id and scope.school_id positive or 0 for all).
func (v *Violations) Scope(detectID, projectID, schoolID int64) {
	if detectID <= 0 {
		v.Add("scope.detect_id", "required: a positive campaign id")
	}
	if projectID < 0 {
		v.Add("scope.project_id", "must be positive, or 0 for every project")
	}
	if schoolID < 0 {
		v.Add("scope.school_id", "must be positive, or 0 for every school")
	}
}

// Err returns nil without violations, else the INVALID_ARGUMENT status
// "invalid request: <field>: <description>; ..." with every field in a
// google.rpc.BadRequest.
func (v Violations) Err() error {
	if len(v) == 0 {
		return nil
	}
	msgs := make([]string, len(v))
	br := &errdetails.BadRequest{}
	for i, f := range v {
		msgs[i] = f.Error()
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: f.Field, Description: f.Description})
	}
	fields := make([]string, 0, len(v))
	for _, f := range v {
		fields = append(fields, f.Field)
	}
	return withDetails(status.New(codes.InvalidArgument, "invalid request: "+strings.Join(msgs, "; ")), br,
		errorInfo(FieldViolation, map[string]string{"fields": strings.Join(fields, ",")}))
}

// Detailed is an error that carries the details of its status (a version
// conflict's versions, say). Its status has its Kind's code (errors.Is), its
// own message and these details, whatever it was wrapped in.
type Detailed interface {
	error
	StatusDetails() []protoadapt.MessageV1
}

func withDetails(st *status.Status, details ...protoadapt.MessageV1) error {
	if d, err := st.WithDetails(details...); err == nil {
		st = d
	}
	return st.Err()
}

// Code returns the gRPC code err maps to (OK for nil).
func Code(err error) codes.Code {
	c, _ := code(err)
	return c
}

// code returns err's code and whether only a database error's class (no
// context, status or kind) decided it (its reason is then CONTENTION or
// DEPENDENCY_UNAVAILABLE).
func code(err error) (codes.Code, bool) {
	switch {
	case err == nil:
		return codes.OK, false
	case errors.Is(err, context.Canceled):
		return codes.Canceled, false
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded, false
	}
	if st, ok := status.FromError(err); ok {
		// Already a status (from a downstream call or an RPC edge): keep it.
		return st.Code(), false
	}
	for k := Kind(1); int(k) < len(kinds); k++ {
		if errors.Is(err, k) {
			return kinds[k].code, false
		}
	}
	switch {
	case mysqldb.IsRetryable(err):
		return codes.Aborted, true
	case mysqldb.IsUnavailable(err), errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone):
		return codes.Unavailable, true
	}
	return codes.Internal, false
}

// Status maps err to a gRPC status error (nil for nil). A status error passes
// through unchanged, details included; a FieldError or Detailed error gets
// its details; every other error keeps its message.
func Status(err error) error { return StatusIn("", err) }

// StatusIn is Status at an edge whose unmarked database errors come from the
// database named db: such an error's message says so, "transaction rolled
// back for contention; retry: <err>" or "<db> unavailable: <err>". An empty
// db keeps the message as it is.
func StatusIn(db string, err error) error {
	if err == nil {
		return nil
	}
	if st, ok := status.FromError(err); ok && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return Ensure(st).Err()
	}
	c, fromDB := code(err)
	reason, meta := reasonOf(err)
	if c != codes.Canceled && c != codes.DeadlineExceeded {
		var fe *FieldError
		if errors.As(err, &fe) {
			return Violations{*fe}.Err()
		}
		var d Detailed
		if errors.As(err, &d) {
			if reason == "" {
				reason, meta = reasonOf(d)
			}
			return Ensure(withReason(status.New(Code(d), d.Error()), reason, meta, d.StatusDetails()...)).Err()
		}
	} else {
		// A context error decides the code whatever it was wrapped in, and
		// so the reason.
		reason, meta = "", nil
	}
	msg := err.Error()
	switch {
	case !fromDB:
		if c == codes.Unavailable && reason == "" {
			reason = DependencyUnavailable
		}
	case c == codes.Aborted:
		reason = Contention
		if db != "" {
			msg = "transaction rolled back for contention; retry: " + msg
			meta = map[string]string{"dependency": db}
		}
	case c == codes.Unavailable:
		reason = DependencyUnavailable
		if db != "" {
			msg = db + " unavailable: " + msg
			meta = map[string]string{"dependency": db}
		}
	}
	return Ensure(withReason(status.New(c, msg), reason, meta)).Err()
}
