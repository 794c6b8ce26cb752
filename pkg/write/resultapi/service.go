// Package resultapi implements fitness.v1.ResultService over the shard map:
// request validation with field-level INVALID_ARGUMENT details, routing by
// data_id (shard.Map.Owner) and cross-shard listing with page tokens; store
// and database errors become status codes through pkg/platform/apierr.
//
// Every command and read of one data_id reaches the one shard that owns it,
// whatever school the request names, so the shard's primary key makes a
// data_id unique across schools and shards: a second RecordResult of a taken
// data_id is ALREADY_EXISTS. The school_id of CorrectResult, DeleteResult and
// GetResult is checked against the stored record (another school's record is
// NOT_FOUND and is never changed); lists read every shard.
//
// Every RPC acts for the school it names, which must be one of the
// caller's (auth.CheckSchool: PERMISSION_DENIED otherwise, before any store
// is touched); with the stored-record check above, a caller of school 7
// never reads, corrects or deletes a school-8 record, whatever school it
// names. A list of every school (school_id 0) is for platform-wide callers.
package resultapi

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"google.golang.org/grpc/status"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/model/shard"
	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/paging"
	"github.com/resultsync/resultsync/pkg/write/resultstore"
)

// Limits on request fields.
const (
	maxReason       = 512
	maxUnit         = 16
	defaultPageSize = 100
	maxPageSize     = 1000
)

// Service implements fitness.v1.ResultService over the shard map.
type Service struct {
	fitnessv1.UnimplementedResultServiceServer
	shards shard.Map
	stores []*resultstore.Store
}

// NewService routes requests to stores, one per shard in map order.
func NewService(m shard.Map, stores []*resultstore.Store) *Service {
	return &Service{shards: m, stores: stores}
}

// storeFor returns the store of the shard that owns dataID.
func (s *Service) storeFor(dataID int64) *resultstore.Store {
	return s.stores[s.shards.Owner(dataID)]
}

// violations collects the invalid fields of one request, with the checks
// this service's requests share.
type violations struct{ apierr.Violations }

func (v *violations) positive(field string, x int64) {
	if x <= 0 {
		v.Add(field, "must be a positive id")
	}
}

func (v *violations) text(field, s string, limit int) {
	if len(s) > limit {
		v.Add(field, fmt.Sprintf("at most %d bytes", limit))
	}
}

// RecordResult implements fitness.v1.ResultService. A data_id already
// recorded, under any school, is ALREADY_EXISTS and nothing is written.
func (s *Service) RecordResult(ctx context.Context, req *fitnessv1.RecordResultRequest) (*fitnessv1.RecordResultResponse, error) {
	cmd, err := validateRecord(req)
	if err != nil {
		return nil, err
	}
	if err := auth.CheckSchool(ctx, cmd.SchoolID); err != nil {
		return nil, err
	}
	out, err := s.storeFor(cmd.DataID).Record(ctx, cmd)
	if err != nil {
		return nil, apierr.Status(err)
	}
	return &fitnessv1.RecordResultResponse{Result: out.Result, EventId: out.EventID}, nil
}

// validateRecord checks a RecordResult request without a database and
// returns its command, with the canonical result and unit.
func validateRecord(req *fitnessv1.RecordResultRequest) (resultstore.RecordCommand, error) {
	var v violations
	v.RequestID(req.GetRequestId())
	v.positive("data_id", req.GetDataId())
	v.positive("detect_id", req.GetDetectId())
	v.positive("user_id", req.GetUserId())
	v.positive("school_id", req.GetSchoolId())
	if g := req.GetGrade(); g < 1 || g > 12 {
		v.Add("grade", "must be 1-12")
	}
	v.text("unit", req.GetUnit(), maxUnit)
	var result, unit string
	if req.GetProjectId() <= 0 {
		v.Add("project_id", "must be a positive id")
	} else if len(req.GetUnit()) <= maxUnit {
		var err error
		result, unit, err = canonical.CheckResult(req.GetProjectId(), req.GetResult(), req.GetUnit())
		var fe *apierr.FieldError
		if errors.As(err, &fe) {
			v.Add(fe.Field, fe.Description)
		}
	}
	if err := v.Err(); err != nil {
		return resultstore.RecordCommand{}, err
	}
	return resultstore.RecordCommand{
		RequestID: req.GetRequestId(), DataID: req.GetDataId(), DetectID: req.GetDetectId(), UserID: req.GetUserId(),
		ProjectID: req.GetProjectId(), SchoolID: req.GetSchoolId(), Grade: req.GetGrade(), Result: result, Unit: unit,
	}, nil
}

