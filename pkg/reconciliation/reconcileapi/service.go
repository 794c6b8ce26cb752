// Package reconcileapi implements fitness.v1.ReconcileService over the
// reconciliation engine (pkg/reconciliation/reconcile): runs are stored in the control
// database, submitted to the runner's worker (reconcile.Runner.Run, which
// the server supervises), and watched by streaming.
package reconcileapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/changefeed"
	"github.com/resultsync/resultsync/pkg/platform/idempotency"
	"github.com/resultsync/resultsync/pkg/platform/paging"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
)

// CampaignChecker tells whether a campaign exists on the authoritative side.
type CampaignChecker interface {
	CampaignExists(ctx context.Context, detectID int64) (bool, error)
}

// Service implements fitness.v1.ReconcileService.
type Service struct {
	fitnessv1.UnimplementedReconcileServiceServer
	store  *reconcile.RunStore
	runner *reconcile.Runner
	camps  CampaignChecker
	watch  changefeed.WatchOptions
	// sched and buckets serve ListCampaigns (nil: FAILED_PRECONDITION).
	sched   *reconcile.ScheduleStore
	buckets int
	// requests keeps StartReconciliationRun's request ids (nil: a
	// request_id is accepted and not kept).
	requests *idempotency.Store
}

// Option configures a Service.
type Option func(*Service)

// WithSchedule serves ListCampaigns from the schedule store, for runs of
// buckets buckets.
func WithSchedule(sched *reconcile.ScheduleStore, buckets int) Option {
	return func(s *Service) { s.sched, s.buckets = sched, buckets }
}

// WithIdempotency keeps the request ids of StartReconciliationRun in the
// control database: a retry returns the same run.
func WithIdempotency(st *idempotency.Store) Option { return func(s *Service) { s.requests = st } }

// WithWatch sets how WatchReconciliationRun waits for changes and how long a
// stream lasts (default changefeed.DefaultWatchOptions).
func WithWatch(o changefeed.WatchOptions) Option { return func(s *Service) { s.watch = o } }

// New returns the service. Runs started through it are executed by the
// runner's worker (runner.Run, which the caller runs) and live until it
// stops.
func New(store *reconcile.RunStore, runner *reconcile.Runner, camps CampaignChecker, opts ...Option) *Service {
	s := &Service{store: store, runner: runner, camps: camps, watch: changefeed.DefaultWatchOptions()}
	for _, o := range opts {
		o(s)
	}
	return s
}

func toProto(r reconcile.Run) *fitnessv1.ReconciliationRun {
	p := &fitnessv1.ReconciliationRun{
		RunId: r.ID, Scope: &fitnessv1.ReconcileScope{DetectId: r.Scope.DetectID, ProjectId: r.Scope.ProjectID, SchoolId: r.Scope.SchoolID},
		Depth: fitnessv1.ReconcileDepth(r.Depth), State: fitnessv1.RunState(fitnessv1.RunState_value["RUN_STATE_"+r.State]),
		BucketsDone: r.BucketsDone, BucketsTotal: r.BucketsTotal, RowsCompared: r.RowsCompared, DiscrepancyCount: r.Discrepancies,
		BoundaryRetries: int32(r.BoundaryRetries), Message: strings.TrimSpace(r.Message), ErrorMessage: r.Error,
		CreateTime: timestamppb.New(r.Created), SampleRate: r.SampleRate, InFlightCount: r.InFlight,
	}
	if !r.Ended.IsZero() {
		p.EndTime = timestamppb.New(r.Ended)
	}
	ts := func(t time.Time) *timestamppb.Timestamp {
		if t.IsZero() {
			return nil
		}
		return timestamppb.New(t)
	}
	for _, sh := range r.Shards {
		p.Shards = append(p.Shards, &fitnessv1.RunShard{ShardId: sh.ShardID, BoundaryTime: ts(sh.Boundary), AppliedTime: ts(sh.Applied),
			Behind: sh.Behind, InFlightCount: sh.InFlight})
	}
	return p
}

// checkRun: a run (its discrepancies, its progress) is for the callers of
// its scope's school; a campaign-wide run for platform-wide callers.
func checkRun(ctx context.Context, r reconcile.Run) error {
	return auth.CheckScope(ctx, r.Scope.SchoolID, "reconciliation run "+r.ID)
}

