package resultsync

import (
	"errors"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
)

// Domain is the google.rpc.ErrorInfo domain of every reason resultsync's
// servers send.
const Domain = "resultsync.fitness.v1"

// Reason returns the reason of err (a gRPC status error, possibly wrapped)
// as the typed catalogue fitness.v1.ErrorReason: the reason of its
// google.rpc.ErrorInfo in Domain. It returns ERROR_REASON_UNSPECIFIED when
// err carries no such ErrorInfo, or a reason these contracts do not know
// yet: then act on status.Code(err) (docs/calling.md, "How to retry").
func Reason(err error) fitnessv1.ErrorReason {
	info := ErrorInfo(err)
	if info == nil {
		return fitnessv1.ErrorReason_ERROR_REASON_UNSPECIFIED
	}
	return fitnessv1.ErrorReason(fitnessv1.ErrorReason_value[info.GetReason()])
}

// ErrorInfo returns the google.rpc.ErrorInfo of err in Domain (with its
// reason string and metadata such as "current_version", "dependency",
// "state"), or nil.
func ErrorInfo(err error) *errdetails.ErrorInfo {
	for _, info := range details[*errdetails.ErrorInfo](err) {
		if info.GetDomain() == Domain {
			return info
		}
	}
	return nil
}

// RetryDelay returns the first wait google.rpc.RetryInfo advises before
// sending the same request again (double it on each further failure), and
// whether err carries one: CONTENTION, REQUEST_IN_PROGRESS and the
// UNAVAILABLE and RESOURCE_EXHAUSTED reasons do.
func RetryDelay(err error) (time.Duration, bool) {
	for _, ri := range details[*errdetails.RetryInfo](err) {
		if ri.GetRetryDelay() != nil {
			return ri.GetRetryDelay().AsDuration(), true
		}
	}
	return 0, false
}

// FieldViolations returns the invalid fields google.rpc.BadRequest names
// (reason FIELD_VIOLATION), each with its description; nil without one.
func FieldViolations(err error) []*errdetails.BadRequest_FieldViolation {
	var out []*errdetails.BadRequest_FieldViolation
	for _, br := range details[*errdetails.BadRequest](err) {
		out = append(out, br.GetFieldViolations()...)
	}
	return out
}

// VersionConflict returns the fitness.v1.VersionConflict of an ABORTED
// VERSION_CONFLICT (a correction or deletion at a version that is not
// current: re-read the result, decide again, send a new request_id), or
// nil.
func VersionConflict(err error) *fitnessv1.VersionConflict {
	if vc := details[*fitnessv1.VersionConflict](err); len(vc) > 0 {
		return vc[0]
	}
	return nil
}

// details returns the details of err's status that are of type T.
func details[T any](err error) []T {
	var st interface{ GRPCStatus() *status.Status }
	if err == nil || !errors.As(err, &st) {
		return nil
	}
	var out []T
	for _, d := range st.GRPCStatus().Details() {
		if v, ok := d.(T); ok {
			out = append(out, v)
		}
	}
	return out
}
