// Package outboxapi implements fitness.v1.OutboxService: listing outbox rows
// by shard and status, per-shard counts and oldest-unsent age, and the
// explicit, audited replay of PARKED events.
package outboxapi

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/platform/audit"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/idempotency"
	"github.com/resultsync/resultsync/pkg/platform/paging"
)

// Auditor records administrative actions (audit.Log).
type Auditor interface {
	Begin(ctx context.Context, e audit.Entry) (string, error)
	Finish(ctx context.Context, id, outcome string) error
}

// Service implements fitness.v1.OutboxService.
type Service struct {
	fitnessv1.UnimplementedOutboxServiceServer
	order []string
	repos map[string]*outbox.Repo
	audit Auditor
	// requests keeps ReplayParkedEvents' request ids (nil: a request_id is
	// accepted and not kept).
	requests *idempotency.Store
}

// Option configures a Service.
type Option func(*Service)

// WithIdempotency keeps the request ids of ReplayParkedEvents in the
// control database (where the audit log is): a retry returns the first
// call's answer and replays nothing twice.
func WithIdempotency(st *idempotency.Store) Option { return func(s *Service) { s.requests = st } }

// New returns the service over the shards' repos (in shard map order).
func New(repos []*outbox.Repo, a Auditor, opts ...Option) *Service {
	s := &Service{repos: map[string]*outbox.Repo{}, audit: a}
	for _, r := range repos {
		s.order = append(s.order, r.ShardID())
		s.repos[r.ShardID()] = r
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

var statusNames = map[fitnessv1.OutboxStatus]string{
	fitnessv1.OutboxStatus_OUTBOX_STATUS_NEW:        outbox.StatusNew,
	fitnessv1.OutboxStatus_OUTBOX_STATUS_PROCESSING: outbox.StatusProcessing,
	fitnessv1.OutboxStatus_OUTBOX_STATUS_SENT:       outbox.StatusSent,
	fitnessv1.OutboxStatus_OUTBOX_STATUS_FAILED:     outbox.StatusFailed,
	fitnessv1.OutboxStatus_OUTBOX_STATUS_PARKED:     outbox.StatusParked,
}

func toProtoStatus(s string) fitnessv1.OutboxStatus {
	for k, v := range statusNames {
		if v == s {
			return k
		}
	}
	return fitnessv1.OutboxStatus_OUTBOX_STATUS_UNSPECIFIED
}

func (s *Service) repo(id string) (*outbox.Repo, error) {
	if id == "" {
		return nil, (&apierr.Violations{{Field: "shard_id", Description: "required: one of " + strings.Join(s.order, ", ")}}).Err()
	}
	r, ok := s.repos[id]
	if !ok {
		return nil, apierr.ReasonError(codes.NotFound, apierr.ShardNotFound, fmt.Sprintf("unknown shard %q (known: %s)", id, strings.Join(s.order, ", ")), "shard_id", id)
	}
	return r, nil
}

// pageToken is the opaque continuation of ListOutboxEvents: the last outbox
// id returned, bound to the shard and status it was issued for.
func pageToken(shard string, st fitnessv1.OutboxStatus, after int64) string {
	return paging.Encode(listScope(shard, st), after)
}

func listScope(shard string, st fitnessv1.OutboxStatus) string {
	return fmt.Sprintf("outbox|%s|%d", shard, st)
}

// pagePosition returns the last outbox id of the previous page (0 for the
// first page); a token of another shard or status, a forged or a truncated
// one is INVALID_ARGUMENT.
func pagePosition(tok, shard string, st fitnessv1.OutboxStatus) (int64, error) {
	return paging.Decode(tok, listScope(shard, st))
}

// ListOutboxEvents implements fitness.v1.OutboxService.
func (s *Service) ListOutboxEvents(ctx context.Context, req *fitnessv1.ListOutboxEventsRequest) (*fitnessv1.ListOutboxEventsResponse, error) {
	if err := auth.CheckPlatform(ctx, "the outbox"); err != nil {
		return nil, err
	}
	r, err := s.repo(req.GetShardId())
	if err != nil {
		return nil, err
	}
	st := req.GetStatus()
	name, ok := statusNames[st]
	if !ok && st != fitnessv1.OutboxStatus_OUTBOX_STATUS_UNSPECIFIED {
		return nil, (&apierr.Violations{{Field: "status", Description: fmt.Sprintf("unknown status %d", st)}}).Err()
	}
	size, err := paging.Size(req.GetPageSize(), 100, 1000)
	if err != nil {
		return nil, err
	}
	after, err := pagePosition(req.GetPageToken(), req.GetShardId(), st)
	if err != nil {
		return nil, err
	}
	rows, err := r.List(ctx, name, after, size+1)
	if err != nil {
		return nil, apierr.Status(err)
	}
	resp := &fitnessv1.ListOutboxEventsResponse{}
	if len(rows) > size {
		rows = rows[:size]
		resp.NextPageToken = pageToken(req.GetShardId(), st, rows[size-1].ID)
	}
	for _, x := range rows {
		e := &fitnessv1.OutboxEvent{
			ShardId: r.ShardID(), Id: x.ID, EventId: x.EventID, DataId: x.DataID, Version: x.Version,
			Status: toProtoStatus(x.Status), Attempts: int32(x.Attempts), LastError: x.LastError, CreateTime: timestamppb.New(x.Created),
		}
		switch x.Status {
		case outbox.StatusFailed:
			e.NextRetryTime = timestamppb.New(x.DueTime)
		case outbox.StatusProcessing:
			e.LeaseExpireTime = timestamppb.New(x.DueTime)
		case outbox.StatusSent:
			e.SentTime = timestamppb.New(x.Sent)
		}
		resp.Events = append(resp.Events, e)
	}
	return resp, nil
}

// GetOutboxStats implements fitness.v1.OutboxService.
func (s *Service) GetOutboxStats(ctx context.Context, req *fitnessv1.GetOutboxStatsRequest) (*fitnessv1.GetOutboxStatsResponse, error) {
	if err := auth.CheckPlatform(ctx, "the outbox"); err != nil {
		return nil, err
	}
	ids := s.order
	if req.GetShardId() != "" {
		if _, err := s.repo(req.GetShardId()); err != nil {
			return nil, err
		}
		ids = []string{req.GetShardId()}
	}
	resp := &fitnessv1.GetOutboxStatsResponse{}
	for _, id := range ids {
		st, err := s.repos[id].Stats(ctx)
		if err != nil {
			return nil, apierr.Status(err)
		}
		ss := &fitnessv1.ShardOutboxStats{
			ShardId: id, NewCount: st.Counts[outbox.StatusNew], ProcessingCount: st.Counts[outbox.StatusProcessing],
			FailedCount: st.Counts[outbox.StatusFailed], ParkedCount: st.Counts[outbox.StatusParked], SentCount: st.Counts[outbox.StatusSent],
			ExpiredClaims: st.ExpiredClaims, OldestUnsentAge: durationpb.New(0),
		}
		if !st.OldestUnsent.IsZero() {
			ss.OldestUnsentAge = durationpb.New(max(0, time.Since(st.OldestUnsent)).Truncate(time.Millisecond))
		}
		resp.Shards = append(resp.Shards, ss)
	}
	return resp, nil
}

// ReplayParkedEvents implements fitness.v1.OutboxService. The call is
// audited (caller, scope, reason) before anything changes, and its outcome
// recorded after. With a request_id it is idempotent (pkg/platform/idempotency):
// a retry gets the first call's answer (its count and audit id). A replay
// moves only PARKED rows, so an attempt that takes over the reservation of
// one that crashed before storing its answer replays what is still parked,
// never a row twice, and answers its own count.
func (s *Service) ReplayParkedEvents(ctx context.Context, req *fitnessv1.ReplayParkedEventsRequest) (*fitnessv1.ReplayParkedEventsResponse, error) {
	if err := auth.CheckPlatform(ctx, "the outbox"); err != nil {
		return nil, err
	}
	r, err := s.repo(req.GetShardId())
	if err != nil {
		return nil, err
	}
	reason := strings.TrimSpace(req.GetReason())
	var v apierr.Violations
	if reason == "" || len(reason) > 512 {
		v.Add("reason", "required (1-512 bytes): it is recorded in the audit log")
	}
	if len(req.GetIds()) > 10000 {
		v.Add("ids", "at most 10000 ids per call")
	}
	v.OptionalRequestID(req.GetRequestId())
	limit := int(req.GetLimit())
	if limit < 0 {
		v.Add("limit", "must not be negative")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	switch {
	case limit == 0:
		limit = 1000
	case limit > 10000:
		limit = 10000
	}
	caller := "anonymous"
	if p, ok := auth.FromContext(ctx); ok {
		caller = p.Subject
	}
	resp, err := idempotency.Do(ctx, s.requests, "ReplayParkedEvents", caller, req,
		func(ctx context.Context, _ idempotency.Attempt) (*fitnessv1.ReplayParkedEventsResponse, error) {
			return s.replay(ctx, r, req, caller, reason, limit)
		})
	if err != nil {
		return nil, apierr.Status(err)
	}
	return resp, nil
}

// replay audits and runs one replay.
func (s *Service) replay(ctx context.Context, r *outbox.Repo, req *fitnessv1.ReplayParkedEventsRequest, caller, reason string, limit int) (*fitnessv1.ReplayParkedEventsResponse, error) {
	scope := fmt.Sprintf("shard=%s ids=%v data_id=%d limit=%d", r.ShardID(), req.GetIds(), req.GetDataId(), limit)
	if id := req.GetRequestId(); id != "" {
		scope += " request=" + id
	}
	auditID, err := s.audit.Begin(ctx, audit.Entry{Caller: caller, Action: "outbox.replay_parked", Scope: scope, Reason: reason})
	if err != nil {
		return nil, apierr.ReasonError(codes.Unavailable, apierr.DependencyUnavailable, fmt.Sprintf("the replay was not started because it could not be audited: %v", err),
			"dependency", "audit log")
	}
	replayed, err := r.ReplayParked(ctx, req.GetIds(), req.GetDataId(), limit)
	outcome := fmt.Sprintf("replayed %d rows %v", len(replayed), replayed)
	if err != nil {
		outcome = "failed: " + err.Error()
	}
	if ferr := s.audit.Finish(context.WithoutCancel(ctx), auditID, outcome); ferr != nil && err == nil {
		err = ferr
	}
	if err != nil {
		return nil, err
	}
	return &fitnessv1.ReplayParkedEventsResponse{ReplayedCount: int64(len(replayed)), AuditId: auditID}, nil
}