// StartReconciliationRun implements fitness.v1.ReconcileService.
func (s *Service) StartReconciliationRun(ctx context.Context, req *fitnessv1.StartReconciliationRunRequest) (*fitnessv1.StartReconciliationRunResponse, error) {
	sc := req.GetScope()
	var v apierr.Violations
	v.Scope(sc.GetDetectId(), sc.GetProjectId(), sc.GetSchoolId())
	if req.GetDepth() < fitnessv1.ReconcileDepth_RECONCILE_DEPTH_COUNTS || req.GetDepth() > fitnessv1.ReconcileDepth_RECONCILE_DEPTH_CONTENT {
		v.Add("depth", "must be COUNTS, VERSIONS or CONTENT")
	}
	if math.IsNaN(req.GetSampleRate()) || req.GetSampleRate() < 0 || req.GetSampleRate() > 1 {
		v.Add("sample_rate", "must be between 0 and 1")
	}
	v.OptionalRequestID(req.GetRequestId())
	if err := v.Err(); err != nil {
		return nil, err
	}
	// A run of one school is for a caller of that school; a campaign-wide
	// run (school 0) crosses schools: platform-wide callers only.
	if err := auth.CheckScope(ctx, sc.GetSchoolId(), "a reconciliation run"); err != nil {
		return nil, err
	}
	ok, err := s.camps.CampaignExists(ctx, sc.GetDetectId())
	if err != nil {
		return nil, apierr.Status(err)
	}
	if !ok {
		return nil, apierr.ReasonError(codes.NotFound, apierr.CampaignNotFound, fmt.Sprintf("campaign %d has no results on any shard", sc.GetDetectId()),
			"detect_id", strconv.FormatInt(sc.GetDetectId(), 10))
	}
	by := "anonymous"
	if p, ok := auth.FromContext(ctx); ok {
		by = p.Subject
	}
	resp, err := idempotency.Do(ctx, s.requests, "StartReconciliationRun", by, req,
		func(ctx context.Context, a idempotency.Attempt) (*fitnessv1.StartReconciliationRunResponse, error) {
			r, err := s.start(ctx, a, reconcile.Scope{DetectID: sc.GetDetectId(), ProjectID: sc.GetProjectId(), SchoolID: sc.GetSchoolId()},
				reconcile.Depth(req.GetDepth()), req.GetSampleRate(), by)
			if err != nil {
				return nil, err
			}
			return &fitnessv1.StartReconciliationRunResponse{Run: toProto(r)}, nil
		})
	if err != nil {
		return nil, apierr.Status(err)
	}
	return resp, nil
}

// start stores a run and submits it to the runner. With a request_id the
// run's id is the key's reservation token, so an attempt that takes over
// the reservation of one that crashed after storing its run finds that run
// (and submits nothing) instead of starting a second one.
func (s *Service) start(ctx context.Context, a idempotency.Attempt, sc reconcile.Scope, depth reconcile.Depth, sample float64, by string) (reconcile.Run, error) {
	if a.Retry {
		if r, err := s.store.Get(ctx, a.Token); err == nil {
			return r, nil
		} else if !errors.Is(err, reconcile.ErrRunNotFound) {
			return reconcile.Run{}, err
		}
	}
	release, err := s.runner.Admit()
	if err != nil {
		return reconcile.Run{}, err
	}
	var r reconcile.Run
	var existed bool
	if a.Token == "" {
		r, err = s.store.Create(ctx, sc, depth, sample, by)
	} else {
		r, existed, err = s.store.CreateWithID(ctx, a.Token, sc, depth, sample, by)
	}
	if err != nil || existed {
		release()
		return r, err
	}
	// The run outlives this request: only the worker's end cancels it.
	s.runner.Submit(context.WithoutCancel(ctx), r, release)
	return r, nil
}

// GetReconciliationRun implements fitness.v1.ReconcileService.
func (s *Service) GetReconciliationRun(ctx context.Context, req *fitnessv1.GetReconciliationRunRequest) (*fitnessv1.GetReconciliationRunResponse, error) {
	if req.GetRunId() == "" {
		return nil, (&apierr.Violations{{Field: "run_id", Description: "required"}}).Err()
	}
	r, err := s.store.Get(ctx, req.GetRunId())
	if err != nil {
		return nil, apierr.Status(err)
	}
	if err := checkRun(ctx, r); err != nil {
		return nil, err
	}
	return &fitnessv1.GetReconciliationRunResponse{Run: toProto(r)}, nil
}

