// Package repairapi implements fitness.v1.RepairService over pkg/recovery/repair:
// request validation with field-level INVALID_ARGUMENT details, the role
// each call needs (checked again here, behind the server's auth
// interceptor), the audit of every mutating call with its caller (written
// before the call acts, its outcome after: a refused call leaves only its
// audit entry), pagination and the Watch streams. Errors become status codes
// through pkg/platform/apierr, database errors named as the control database's.
package repairapi

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/platform/audit"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/changefeed"
	"github.com/resultsync/resultsync/pkg/platform/idempotency"
	"github.com/resultsync/resultsync/pkg/platform/paging"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/recovery/repair"
)

// Limits on request fields.
const (
	maxID             = 64
	maxReason         = 512
	maxDiscrepancyIDs = 10000
	maxPlanItems      = 1000
	defaultPlanItems  = 100
	maxShownIDs       = 1000
)

// Auditor records administrative actions (audit.Log).
type Auditor interface {
	Begin(ctx context.Context, e audit.Entry) (string, error)
	Finish(ctx context.Context, id, outcome string) error
}

// Service implements fitness.v1.RepairService.
type Service struct {
	fitnessv1.UnimplementedRepairServiceServer
	mgr   *repair.Manager
	store *repair.Store
	audit Auditor
	watch changefeed.WatchOptions
	// requests keeps the request ids of the approvals, cancellations and
	// verifications (nil: a request_id is accepted and not kept).
	requests *idempotency.Store
}

// Option configures a Service.
type Option func(*Service)

// WithWatch sets how WatchRepair and WatchRebuild wait for changes and how
// long a stream lasts (default changefeed.DefaultWatchOptions).
func WithWatch(o changefeed.WatchOptions) Option { return func(s *Service) { s.watch = o } }

// WithIdempotency keeps the request ids of ApproveRepair, CancelRepair,
// VerifyRepair, ApproveRebuild and CancelRebuild in the control database:
// a retry returns the first answer.
func WithIdempotency(st *idempotency.Store) Option { return func(s *Service) { s.requests = st } }

// New returns the service over the manager (rules), the store (reads) and
// the audit log.
func New(mgr *repair.Manager, store *repair.Store, a Auditor, opts ...Option) *Service {
	s := &Service{mgr: mgr, store: store, audit: a, watch: changefeed.DefaultWatchOptions()}
	for _, o := range opts {
		o(s)
	}
	return s
}

// ---- validation and errors ----

// violations collects the invalid fields of one request, with the checks
// this service's requests share.
type violations struct{ apierr.Violations }

func (v *violations) id(field, id string) {
	switch {
	case id == "":
		v.Add(field, "required")
	case len(id) > maxID:
		v.Add(field, fmt.Sprintf("at most %d characters", maxID))
	}
}

// reason checks a reason; required ones must not be blank.
func (v *violations) reason(s string, required bool) {
	switch {
	case required && strings.TrimSpace(s) == "":
		v.Add("reason", "required: it is recorded in the audit log")
	case len(s) > maxReason:
		v.Add("reason", fmt.Sprintf("at most %d bytes", maxReason))
	}
}

func (v *violations) discrepancyIDs(ids []string) {
	if len(ids) > maxDiscrepancyIDs {
		v.Add("discrepancy_ids", fmt.Sprintf("at most %d per request (an empty list selects every open one)", maxDiscrepancyIDs))
		return
	}
	seen := map[string]bool{}
	for i, id := range ids {
		field := fmt.Sprintf("discrepancy_ids[%d]", i)
		switch {
		case id == "" || len(id) > maxID:
			v.Add(field, "must be a discrepancy id")
		case seen[id]:
			v.Add(field, "duplicate")
		}
		seen[id] = true
	}
}

func (v *violations) epoch(field string, e int32, required bool) {
	switch {
	case required && e == 0:
		v.Add(field, "required: the fixed transformation's epoch (1-65535)")
	case e < 0 || e > 65535:
		v.Add(field, "must be 1-65535")
	}
}

// controlDB names the database behind this service's unmarked database
// errors in their status messages (apierr.StatusIn).
const controlDB = "control database"

// ---- access and audit ----

// check returns the caller and whether its role suffices. The server's
// interceptor already enforces pkg/platform/auth's policy; this repeats the check
// for in-process callers, and refuses a call without an authenticated
// caller (an approval must name its approver).
func check(ctx context.Context, method string, need auth.Role) (auth.Principal, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return auth.Principal{Subject: "anonymous"}, apierr.New(apierr.PermissionDenied, method+" needs an authenticated caller with role "+need.String())
	}
	if p.Role < need {
		return p, apierr.New(apierr.PermissionDenied, fmt.Sprintf("%s needs role %s; %s has %s", method, need, p.Subject, p.Role))
	}
	return p, nil
}

