package apierr

import (
	"errors"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Domain is the google.rpc.ErrorInfo domain of every error of resultsync's
// services: a reason is unique within it.
const Domain = "resultsync.fitness.v1"

// Reason is the stable, machine-readable cause of an error
// (google.rpc.ErrorInfo.reason, UPPER_SNAKE_CASE): callers match on it, never
// on the message. A reason, once published, keeps its meaning; new ones may
// be added. Every reason is in Catalogue, and docs/calling.md lists them.
type Reason string

// The generic reasons, one per status code: an error no site marked more
// specifically.
const (
	Cancelled          Reason = "CANCELLED"
	Unknown            Reason = "UNKNOWN"
	InvalidRequest     Reason = "INVALID_ARGUMENT"
	DeadlineExceeded   Reason = "DEADLINE_EXCEEDED"
	NotFoundReason     Reason = "NOT_FOUND"
	AlreadyExistsR     Reason = "ALREADY_EXISTS"
	Denied             Reason = "PERMISSION_DENIED"
	Exhausted          Reason = "RESOURCE_EXHAUSTED"
	PreconditionFailed Reason = "FAILED_PRECONDITION"
	AbortedReason      Reason = "ABORTED"
	OutOfRange         Reason = "OUT_OF_RANGE"
	Unimplemented      Reason = "UNIMPLEMENTED"
	Internal           Reason = "INTERNAL"
	UnavailableReason  Reason = "UNAVAILABLE"
	DataLoss           Reason = "DATA_LOSS"
	Unauthenticated    Reason = "UNAUTHENTICATED"
)

// The specific reasons.
const (
	// FieldViolation: fields of the request are invalid; a
	// google.rpc.BadRequest names each (metadata "fields": their names).
	FieldViolation Reason = "FIELD_VIOLATION"
	// InvalidPageToken: the page_token is malformed or from another query.
	InvalidPageToken Reason = "INVALID_PAGE_TOKEN"
	// RequestIDReused: the request_id was used for a different request.
	RequestIDReused Reason = "REQUEST_ID_REUSED"
	// RequestInProgress: a call with this request_id is still being
	// answered; retry the same request after RetryInfo's delay.
	RequestInProgress Reason = "REQUEST_IN_PROGRESS"
	// VersionConflict: expected_version is not the current version
	// (fitness.v1.VersionConflict); re-read, then decide.
	VersionConflict Reason = "VERSION_CONFLICT"
	// Contention: the database rolled the transaction back (deadlock, lock
	// wait timeout); retry the same request as is.
	Contention Reason = "CONTENTION"
	// ResultNotFound: no such result (or another school's).
	ResultNotFound Reason = "RESULT_NOT_FOUND"
	// ResultExists: the data_id is taken.
	ResultExists Reason = "RESULT_ALREADY_EXISTS"
	// ResultDeleted: the result is deleted.
	ResultDeleted Reason = "RESULT_DELETED"
	// RecordNotFound: the record has no row nor deletion record on its shard.
	RecordNotFound Reason = "RECORD_NOT_FOUND"
	// PayloadMismatch: an outbox row carries other content than the
	// authoritative state.
	PayloadMismatch Reason = "PAYLOAD_MISMATCH"
	// RunNotFound: no such reconciliation run.
	RunNotFound Reason = "RUN_NOT_FOUND"
	// CampaignNotFound: the campaign has no results on any shard.
	CampaignNotFound Reason = "CAMPAIGN_NOT_FOUND"
	// ShardNotFound: no such shard.
	ShardNotFound Reason = "SHARD_NOT_FOUND"
	// RepairNotFound: no such repair.
	RepairNotFound Reason = "REPAIR_NOT_FOUND"
	// RebuildNotFound: no such rebuild.
	RebuildNotFound Reason = "REBUILD_NOT_FOUND"
	// NeedsSecondApprover: the approver is the requester; another admin
	// must approve.
	NeedsSecondApprover Reason = "NEEDS_SECOND_APPROVER"
	// InvalidState: the run, repair or rebuild is not in a state for this
	// (metadata "state": its state).
	InvalidState Reason = "INVALID_STATE"
	// RunQueueFull: too many reconciliation runs are executing or queued.
	RunQueueFull Reason = "RUN_QUEUE_FULL"
	// DependencyUnavailable: a database, the broker or the audit log is
	// unreachable (metadata "dependency" when known); back off and retry.
	DependencyUnavailable Reason = "DEPENDENCY_UNAVAILABLE"
	// NotRecovered: the server has not finished its start-up recovery.
	NotRecovered Reason = "NOT_RECOVERED"
	// NoSchedule: this server keeps no reconciliation schedule.
	NoSchedule Reason = "NO_SCHEDULE"
)

// Entry is one reason of the catalogue: its code and whether and how a
// caller retries it.
type Entry struct {
	Reason Reason
	Code   codes.Code
	// Retry says how a caller retries: "no", "same request" (the same
	// request_id), "re-read" (read the current state, then decide), "back
	// off" (the same request after RetryInfo's delay, growing).
	Retry string
}

// Catalogue is every reason, in docs/calling.md's order.
var Catalogue = []Entry{
	{FieldViolation, codes.InvalidArgument, "no"},
	{InvalidRequest, codes.InvalidArgument, "no"},
	{InvalidPageToken, codes.InvalidArgument, "no"},
	{RequestIDReused, codes.FailedPrecondition, "no"},
	{RequestInProgress, codes.Aborted, "back off"},
	{VersionConflict, codes.Aborted, "re-read"},
	{Contention, codes.Aborted, "same request"},
	{AbortedReason, codes.Aborted, "re-read"},
	{ResultNotFound, codes.NotFound, "no"},
	{RecordNotFound, codes.NotFound, "no"},
	{RunNotFound, codes.NotFound, "no"},
	{CampaignNotFound, codes.NotFound, "no"},
	{ShardNotFound, codes.NotFound, "no"},
	{RepairNotFound, codes.NotFound, "no"},
	{RebuildNotFound, codes.NotFound, "no"},
	{NotFoundReason, codes.NotFound, "no"},
	{ResultExists, codes.AlreadyExists, "no"},
	{AlreadyExistsR, codes.AlreadyExists, "no"},
	{ResultDeleted, codes.FailedPrecondition, "no"},
	{PayloadMismatch, codes.FailedPrecondition, "no"},
	{InvalidState, codes.FailedPrecondition, "re-read"},
	{NoSchedule, codes.FailedPrecondition, "no"},
	{PreconditionFailed, codes.FailedPrecondition, "re-read"},
	{NeedsSecondApprover, codes.FailedPrecondition, "no"},
	{Denied, codes.PermissionDenied, "no"},
	{Unauthenticated, codes.Unauthenticated, "no"},
	{RunQueueFull, codes.ResourceExhausted, "back off"},
	{Exhausted, codes.ResourceExhausted, "back off"},
	{DependencyUnavailable, codes.Unavailable, "back off"},
	{NotRecovered, codes.Unavailable, "back off"},
	{UnavailableReason, codes.Unavailable, "back off"},
	{DeadlineExceeded, codes.DeadlineExceeded, "same request"},
	{Cancelled, codes.Canceled, "no"},
	{OutOfRange, codes.OutOfRange, "no"},
	{Unimplemented, codes.Unimplemented, "no"},
	{Internal, codes.Internal, "no"},
	{DataLoss, codes.DataLoss, "no"},
	{Unknown, codes.Unknown, "no"},
}

// generic is the reason of a code no site marked more specifically.
var generic = map[codes.Code]Reason{
	codes.Canceled: Cancelled, codes.Unknown: Unknown, codes.InvalidArgument: InvalidRequest,
	codes.DeadlineExceeded: DeadlineExceeded, codes.NotFound: NotFoundReason, codes.AlreadyExists: AlreadyExistsR,
	codes.PermissionDenied: Denied, codes.ResourceExhausted: Exhausted, codes.FailedPrecondition: PreconditionFailed,
	codes.Aborted: AbortedReason, codes.OutOfRange: OutOfRange, codes.Unimplemented: Unimplemented,
	codes.Internal: Internal, codes.Unavailable: UnavailableReason, codes.DataLoss: DataLoss,
	codes.Unauthenticated: Unauthenticated,
}

// GenericReason is the reason of an error of code c that no site marked.
func GenericReason(c codes.Code) Reason {
	if r, ok := generic[c]; ok {
		return r
	}
	return Unknown
}

// RetryDelay is the RetryInfo delay of a reason whose retry is a back-off
// (or a retry as is, CONTENTION): the first wait; a caller doubles it on
// each further failure. Zero for the others, which carry no RetryInfo.
func RetryDelay(r Reason) time.Duration {
	switch r {
	case Contention:
		return 50 * time.Millisecond
	case RequestInProgress, DependencyUnavailable, NotRecovered, UnavailableReason:
		return time.Second
	case RunQueueFull, Exhausted:
		return 5 * time.Second
	}
	return 0
}

// Reasoned is an error that names its reason (and the ErrorInfo metadata
// that goes with it).
type Reasoned interface {
	error
	ErrorReason() (Reason, map[string]string)
}

type reasonError struct {
	err    error
	reason Reason
	meta   map[string]string
}

func (e *reasonError) Error() string                            { return e.err.Error() }
func (e *reasonError) Unwrap() error                            { return e.err }
func (e *reasonError) ErrorReason() (Reason, map[string]string) { return e.reason, e.meta }

// NewReason is New with a specific reason: a sentinel found by errors.Is by
// identity and by its kind, whose status carries reason.
func NewReason(kind Kind, reason Reason, msg string) error {
	return &reasonError{err: &kindError{kind: kind, msg: msg}, reason: reason}
}

// WithReason marks err with reason and ErrorInfo metadata (key, value
// pairs); its code is err's. The outermost reason wins.
func WithReason(err error, reason Reason, kv ...string) error {
	if err == nil {
		return nil
	}
	var meta map[string]string
	if len(kv) > 1 {
		meta = make(map[string]string, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			meta[kv[i]] = kv[i+1]
		}
	}
	return &reasonError{err: err, reason: reason, meta: meta}
}

// ReasonError returns a status error of code c, message msg and reason (with
// its RetryInfo where a wait helps), for an edge that builds its own status.
func ReasonError(c codes.Code, reason Reason, msg string, kv ...string) error {
	_, meta := reasonOf(WithReason(errors.New(msg), reason, kv...))
	return Ensure(withReason(status.New(c, msg), reason, meta)).Err()
}

// reasonOf returns the reason err was marked with, if any.
func reasonOf(err error) (Reason, map[string]string) {
	var r Reasoned
	if errors.As(err, &r) {
		return r.ErrorReason()
	}
	return "", nil
}

func errorInfo(reason Reason, meta map[string]string) *errdetails.ErrorInfo {
	return &errdetails.ErrorInfo{Reason: string(reason), Domain: Domain, Metadata: meta}
}

// withReason adds details and, when reason is set, its ErrorInfo.
func withReason(st *status.Status, reason Reason, meta map[string]string, details ...protoadapt.MessageV1) *status.Status {
	if reason != "" {
		details = append(details, errorInfo(reason, meta))
	}
	if len(details) == 0 {
		return st
	}
	if d, err := st.WithDetails(details...); err == nil {
		return d
	}
	return st
}

// Ensure returns st with an ErrorInfo (the generic reason of its code when
// it has none) and, where its reason's retry waits, a RetryInfo. A status
// that has them keeps them; OK is returned as is.
func Ensure(st *status.Status) *status.Status {
	if st == nil || st.Code() == codes.OK {
		return st
	}
	var reason Reason
	var hasRetry bool
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			if reason == "" {
				reason = Reason(d.GetReason())
			}
		case *errdetails.RetryInfo:
			hasRetry = true
		}
	}
	var add []protoadapt.MessageV1
	if reason == "" {
		reason = GenericReason(st.Code())
		add = append(add, errorInfo(reason, nil))
	}
	if d := RetryDelay(reason); d > 0 && !hasRetry {
		add = append(add, &errdetails.RetryInfo{RetryDelay: durationpb.New(d)})
	}
	return withReason(st, "", nil, add...)
}

// ReasonOf returns the ErrorInfo reason of a status error (generic by its
// code when it has none) and its metadata: what a caller matches on.
func ReasonOf(err error) (Reason, map[string]string) {
	st := status.Convert(err)
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetDomain() == Domain {
			return Reason(ei.GetReason()), ei.GetMetadata()
		}
	}
	return GenericReason(st.Code()), nil
}