// ListReconciliationRuns implements fitness.v1.ReconcileService.
func (s *Service) ListReconciliationRuns(ctx context.Context, req *fitnessv1.ListReconciliationRunsRequest) (*fitnessv1.ListReconciliationRunsResponse, error) {
	size, err := paging.Size(req.GetPageSize(), 50, 500)
	if err != nil {
		return nil, err
	}
	// A token is bound to the query it came from: another campaign's is refused.
	scope := fmt.Sprintf("runs|%d", req.GetDetectId())
	before, err := paging.Decode(req.GetPageToken(), scope)
	if err != nil {
		return nil, err
	}
	runs, ids, err := s.store.List(ctx, req.GetDetectId(), before, size+1)
	if err != nil {
		return nil, apierr.Status(err)
	}
	resp := &fitnessv1.ListReconciliationRunsResponse{}
	if len(runs) > size {
		runs = runs[:size]
		resp.NextPageToken = paging.Encode(scope, ids[size-1])
	}
	// A caller of some schools sees the runs of its schools (a page may
	// come out shorter than asked; the token still continues the list).
	for _, r := range runs {
		if checkRun(ctx, r) == nil {
			resp.Runs = append(resp.Runs, toProto(r))
		}
	}
	return resp, nil
}

// WatchReconciliationRun implements fitness.v1.ReconcileService: it sends the
// run at once and whenever it changes, and returns after the terminal state
// is sent. It reads the run again when this process updates it (the run
// store's Changes), at most every MinInterval, and every Poll without a
// notification (a run of another replica). A stream lasts at most the
// watch's maximum duration (--watch-max-duration): then it ends with
// UNAVAILABLE, a status a client retries; watching again resumes, with the
// current state sent first.
func (s *Service) WatchReconciliationRun(req *fitnessv1.WatchReconciliationRunRequest, stream fitnessv1.ReconcileService_WatchReconciliationRunServer) error {
	if req.GetRunId() == "" {
		return status.Error(codes.InvalidArgument, "run_id is required")
	}
	ctx := stream.Context()
	var last *fitnessv1.ReconciliationRun
	err := changefeed.Watch(ctx, s.store.Changes(), reconcile.RunKey(req.GetRunId()), s.watch, func(ctx context.Context) (bool, error) {
		r, err := s.store.Get(ctx, req.GetRunId())
		if err != nil {
			return false, apierr.Status(err)
		}
		if err := checkRun(ctx, r); err != nil {
			return false, err
		}
		p := toProto(r)
		if last == nil || last.GetState() != p.GetState() || last.GetBucketsDone() != p.GetBucketsDone() ||
			last.GetDiscrepancyCount() != p.GetDiscrepancyCount() || last.GetBoundaryRetries() != p.GetBoundaryRetries() ||
			last.GetInFlightCount() != p.GetInFlightCount() || last.GetMessage() != p.GetMessage() {
			if err := stream.Send(&fitnessv1.WatchReconciliationRunResponse{Run: p}); err != nil {
				return false, err
			}
			last = p
		}
		return r.Terminal(), nil
	})
	switch {
	case errors.Is(err, changefeed.ErrMaxDuration):
		return status.Errorf(codes.Unavailable, "WatchReconciliationRun stream ended after its maximum duration of %s (--watch-max-duration); "+
			"call WatchReconciliationRun again to resume: it sends the current state first", s.watch.MaxDuration)
	case err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return status.FromContextError(ctx.Err()).Err()
	}
	return err
}