// audited records a mutating call, checks the caller's role, runs do and
// records its outcome. A refusal (role, precondition) is audited and
// changes nothing else. It returns do's error as a status.
func (s *Service) audited(ctx context.Context, method, action, scope, reason string, need auth.Role, do func(by string) (string, error)) error {
	p, perr := check(ctx, method, need)
	id, err := s.audit.Begin(ctx, audit.Entry{Caller: p.Subject, Action: action, Scope: scope, Reason: reason})
	if err != nil {
		return apierr.ReasonError(codes.Unavailable, apierr.DependencyUnavailable, fmt.Sprintf("%s was not done because it could not be audited: %v", method, err),
			"dependency", "audit log")
	}
	var outcome string
	if perr != nil {
		err, outcome = perr, "refused: "+perr.Error()
	} else if outcome, err = do(p.Subject); err != nil {
		outcome = "failed: " + err.Error()
		if c := apierr.Code(err); c == codes.FailedPrecondition || c == codes.NotFound || c == codes.InvalidArgument || c == codes.PermissionDenied {
			outcome = "refused: " + err.Error()
		}
	}
	if ferr := s.audit.Finish(context.WithoutCancel(ctx), id, outcome); ferr != nil && err == nil {
		err = ferr
	}
	return apierr.StatusIn(controlDB, err)
}

// ---- schools ----

// A repair acts on the discrepancies of one reconciliation run, so it is for
// the callers of the run's school (auth.CheckScope: a campaign-wide run's
// repairs are for platform-wide callers). A rebuild rewrites the
// projection: platform-wide callers only. A mutating call refused for its
// school is audited like a refusal for its role.

// checkRun checks the caller may act on run runID's discrepancies.
func (s *Service) checkRun(ctx context.Context, runID string) error {
	sc, err := s.mgr.RunScope(ctx, runID)
	if err != nil {
		return err
	}
	return auth.CheckScope(ctx, sc.SchoolID, "the repairs of run "+runID)
}

// checkRepair checks the caller may see or act on repair id.
func (s *Service) checkRepair(ctx context.Context, id string) error {
	r, err := s.store.GetRepair(ctx, id)
	if err != nil {
		return err
	}
	return auth.CheckScope(ctx, r.Scope.SchoolID, "repair "+id)
}

// rebuilds is what a rebuild touches: the projection of every school.
const rebuilds = "a projection rebuild"

// ---- conversions ----

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func stateOf(s string) fitnessv1.RepairState {
	return fitnessv1.RepairState(fitnessv1.RepairState_value["REPAIR_STATE_"+s])
}

func stateName(s fitnessv1.RepairState) (string, bool) {
	if s == fitnessv1.RepairState_REPAIR_STATE_UNSPECIFIED {
		return "", true
	}
	name, ok := fitnessv1.RepairState_name[int32(s)]
	return strings.TrimPrefix(name, "REPAIR_STATE_"), ok
}

func verificationOf(v string) fitnessv1.VerificationResult {
	return fitnessv1.VerificationResult(fitnessv1.VerificationResult_value["VERIFICATION_RESULT_"+v])
}

func scopeOf(s reconcile.Scope) *fitnessv1.ReconcileScope {
	return &fitnessv1.ReconcileScope{DetectId: s.DetectID, ProjectId: s.ProjectID, SchoolId: s.SchoolID}
}

func repairProto(r repair.Repair, discrepancyIDs []string) *fitnessv1.Repair {
	return &fitnessv1.Repair{
		RepairId: r.ID, RunId: r.RunID, DiscrepancyIds: discrepancyIDs, Action: fitnessv1.RepairAction(r.Action), State: stateOf(r.State),
		Reason: r.Reason, CreatedBy: r.CreatedBy, ApprovedBy: r.ApprovedBy, Message: r.Message, CreateTime: ts(r.Created), EndTime: ts(r.Ended),
		RequestId: r.RequestID, RequiresApproval: r.RequiresApproval, ApproveReason: r.ApproveReason, ItemsTotal: r.ItemsTotal,
		ItemsDone: r.ItemsDone, ItemsFailed: r.ItemsFailed, Verification: verificationOf(r.Verification), UpdateTime: ts(r.Updated),
		ApproveTime: ts(r.Approved), Scope: scopeOf(r.Scope), RebuildId: r.RebuildID, RebuildEpoch: int32(r.RebuildEpoch),
		VerifyDeadline: ts(r.VerifyDeadline),
	}
}

func itemProto(it repair.Item) *fitnessv1.RepairItem {
	p := &fitnessv1.RepairItem{
		RepairId: it.RepairID, Seq: int64(it.Seq), DiscrepancyId: it.DiscrepancyID, DataId: it.DataID, DetectId: it.DetectID, ShardId: it.ShardID,
		Class: fitnessv1.DiscrepancyClass(it.Class), Action: fitnessv1.RepairAction(it.Action), SourceVersion: it.SourceVersion,
		TargetVersion: it.TargetVersion, AppliedVersion: it.AppliedVersion, EventId: it.EventID,
		Outcome:      fitnessv1.RepairItemOutcome(fitnessv1.RepairItemOutcome_value["REPAIR_ITEM_OUTCOME_"+it.Outcome]),
		Verification: verificationOf(it.Verification), Message: it.Message, RowsRemoved: it.RowsRemoved, ApplyTime: ts(it.Applied),
	}
	for _, o := range it.Origins {
		p.Origins = append(p.Origins, &fitnessv1.RecordOrigin{Version: o.Version, Epoch: int32(o.Epoch), EventId: o.EventID, ShardId: o.ShardID,
			IngestTime: ts(time.UnixMilli(o.IngestMs).UTC()), SourceCommitTime: ts(time.UnixMilli(o.SourceCommitMs).UTC()), IsDeleted: o.Deleted,
			SchoolId: o.SchoolID, ProjectId: o.ProjectID, Grade: int32(o.Grade), Result: o.Result, Unit: o.Unit})
	}
	return p
}