// change checks the fields every version-changing command of an existing
// record carries.
func (v *violations) change(requestID string, schoolID, dataID, expected int64, reason string) {
	v.RequestID(requestID)
	v.positive("school_id", schoolID)
	v.positive("data_id", dataID)
	if expected <= 0 {
		v.Add("expected_version", "must be the positive version the caller read")
	}
	v.text("reason", reason, maxReason)
}

// CorrectResult implements fitness.v1.ResultService. The record must belong
// to req.school_id: another school's record is NOT_FOUND and left unchanged.
func (s *Service) CorrectResult(ctx context.Context, req *fitnessv1.CorrectResultRequest) (*fitnessv1.CorrectResultResponse, error) {
	cmd, err := validateCorrect(req)
	if err != nil {
		return nil, err
	}
	if err := auth.CheckSchool(ctx, cmd.SchoolID); err != nil {
		return nil, err
	}
	out, err := s.storeFor(cmd.DataID).Correct(ctx, cmd)
	if err != nil {
		return nil, apierr.Status(err)
	}
	return &fitnessv1.CorrectResultResponse{Result: out.Result, EventId: out.EventID}, nil
}

// validateCorrect checks a CorrectResult request without a database (the
// project's unit and range are checked by the store, which knows the
// project) and returns its command.
func validateCorrect(req *fitnessv1.CorrectResultRequest) (resultstore.CorrectCommand, error) {
	var v violations
	v.change(req.GetRequestId(), req.GetSchoolId(), req.GetDataId(), req.GetExpectedVersion(), req.GetReason())
	if _, err := canonical.Decimal(req.GetResult()); err != nil {
		v.Add("result", err.Error())
	}
	if _, ok := canonical.Unit(req.GetUnit()); !ok {
		v.Add("unit", "unknown unit")
	}
	if err := v.Err(); err != nil {
		return resultstore.CorrectCommand{}, err
	}
	return resultstore.CorrectCommand{
		RequestID: req.GetRequestId(), SchoolID: req.GetSchoolId(), DataID: req.GetDataId(),
		ExpectedVersion: req.GetExpectedVersion(), Result: req.GetResult(), Unit: req.GetUnit(), Reason: req.GetReason(),
	}, nil
}

// DeleteResult implements fitness.v1.ResultService. The record must belong
// to req.school_id: another school's record is NOT_FOUND and left unchanged.
func (s *Service) DeleteResult(ctx context.Context, req *fitnessv1.DeleteResultRequest) (*fitnessv1.DeleteResultResponse, error) {
	cmd, err := validateDelete(req)
	if err != nil {
		return nil, err
	}
	if err := auth.CheckSchool(ctx, cmd.SchoolID); err != nil {
		return nil, err
	}
	out, err := s.storeFor(cmd.DataID).Delete(ctx, cmd)
	if err != nil {
		return nil, apierr.Status(err)
	}
	return &fitnessv1.DeleteResultResponse{Result: out.Result, EventId: out.EventID}, nil
}

// validateDelete checks a DeleteResult request without a database and
// returns its command.
func validateDelete(req *fitnessv1.DeleteResultRequest) (resultstore.DeleteCommand, error) {
	var v violations
	v.change(req.GetRequestId(), req.GetSchoolId(), req.GetDataId(), req.GetExpectedVersion(), req.GetReason())
	if err := v.Err(); err != nil {
		return resultstore.DeleteCommand{}, err
	}
	return resultstore.DeleteCommand{
		RequestID: req.GetRequestId(), SchoolID: req.GetSchoolId(), DataID: req.GetDataId(),
		ExpectedVersion: req.GetExpectedVersion(), Reason: req.GetReason(),
	}, nil
}