// ListDiscrepancies implements fitness.v1.ReconcileService.
func (s *Service) ListDiscrepancies(ctx context.Context, req *fitnessv1.ListDiscrepanciesRequest) (*fitnessv1.ListDiscrepanciesResponse, error) {
	if req.GetRunId() == "" {
		return nil, (&apierr.Violations{{Field: "run_id", Description: "required"}}).Err()
	}
	if c := req.GetClass(); c < 0 || c > fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_TARGET_AHEAD_OF_SOURCE {
		return nil, (&apierr.Violations{{Field: "class", Description: "unknown discrepancy class"}}).Err()
	}
	size, err := paging.Size(req.GetPageSize(), 100, 1000)
	if err != nil {
		return nil, err
	}
	// A token is bound to the run and filter it came from: another run's is refused.
	scope := fmt.Sprintf("discrepancies|%s|%d|%t", req.GetRunId(), req.GetClass(), req.GetUnresolvedOnly())
	after, err := paging.Decode(req.GetPageToken(), scope)
	if err != nil {
		return nil, err
	}
	run, err := s.store.Get(ctx, req.GetRunId())
	if err != nil {
		return nil, apierr.Status(err)
	}
	if err := checkRun(ctx, run); err != nil {
		return nil, err
	}
	ds, err := s.store.ListDiscrepancies(ctx, req.GetRunId(), reconcile.DiscrepancyFilter{Class: reconcile.Class(req.GetClass()),
		UnresolvedOnly: req.GetUnresolvedOnly()}, after, size+1)
	if err != nil {
		return nil, apierr.Status(err)
	}
	resp := &fitnessv1.ListDiscrepanciesResponse{}
	if len(ds) > size {
		ds = ds[:size]
		resp.NextPageToken = paging.Encode(scope, ds[size-1].DataID)
	}
	side := func(r *reconcile.Record) *fitnessv1.RecordSide {
		if r == nil {
			return &fitnessv1.RecordSide{}
		}
		return &fitnessv1.RecordSide{Present: true, Version: r.Version, IsDeleted: r.Deleted, Canonical: r.Canonical}
	}
	for _, d := range ds {
		p := &fitnessv1.Discrepancy{
			DiscrepancyId: d.ID, RunId: d.RunID, Class: fitnessv1.DiscrepancyClass(d.Class), DataId: d.DataID, DetectId: run.Scope.DetectID,
			Source: side(d.Source), Target: side(d.Target), CreateTime: timestamppb.New(d.Created), Resolved: d.Resolved,
			ResolvedByRunId: d.ResolvedByRun, Resolution: resolution(d.Resolution),
		}
		if !d.ResolveTime.IsZero() {
			p.ResolveTime = timestamppb.New(d.ResolveTime)
		}
		resp.Discrepancies = append(resp.Discrepancies, p)
	}
	return resp, nil
}

func resolution(s string) fitnessv1.DiscrepancyResolution {
	switch s {
	case reconcile.ResolutionCleanRun:
		return fitnessv1.DiscrepancyResolution_DISCREPANCY_RESOLUTION_CLEAN_RUN
	case reconcile.ResolutionRepair:
		return fitnessv1.DiscrepancyResolution_DISCREPANCY_RESOLUTION_VERIFIED_REPAIR
	}
	return fitnessv1.DiscrepancyResolution_DISCREPANCY_RESOLUTION_UNSPECIFIED
}

// ListCampaigns implements fitness.v1.ReconcileService.
func (s *Service) ListCampaigns(ctx context.Context, req *fitnessv1.ListCampaignsRequest) (*fitnessv1.ListCampaignsResponse, error) {
	if err := auth.CheckPlatform(ctx, "the reconciliation schedule"); err != nil {
		return nil, err
	}
	if s.sched == nil {
		return nil, apierr.ReasonError(codes.FailedPrecondition, apierr.NoSchedule, "this server keeps no reconciliation schedule")
	}
	size, err := paging.Size(req.GetPageSize(), 100, 1000)
	if err != nil {
		return nil, err
	}
	const scope = "campaigns"
	after, err := paging.Decode(req.GetPageToken(), scope)
	if err != nil {
		return nil, err
	}
	cs, err := s.sched.List(ctx, s.buckets, after, size+1)
	if err != nil {
		return nil, apierr.Status(err)
	}
	resp := &fitnessv1.ListCampaignsResponse{}
	if len(cs) > size {
		cs = cs[:size]
		resp.NextPageToken = paging.Encode(scope, cs[size-1].DetectID)
	}
	ts := func(t time.Time) *timestamppb.Timestamp {
		if t.IsZero() {
			return nil
		}
		return timestamppb.New(t)
	}
	for _, c := range cs {
		resp.Campaigns = append(resp.Campaigns, &fitnessv1.CampaignSchedule{
			DetectId: c.DetectID, FirstSeenTime: ts(c.FirstSeen), LastCleanRunId: c.LastCleanRunID, LastCleanTime: ts(c.LastClean),
			LastCleanRevision: c.LastCleanRevision, LastRunId: c.LastRunID, LastRunTime: ts(c.LastRun), SampleCursor: int32(c.SampleCursor),
			LastSampleTime: ts(c.LastSample), CheckedBuckets: int32(c.CheckedBuckets), BucketsTotal: int32(s.buckets),
			OldestCheckTime: ts(c.OldestUnchecked(s.buckets)),
		})
	}
	return resp, nil
}