func rebuildProto(rb repair.Rebuild) *fitnessv1.Rebuild {
	return &fitnessv1.Rebuild{
		RebuildId: rb.ID, Scope: scopeOf(rb.Scope), Epoch: int32(rb.Epoch), State: stateOf(rb.State), RowsWritten: rb.RowsWritten,
		Message: rb.Message, CreateTime: ts(rb.Created), CreatedBy: rb.CreatedBy, ApprovedBy: rb.ApprovedBy, Reason: rb.Reason,
		RequestId: rb.RequestID, RowsTotal: rb.RowsTotal, Phase: fitnessv1.RebuildPhase(fitnessv1.RebuildPhase_value["REBUILD_PHASE_"+rb.Phase]),
		Verification: verificationOf(rb.Verification), EndTime: ts(rb.Ended), ApproveReason: rb.ApproveReason, ApproveTime: ts(rb.Approved),
		UpdateTime: ts(rb.Updated), RepairId: rb.RepairID,
	}
}

func transitionsProto(tr []repair.Transition) []*fitnessv1.StateTransition {
	out := make([]*fitnessv1.StateTransition, len(tr))
	for i, t := range tr {
		out[i] = &fitnessv1.StateTransition{FromState: stateOf(t.From), ToState: stateOf(t.To), Actor: t.Actor, Note: t.Note, CreateTime: ts(t.Time)}
	}
	return out
}

// withIDs converts a repair with its first discrepancy ids.
func (s *Service) withIDs(ctx context.Context, r repair.Repair) (*fitnessv1.Repair, error) {
	ids, err := s.store.DiscrepancyIDs(ctx, r.ID, maxShownIDs)
	if err != nil {
		return nil, err
	}
	return repairProto(r, ids), nil
}

// ---- page tokens: bound to the query they were issued for ----

func pageToken(query string, pos int64) string { return paging.Encode(query, pos) }

func pagePosition(tok, query string) (int64, error) {
	pos, err := paging.Decode(tok, query)
	if err != nil {
		return 0, errors.New(status.Convert(err).Message())
	}
	return pos, nil
}

// ---- repairs ----

// CreateRepair implements fitness.v1.RepairService.
func (s *Service) CreateRepair(ctx context.Context, req *fitnessv1.CreateRepairRequest) (*fitnessv1.CreateRepairResponse, error) {
	var v violations
	v.RequestID(req.GetRequestId())
	v.id("run_id", req.GetRunId())
	v.reason(req.GetReason(), true)
	v.discrepancyIDs(req.GetDiscrepancyIds())
	v.epoch("rebuild_epoch", req.GetRebuildEpoch(), false)
	if err := v.Err(); err != nil {
		return nil, err
	}
	sel := "all open"
	if n := len(req.GetDiscrepancyIds()); n > 0 {
		sel = strconv.Itoa(n)
	}
	scope := fmt.Sprintf("run=%s discrepancies=%s request=%s rebuild_epoch=%d", req.GetRunId(), sel, req.GetRequestId(), req.GetRebuildEpoch())
	var rs []repair.Repair
	err := s.audited(ctx, "CreateRepair", "repair.create", scope, req.GetReason(), auth.RoleOperator, func(by string) (string, error) {
		if err := s.checkRun(ctx, req.GetRunId()); err != nil {
			return "", err
		}
		var err error
		rs, err = s.mgr.Create(ctx, repair.CreateRequest{Selection: repair.Selection{RunID: req.GetRunId(), DiscrepancyIDs: req.GetDiscrepancyIds(),
			RebuildEpoch: int(req.GetRebuildEpoch())}, RequestID: req.GetRequestId(), Reason: strings.TrimSpace(req.GetReason()), By: by})
		var parts []string
		for _, r := range rs {
			parts = append(parts, fmt.Sprintf("%s %s %s (%d items)", r.ID, r.Action, r.State, r.ItemsTotal))
		}
		return "repairs: " + strings.Join(parts, ", "), err
	})
	if err != nil {
		return nil, err
	}
	resp := &fitnessv1.CreateRepairResponse{}
	for _, r := range rs {
		p, err := s.withIDs(ctx, r)
		if err != nil {
			return nil, apierr.StatusIn(controlDB, err)
		}
		resp.Repairs = append(resp.Repairs, p)
	}
	return resp, nil
}