// GetResult implements fitness.v1.ResultService. Another school's record is
// NOT_FOUND.
func (s *Service) GetResult(ctx context.Context, req *fitnessv1.GetResultRequest) (*fitnessv1.GetResultResponse, error) {
	var v violations
	v.positive("school_id", req.GetSchoolId())
	v.positive("data_id", req.GetDataId())
	if err := v.Err(); err != nil {
		return nil, err
	}
	if err := auth.CheckSchool(ctx, req.GetSchoolId()); err != nil {
		return nil, err
	}
	r, err := s.storeFor(req.GetDataId()).Get(ctx, req.GetSchoolId(), req.GetDataId())
	if err != nil {
		return nil, apierr.Status(err)
	}
	return &fitnessv1.GetResultResponse{Result: r}, nil
}

// pageToken is the opaque continuation of ListResults: the last data_id
// returned, bound to the filter it was issued for (pkg/platform/paging).
func pageToken(req *fitnessv1.ListResultsRequest, after int64) string {
	return paging.Encode(listFilter(req), after)
}

func listFilter(req *fitnessv1.ListResultsRequest) string {
	return fmt.Sprintf("results|v1:%d:%d:%d:%t", req.GetDetectId(), req.GetSchoolId(), req.GetProjectId(), req.GetShowDeleted())
}

// parsePageToken returns the last data_id of the previous page (0 for the
// first page); a token of another query, a forged or a truncated one is an
// error.
func parsePageToken(req *fitnessv1.ListResultsRequest) (int64, error) {
	after, err := paging.Decode(req.GetPageToken(), listFilter(req))
	if err != nil {
		return 0, errors.New(status.Convert(err).Message())
	}
	return after, nil
}

// ListResults implements fitness.v1.ResultService. A school's results are
// spread over every shard (routing is by data_id), so every list reads every
// shard, each up to one more than a page after the token's data_id, and
// merges by data_id; any unreachable shard fails the call (a partial list
// would look complete).
func (s *Service) ListResults(ctx context.Context, req *fitnessv1.ListResultsRequest) (*fitnessv1.ListResultsResponse, error) {
	q, err := validateList(req)
	if err != nil {
		return nil, err
	}
	if err := auth.CheckScope(ctx, q.SchoolID, "a list of results"); err != nil {
		return nil, err
	}
	size := q.Limit - 1
	var all []*fitnessv1.FitnessResult
	for _, st := range s.stores {
		rs, err := st.List(ctx, q)
		if err != nil {
			return nil, apierr.Status(err)
		}
		all = append(all, rs...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].GetDataId() < all[j].GetDataId() })
	resp := &fitnessv1.ListResultsResponse{}
	if len(all) > size {
		all = all[:size]
		resp.NextPageToken = pageToken(req, all[size-1].GetDataId())
	}
	resp.Results = all
	return resp, nil
}

// validateList checks a ListResults request and its page token without a
// database and returns the query of one shard: Limit is one more than the
// page size.
func validateList(req *fitnessv1.ListResultsRequest) (resultstore.ListQuery, error) {
	var v violations
	v.positive("detect_id", req.GetDetectId())
	if req.GetSchoolId() < 0 {
		v.Add("school_id", "must be positive, or 0 for every school")
	}
	if req.GetProjectId() < 0 {
		v.Add("project_id", "must be positive, or 0 for every project")
	}
	size := int(req.GetPageSize())
	switch {
	case size < 0:
		v.Add("page_size", "must not be negative")
	case size == 0:
		size = defaultPageSize
	case size > maxPageSize:
		size = maxPageSize
	}
	after, err := parsePageToken(req)
	if err != nil {
		v.Add("page_token", err.Error())
	}
	if err := v.Err(); err != nil {
		return resultstore.ListQuery{}, err
	}
	return resultstore.ListQuery{DetectID: req.GetDetectId(), SchoolID: req.GetSchoolId(), ProjectID: req.GetProjectId(),
		ShowDeleted: req.GetShowDeleted(), AfterDataID: after, Limit: size + 1}, nil
}