// PlanRepair implements fitness.v1.RepairService: a dry run that changes
// nothing (and is therefore not audited).
func (s *Service) PlanRepair(ctx context.Context, req *fitnessv1.PlanRepairRequest) (*fitnessv1.PlanRepairResponse, error) {
	var v violations
	v.id("run_id", req.GetRunId())
	v.discrepancyIDs(req.GetDiscrepancyIds())
	v.epoch("rebuild_epoch", req.GetRebuildEpoch(), false)
	if req.GetMaxItems() < 0 {
		v.Add("max_items", "must not be negative")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if _, err := check(ctx, "PlanRepair", auth.RoleOperator); err != nil {
		return nil, apierr.Status(err)
	}
	if err := s.checkRun(ctx, req.GetRunId()); err != nil {
		return nil, apierr.StatusIn(controlDB, err)
	}
	p, err := s.mgr.Plan(ctx, repair.Selection{RunID: req.GetRunId(), DiscrepancyIDs: req.GetDiscrepancyIds(), RebuildEpoch: int(req.GetRebuildEpoch())})
	if err != nil {
		return nil, apierr.StatusIn(controlDB, err)
	}
	limit := int(req.GetMaxItems())
	if limit == 0 {
		limit = defaultPlanItems
	}
	limit = min(limit, maxPlanItems)
	resp := &fitnessv1.PlanRepairResponse{RunId: p.RunID, Scope: scopeOf(p.Scope), ItemsTotal: int64(len(p.Items)),
		ItemsTruncated: p.Truncated || len(p.Items) > limit, EpochFloor: int32(p.EpochFloor), Skipped: int64(p.Skipped)}
	counts := p.Counts()
	for _, a := range repair.Actions {
		if n := counts[a]; n > 0 {
			resp.Actions = append(resp.Actions, &fitnessv1.PlannedAction{Action: fitnessv1.RepairAction(a), Items: n, RequiresApproval: a.NeedsApproval()})
		}
	}
	shards := p.ShardCounts()
	names := make([]string, 0, len(shards))
	for name := range shards {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, a := range repair.Actions {
			if n := shards[name][a]; n > 0 {
				resp.Shards = append(resp.Shards, &fitnessv1.PlannedShardAction{ShardId: name, Action: fitnessv1.RepairAction(a), Items: n})
			}
		}
	}
	for i, it := range p.Items {
		if i == limit {
			break
		}
		it.Seq = i + 1
		resp.Items = append(resp.Items, itemProto(it))
	}
	return resp, nil
}

// ApproveRepair implements fitness.v1.RepairService.
func (s *Service) ApproveRepair(ctx context.Context, req *fitnessv1.ApproveRepairRequest) (*fitnessv1.ApproveRepairResponse, error) {
	var v violations
	v.id("repair_id", req.GetRepairId())
	v.reason(req.GetReason(), true)
	v.OptionalRequestID(req.GetRequestId())
	if err := v.Err(); err != nil {
		return nil, err
	}
	var resp *fitnessv1.ApproveRepairResponse
	err := s.audited(ctx, "ApproveRepair", "repair.approve", "repair="+req.GetRepairId()+requestScope(req), req.GetReason(), auth.RoleAdmin, func(by string) (string, error) {
		if err := s.checkRepair(ctx, req.GetRepairId()); err != nil {
			return "", err
		}
		var err error
		resp, err = idempotency.Do(ctx, s.requests, "ApproveRepair", by, req, func(ctx context.Context, a idempotency.Attempt) (*fitnessv1.ApproveRepairResponse, error) {
			r, err := s.approve(ctx, a, req.GetRepairId(), by, strings.TrimSpace(req.GetReason()))
			if err != nil {
				return nil, err
			}
			p, err := s.withIDs(ctx, r)
			return &fitnessv1.ApproveRepairResponse{Repair: p}, err
		})
		return fmt.Sprintf("approved %s repair; %s", name(resp.GetRepair().GetAction()), name(resp.GetRepair().GetState())), err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// name is an enum value's name without its type's prefix, as the audit
// outcomes name states, actions and phases (REPAIR_STATE_EXECUTING:
// EXECUTING; UNSPECIFIED: "").
func name(e interface{ String() string }) string {
	n := e.String()
	for _, p := range []string{"REPAIR_STATE_", "REPAIR_ACTION_", "REBUILD_PHASE_"} {
		n = strings.TrimPrefix(n, p)
	}
	if n == "UNSPECIFIED" {
		return ""
	}
	return n
}

// requestScope is the audited scope's mention of a request_id.
func requestScope(req interface{ GetRequestId() string }) string {
	if id := req.GetRequestId(); id != "" {
		return " request=" + id
	}
	return ""
}

// approve approves repair id. An attempt that took over a reservation whose
// call failed or crashed (a.Retry) first looks whether that call approved
// it: a repair approved by the same approver is the answer, not a refusal.
func (s *Service) approve(ctx context.Context, a idempotency.Attempt, id, by, reason string) (repair.Repair, error) {
	if a.Retry {
		r, err := s.store.GetRepair(ctx, id)
		if err != nil {
			return repair.Repair{}, err
		}
		if r.State != repair.StateAwaitingApproval && r.ApprovedBy == by {
			return r, nil
		}
	}
	return s.mgr.Approve(ctx, id, by, reason)
}

// GetRepair implements fitness.v1.RepairService.
func (s *Service) GetRepair(ctx context.Context, req *fitnessv1.GetRepairRequest) (*fitnessv1.GetRepairResponse, error) {
	var v violations
	v.id("repair_id", req.GetRepairId())
	if err := v.Err(); err != nil {
		return nil, err
	}
	r, err := s.store.GetRepair(ctx, req.GetRepairId())
	if err != nil {
		return nil, apierr.StatusIn(controlDB, err)
	}
	if err := auth.CheckScope(ctx, r.Scope.SchoolID, "repair "+r.ID); err != nil {
		return nil, err
	}
	p, err := s.withIDs(ctx, r)
	if err != nil {
		return nil, apierr.StatusIn(controlDB, err)
	}
	tr, err := s.store.Transitions(ctx, r.ID)
	if err != nil {
		return nil, apierr.StatusIn(controlDB, err)
	}
	return &fitnessv1.GetRepairResponse{Repair: p, Transitions: transitionsProto(tr)}, nil
}

// ListRepairs implements fitness.v1.RepairService.
func (s *Service) ListRepairs(ctx context.Context, req *fitnessv1.ListRepairsRequest) (*fitnessv1.ListRepairsResponse, error) {
	var v violations
	if len(req.GetRunId()) > maxID {
		v.Add("run_id", fmt.Sprintf("at most %d characters", maxID))
	}
	state, ok := stateName(req.GetState())
	if !ok {
		v.Add("state", "unknown state")
	}
	query := fmt.Sprintf("repairs|%s|%d", req.GetRunId(), req.GetState())
	before, err := pagePosition(req.GetPageToken(), query)
	if err != nil {
		v.Add("page_token", err.Error())
	}
	if req.GetPageSize() < 0 {
		v.Add("page_size", "must not be negative")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	size, _ := paging.Size(req.GetPageSize(), 50, 500)
	rs, pos, err := s.store.ListRepairs(ctx, req.GetRunId(), state, before, size+1)
	if err != nil {
		return nil, apierr.StatusIn(controlDB, err)
	}
	resp := &fitnessv1.ListRepairsResponse{}
	if len(rs) > size {
		rs = rs[:size]
		resp.NextPageToken = pageToken(query, pos[size-1])
	}
	// A caller of some schools sees the repairs of its schools (a page may
	// come out shorter than asked; the token still continues the list).
	for _, r := range rs {
		if auth.CheckScope(ctx, r.Scope.SchoolID, "repair") == nil {
			resp.Repairs = append(resp.Repairs, repairProto(r, nil))
		}
	}
	return resp, nil
}

// ListRepairItems implements fitness.v1.RepairService.
func (s *Service) ListRepairItems(ctx context.Context, req *fitnessv1.ListRepairItemsRequest) (*fitnessv1.ListRepairItemsResponse, error) {
	var v violations
	v.id("repair_id", req.GetRepairId())
	query := "items|" + req.GetRepairId()
	after, err := pagePosition(req.GetPageToken(), query)
	if err != nil {
		v.Add("page_token", err.Error())
	}
	if req.GetPageSize() < 0 {
		v.Add("page_size", "must not be negative")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if err := s.checkRepair(ctx, req.GetRepairId()); err != nil {
		return nil, apierr.StatusIn(controlDB, err)
	}
	size, _ := paging.Size(req.GetPageSize(), 100, 1000)
	its, err := s.store.Items(ctx, req.GetRepairId(), int(after), size+1, "", "")
	if err != nil {
		return nil, apierr.StatusIn(controlDB, err)
	}
	resp := &fitnessv1.ListRepairItemsResponse{}
	if len(its) > size {
		its = its[:size]
		resp.NextPageToken = pageToken(query, int64(its[size-1].Seq))
	}
	for _, it := range its {
		resp.Items = append(resp.Items, itemProto(it))
	}
	return resp, nil
}

// VerifyRepair implements fitness.v1.RepairService.
func (s *Service) VerifyRepair(ctx context.Context, req *fitnessv1.VerifyRepairRequest) (*fitnessv1.VerifyRepairResponse, error) {
	var v violations
	v.id("repair_id", req.GetRepairId())
	v.reason(req.GetReason(), false)
	v.OptionalRequestID(req.GetRequestId())
	if err := v.Err(); err != nil {
		return nil, err
	}
	reason := req.GetReason()
	if strings.TrimSpace(reason) == "" {
		reason = "verification requested"
	}
	var resp *fitnessv1.VerifyRepairResponse
	err := s.audited(ctx, "VerifyRepair", "repair.verify", "repair="+req.GetRepairId()+requestScope(req), reason, auth.RoleOperator, func(by string) (string, error) {
		if err := s.checkRepair(ctx, req.GetRepairId()); err != nil {
			return "", err
		}
		var err error
		resp, err = idempotency.Do(ctx, s.requests, "VerifyRepair", by, req, func(ctx context.Context, a idempotency.Attempt) (*fitnessv1.VerifyRepairResponse, error) {
			r, res, err := s.verify(ctx, a, req.GetRepairId(), by)
			if err != nil {
				return nil, err
			}
			p, err := s.withIDs(ctx, r)
			return &fitnessv1.VerifyRepairResponse{Repair: p, ItemsPassed: res.Passed, ItemsMismatched: res.Mismatched}, err
		})
		return fmt.Sprintf("%d keys clean, %d differ; repair %s", resp.GetItemsPassed(), resp.GetItemsMismatched(), name(resp.GetRepair().GetState())), err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// verify verifies repair id. An attempt that took over a reservation whose
// call failed or crashed (a.Retry) answers a repair that call left VERIFIED
// as verified (every item's key clean) instead of refusing it.
func (s *Service) verify(ctx context.Context, a idempotency.Attempt, id, by string) (repair.Repair, repair.VerifyResult, error) {
	if a.Retry {
		r, err := s.store.GetRepair(ctx, id)
		if err != nil {
			return repair.Repair{}, repair.VerifyResult{}, err
		}
		if r.State == repair.StateVerified {
			return r, repair.VerifyResult{Passed: r.ItemsTotal}, nil
		}
	}
	return s.mgr.Verify(ctx, id, by)
}

// WatchRepair implements fitness.v1.RepairService: it sends the repair
// whenever it changes and returns after a terminal state was sent. A stream
// lasts at most the watch's maximum duration (--watch-max-duration): then
// it ends with UNAVAILABLE, and the client resumes by calling WatchRepair
// again, which sends the current state first (see watch).
func (s *Service) WatchRepair(req *fitnessv1.WatchRepairRequest, stream fitnessv1.RepairService_WatchRepairServer) error {
	var v violations
	v.id("repair_id", req.GetRepairId())
	if err := v.Err(); err != nil {
		return err
	}
	return watch(stream.Context(), s.watch, s.store.Changes(), repair.RepairKey(req.GetRepairId()), "WatchRepair",
		func(ctx context.Context) (*fitnessv1.Repair, bool, error) {
			r, err := s.store.GetRepair(ctx, req.GetRepairId())
			if err != nil {
				return nil, false, err
			}
			if err := auth.CheckScope(ctx, r.Scope.SchoolID, "repair "+r.ID); err != nil {
				return nil, false, err
			}
			return repairProto(r, nil), r.Terminal(), nil
		},
		func(last, p *fitnessv1.Repair) bool {
			return last.GetState() != p.GetState() || last.GetItemsDone() != p.GetItemsDone() || last.GetItemsFailed() != p.GetItemsFailed() ||
				last.GetVerification() != p.GetVerification() || last.GetMessage() != p.GetMessage() || last.GetApprovedBy() != p.GetApprovedBy()
		},
		func(p *fitnessv1.Repair) error { return stream.Send(&fitnessv1.WatchRepairResponse{Repair: p}) })
}

// watch sends a resource at once and then whenever changed says it moved,
// until it is terminal or ctx ends. It reads the resource again when this
// process changes it (the store's Changes, key), at most every
// o.MinInterval, and every o.Poll without a notification (a change made by
// another replica). After o.MaxDuration the stream ends with UNAVAILABLE,
// a status a client retries: watching again resumes, with the current
// state sent first.
func watch[P any](ctx context.Context, o changefeed.WatchOptions, feed *changefeed.Feed, key, rpc string, fetch func(context.Context) (P, bool, error),
	changed func(last, cur P) bool, send func(P) error) error {
	var last P
	first := true
	err := changefeed.Watch(ctx, feed, key, o, func(ctx context.Context) (bool, error) {
		p, terminal, err := fetch(ctx)
		if err != nil {
			return false, apierr.StatusIn(controlDB, err)
		}
		if first || changed(last, p) {
			if err := send(p); err != nil {
				return false, err
			}
			last, first = p, false
		}
		return terminal, nil
	})
	switch {
	case errors.Is(err, changefeed.ErrMaxDuration):
		return status.Errorf(codes.Unavailable, "%s stream ended after its maximum duration of %s (--watch-max-duration); call %s again to resume: it sends the current state first",
			rpc, o.MaxDuration, rpc)
	case err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return status.FromContextError(ctx.Err()).Err()
	}
	return err
}

// CancelRepair implements fitness.v1.RepairService.
func (s *Service) CancelRepair(ctx context.Context, req *fitnessv1.CancelRepairRequest) (*fitnessv1.CancelRepairResponse, error) {
	var v violations
	v.id("repair_id", req.GetRepairId())
	v.reason(req.GetReason(), true)
	v.OptionalRequestID(req.GetRequestId())
	if err := v.Err(); err != nil {
		return nil, err
	}
	var resp *fitnessv1.CancelRepairResponse
	err := s.audited(ctx, "CancelRepair", "repair.cancel", "repair="+req.GetRepairId()+requestScope(req), req.GetReason(), auth.RoleOperator, func(by string) (string, error) {
		if err := s.checkRepair(ctx, req.GetRepairId()); err != nil {
			return "", err
		}
		var err error
		resp, err = idempotency.Do(ctx, s.requests, "CancelRepair", by, req, func(ctx context.Context, a idempotency.Attempt) (*fitnessv1.CancelRepairResponse, error) {
			if a.Retry {
				// The call whose reservation this took over may have cancelled it.
				if r, err := s.store.GetRepair(ctx, req.GetRepairId()); err == nil && r.State == repair.StateCancelled {
					p, err := s.withIDs(ctx, r)
					return &fitnessv1.CancelRepairResponse{Repair: p}, err
				}
			}
			r, err := s.mgr.Cancel(ctx, req.GetRepairId(), by, strings.TrimSpace(req.GetReason()))
			if err != nil {
				return nil, err
			}
			p, err := s.withIDs(ctx, r)
			return &fitnessv1.CancelRepairResponse{Repair: p}, err
		})
		return fmt.Sprintf("cancelled after %d of %d items", resp.GetRepair().GetItemsDone(), resp.GetRepair().GetItemsTotal()), err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// ---- rebuilds ----

// StartRebuild implements fitness.v1.RepairService.
func (s *Service) StartRebuild(ctx context.Context, req *fitnessv1.StartRebuildRequest) (*fitnessv1.StartRebuildResponse, error) {
	var v violations
	v.RequestID(req.GetRequestId())
	sc := req.GetScope()
	v.Scope(sc.GetDetectId(), sc.GetProjectId(), sc.GetSchoolId())
	v.epoch("epoch", req.GetEpoch(), true)
	v.reason(req.GetReason(), true)
	if err := v.Err(); err != nil {
		return nil, err
	}
	scope := reconcile.Scope{DetectID: sc.GetDetectId(), ProjectID: sc.GetProjectId(), SchoolID: sc.GetSchoolId()}
	var rb repair.Rebuild
	err := s.audited(ctx, "StartRebuild", "rebuild.start", fmt.Sprintf("campaign=%d project=%d school=%d epoch=%d request=%s",
		scope.DetectID, scope.ProjectID, scope.SchoolID, req.GetEpoch(), req.GetRequestId()), req.GetReason(), auth.RoleAdmin, func(by string) (string, error) {
		if err := auth.CheckPlatform(ctx, rebuilds); err != nil {
			return "", err
		}
		var err error
		rb, err = s.mgr.StartRebuild(ctx, repair.RebuildRequest{RequestID: req.GetRequestId(), Scope: scope, Epoch: int(req.GetEpoch()),
			Reason: strings.TrimSpace(req.GetReason()), By: by})
		return fmt.Sprintf("rebuild %s %s", rb.ID, rb.State), err
	})
	if err != nil {
		return nil, err
	}
	return &fitnessv1.StartRebuildResponse{Rebuild: rebuildProto(rb)}, nil
}

// ApproveRebuild implements fitness.v1.RepairService.
func (s *Service) ApproveRebuild(ctx context.Context, req *fitnessv1.ApproveRebuildRequest) (*fitnessv1.ApproveRebuildResponse, error) {
	var v violations
	v.id("rebuild_id", req.GetRebuildId())
	v.reason(req.GetReason(), true)
	v.OptionalRequestID(req.GetRequestId())
	if err := v.Err(); err != nil {
		return nil, err
	}
	var resp *fitnessv1.ApproveRebuildResponse
	err := s.audited(ctx, "ApproveRebuild", "rebuild.approve", "rebuild="+req.GetRebuildId()+requestScope(req), req.GetReason(), auth.RoleAdmin, func(by string) (string, error) {
		if err := auth.CheckPlatform(ctx, rebuilds); err != nil {
			return "", err
		}
		var err error
		resp, err = idempotency.Do(ctx, s.requests, "ApproveRebuild", by, req, func(ctx context.Context, a idempotency.Attempt) (*fitnessv1.ApproveRebuildResponse, error) {
			if a.Retry {
				// The call whose reservation this took over may have approved it.
				if rb, err := s.store.GetRebuild(ctx, req.GetRebuildId()); err == nil && rb.State != repair.StateAwaitingApproval && rb.ApprovedBy == by {
					return &fitnessv1.ApproveRebuildResponse{Rebuild: rebuildProto(rb)}, nil
				}
			}
			rb, err := s.mgr.ApproveRebuild(ctx, req.GetRebuildId(), by, strings.TrimSpace(req.GetReason()))
			if err != nil {
				return nil, err
			}
			return &fitnessv1.ApproveRebuildResponse{Rebuild: rebuildProto(rb)}, nil
		})
		return fmt.Sprintf("approved; %s", name(resp.GetRebuild().GetState())), err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// GetRebuild implements fitness.v1.RepairService.
func (s *Service) GetRebuild(ctx context.Context, req *fitnessv1.GetRebuildRequest) (*fitnessv1.GetRebuildResponse, error) {
	var v violations
	v.id("rebuild_id", req.GetRebuildId())
	if err := v.Err(); err != nil {
		return nil, err
	}
	if err := auth.CheckPlatform(ctx, rebuilds); err != nil {
		return nil, err
	}
	rb, err := s.store.GetRebuild(ctx, req.GetRebuildId())
	if err != nil {
		return nil, apierr.StatusIn(controlDB, err)
	}
	tr, err := s.store.Transitions(ctx, rb.ID)
	if err != nil {
		return nil, apierr.StatusIn(controlDB, err)
	}
	return &fitnessv1.GetRebuildResponse{Rebuild: rebuildProto(rb), Transitions: transitionsProto(tr)}, nil
}

// ListRebuilds implements fitness.v1.RepairService.
func (s *Service) ListRebuilds(ctx context.Context, req *fitnessv1.ListRebuildsRequest) (*fitnessv1.ListRebuildsResponse, error) {
	var v violations
	if req.GetDetectId() < 0 {
		v.Add("detect_id", "must be positive, or 0 for every campaign")
	}
	state, ok := stateName(req.GetState())
	if !ok {
		v.Add("state", "unknown state")
	}
	query := fmt.Sprintf("rebuilds|%d|%d", req.GetDetectId(), req.GetState())
	before, err := pagePosition(req.GetPageToken(), query)
	if err != nil {
		v.Add("page_token", err.Error())
	}
	if req.GetPageSize() < 0 {
		v.Add("page_size", "must not be negative")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if err := auth.CheckPlatform(ctx, rebuilds); err != nil {
		return nil, err
	}
	size, _ := paging.Size(req.GetPageSize(), 50, 500)
	rbs, pos, err := s.store.ListRebuilds(ctx, req.GetDetectId(), state, before, size+1)
	if err != nil {
		return nil, apierr.StatusIn(controlDB, err)
	}
	resp := &fitnessv1.ListRebuildsResponse{}
	if len(rbs) > size {
		rbs = rbs[:size]
		resp.NextPageToken = pageToken(query, pos[size-1])
	}
	for _, rb := range rbs {
		resp.Rebuilds = append(resp.Rebuilds, rebuildProto(rb))
	}
	return resp, nil
}

// WatchRebuild implements fitness.v1.RepairService: it sends the rebuild
// whenever it changes and returns after a terminal state was sent, or ends
// with UNAVAILABLE at the watch's maximum duration (as WatchRepair).
func (s *Service) WatchRebuild(req *fitnessv1.WatchRebuildRequest, stream fitnessv1.RepairService_WatchRebuildServer) error {
	var v violations
	v.id("rebuild_id", req.GetRebuildId())
	if err := v.Err(); err != nil {
		return err
	}
	if err := auth.CheckPlatform(stream.Context(), rebuilds); err != nil {
		return err
	}
	return watch(stream.Context(), s.watch, s.store.Changes(), repair.RebuildKey(req.GetRebuildId()), "WatchRebuild",
		func(ctx context.Context) (*fitnessv1.Rebuild, bool, error) {
			rb, err := s.store.GetRebuild(ctx, req.GetRebuildId())
			if err != nil {
				return nil, false, err
			}
			return rebuildProto(rb), rb.Terminal(), nil
		},
		func(last, p *fitnessv1.Rebuild) bool {
			return last.GetState() != p.GetState() || last.GetPhase() != p.GetPhase() || last.GetRowsWritten() != p.GetRowsWritten() ||
				last.GetRowsTotal() != p.GetRowsTotal() || last.GetMessage() != p.GetMessage()
		},
		func(p *fitnessv1.Rebuild) error { return stream.Send(&fitnessv1.WatchRebuildResponse{Rebuild: p}) })
}

// CancelRebuild implements fitness.v1.RepairService.
func (s *Service) CancelRebuild(ctx context.Context, req *fitnessv1.CancelRebuildRequest) (*fitnessv1.CancelRebuildResponse, error) {
	var v violations
	v.id("rebuild_id", req.GetRebuildId())
	v.reason(req.GetReason(), true)
	v.OptionalRequestID(req.GetRequestId())
	if err := v.Err(); err != nil {
		return nil, err
	}
	var resp *fitnessv1.CancelRebuildResponse
	err := s.audited(ctx, "CancelRebuild", "rebuild.cancel", "rebuild="+req.GetRebuildId()+requestScope(req), req.GetReason(), auth.RoleAdmin, func(by string) (string, error) {
		if err := auth.CheckPlatform(ctx, rebuilds); err != nil {
			return "", err
		}
		var err error
		resp, err = idempotency.Do(ctx, s.requests, "CancelRebuild", by, req, func(ctx context.Context, a idempotency.Attempt) (*fitnessv1.CancelRebuildResponse, error) {
			if a.Retry {
				// The call whose reservation this took over may have cancelled it.
				if rb, err := s.store.GetRebuild(ctx, req.GetRebuildId()); err == nil && rb.State == repair.StateCancelled {
					return &fitnessv1.CancelRebuildResponse{Rebuild: rebuildProto(rb)}, nil
				}
			}
			rb, err := s.mgr.CancelRebuild(ctx, req.GetRebuildId(), by, strings.TrimSpace(req.GetReason()))
			if err != nil {
				return nil, err
			}
			return &fitnessv1.CancelRebuildResponse{Rebuild: rebuildProto(rb)}, nil
		})
		return fmt.Sprintf("cancelled in phase %q", name(resp.GetRebuild().GetPhase())), err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}
