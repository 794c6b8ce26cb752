package repair

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
)

// ManagerConfig holds the rules the Manager applies.
type ManagerConfig struct {
	// AllowSelfApproval lets the requester of a repair or rebuild approve it
	// (a documented single-operator setting, --allow-self-approval); off,
	// the approver must be another admin.
	AllowSelfApproval bool
	// EpochFloor is the transformation epoch of the live consumer path: a
	// rebuild epoch must exceed it, the highest epoch stored in the scope or
	// retired, and that of every rebuild of the campaign that wrote rows
	// (see Manager.EpochFloor for when each applies).
	EpochFloor uint16
	// CreateBatch is the items Create commits per transaction (default
	// DefaultCreateBatch); CreateLease how long a Create may go without
	// committing before another call takes its request over (default
	// DefaultCreateLease).
	CreateBatch int
	CreateLease time.Duration
	// MaxItems caps the discrepancies of one request (default 100000): a run
	// with more is repaired in several requests (each takes the next
	// uncovered ones, by data_id).
	MaxItems int
}

// Manager applies the rules of planning, creating, approving, cancelling
// and verifying repairs and rebuilds; the Executor runs them.
type Manager struct {
	cfg      ManagerConfig
	store    *Store
	runs     *reconcile.RunStore
	editor   TargetEditor
	shardOf  func(int64) string
	epochs   EpochSource
	verifier *Verifier
	wake     func()
}

// Deps are the dependencies of the Manager and the Executor.
type Deps struct {
	Store     *Store
	Runs      *reconcile.RunStore
	Replayer  Replayer
	Editor    TargetEditor
	Rebuilder Rebuilder
	// Source and Target are the two sides of the verification comparison
	// (reconcile.MySQLSource over every shard, reconcile.ClickHouseTarget).
	Source, Target reconcile.Side
	// ShardOf names the shard owning a data_id (the shard map's Owner).
	ShardOf func(dataID int64) string
	// Epochs reads the highest epoch stored in the projection (optional).
	Epochs EpochSource
	// Wake, when set, is called after a repair or rebuild became runnable
	// (the Executor's Wake), so it starts without waiting for its next poll.
	Wake func()
}

func (d Deps) check(needRunner bool) error {
	var missing []string
	for name, ok := range map[string]bool{"Store": d.Store != nil, "Runs": d.Runs != nil, "Editor": d.Editor != nil,
		"Source": d.Source != nil, "Target": d.Target != nil, "ShardOf": d.ShardOf != nil} {
		if !ok {
			missing = append(missing, name)
		}
	}
	if needRunner && (d.Replayer == nil || d.Rebuilder == nil) {
		missing = append(missing, "Replayer and Rebuilder")
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("repair: missing dependencies %s", strings.Join(missing, ", "))
	}
	return nil
}

// NewManager returns a Manager.
func NewManager(cfg ManagerConfig, d Deps) (*Manager, error) {
	if err := d.check(false); err != nil {
		return nil, err
	}
	if cfg.MaxItems <= 0 {
		cfg.MaxItems = 100000
	}
	wake := d.Wake
	if wake == nil {
		wake = func() {}
	}
	return &Manager{cfg: cfg, store: d.Store, runs: d.Runs, editor: d.Editor, shardOf: d.ShardOf, epochs: d.Epochs,
		verifier: newVerifier(d), wake: wake}, nil
}

// Selection names the discrepancies of a run to repair.
type Selection struct {
	RunID          string
	DiscrepancyIDs []string // empty: every one of the run no repair resolved or covers
	RebuildEpoch   int      // the rebuild epoch for CONTENT_MISMATCH discrepancies (0: none given)
}

// Plan is what a repair of a selection would do.
type Plan struct {
	RunID      string
	Scope      reconcile.Scope
	Items      []Item // in data_id order, Seq unassigned
	Skipped    int    // discrepancies left out: resolved, or covered by an active repair
	EpochFloor uint16 // a rebuild epoch must exceed it (computed when the plan rebuilds)
	Truncated  bool   // more uncovered discrepancies than MaxItems: only the first are planned
}

// Counts returns the items per action.
func (p Plan) Counts() map[Action]int64 {
	out := map[Action]int64{}
	for _, it := range p.Items {
		out[it.Action]++
	}
	return out
}

// ShardCounts returns the items per shard and action.
func (p Plan) ShardCounts() map[string]map[Action]int64 {
	out := map[string]map[Action]int64{}
	for _, it := range p.Items {
		if out[it.ShardID] == nil {
			out[it.ShardID] = map[Action]int64{}
		}
		out[it.ShardID][it.Action]++
	}
	return out
}

// Plan computes what repairing sel would do, changing nothing: the action
// of every discrepancy, its owning shard, and for removals the projection
// rows it would delete (their origins).
//
// An unknown run or repair is not found; a discrepancy not of the run is an
// apierr.FieldError; one already resolved or in an active repair, a run not
// finished, or nothing left to repair is apierr.FailedPrecondition. A rebuild
// epoch given and not above the floor is an apierr.FieldError.
func (m *Manager) Plan(ctx context.Context, sel Selection) (Plan, error) {
	run, err := m.runs.Get(ctx, sel.RunID)
	if err != nil {
		return Plan{}, err
	}
	if run.State != reconcile.StateSucceeded {
		return Plan{}, apierr.WithReason(apierr.FailedPrecondition.Errorf("run %s is %s; only a SUCCEEDED run's discrepancies can be repaired", run.ID, run.State),
			apierr.InvalidState, "state", string(run.State))
	}
	covered, err := m.store.Covered(ctx, run.ID)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{RunID: run.ID, Scope: run.Scope}
	want := map[string]int{}
	for i, id := range sel.DiscrepancyIDs {
		want[id] = i
	}
	var cands []reconcile.StoredDiscrepancy
	var after int64
	for {
		page, err := m.runs.Discrepancies(ctx, run.ID, 0, after, 1000)
		if err != nil {
			return Plan{}, err
		}
		for _, d := range page {
			if _, named := want[d.ID]; len(want) > 0 && !named {
				continue
			}
			if c, ok := covered[d.ID]; ok {
				if len(want) > 0 {
					if c.Resolved {
						return Plan{}, apierr.FailedPrecondition.Errorf("discrepancy %s was resolved by repair %s", d.ID, c.RepairID)
					}
					return Plan{}, apierr.FailedPrecondition.Errorf("discrepancy %s is already in active repair %s", d.ID, c.RepairID)
				}
				p.Skipped++
				continue
			}
			cands = append(cands, d)
		}
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].DataID
	}
	found := map[string]bool{}
	dataIDs := make([]int64, len(cands))
	for i, d := range cands {
		found[d.ID], dataIDs[i] = true, d.DataID
	}
	for id, i := range want {
		if !found[id] {
			return Plan{}, &apierr.FieldError{Field: fmt.Sprintf("discrepancy_ids[%d]", i), Description: fmt.Sprintf("%q is not a discrepancy of run %s", id, run.ID)}
		}
	}
	active, err := m.store.ActiveRecords(ctx, dataIDs)
	if err != nil {
		return Plan{}, err
	}
	for _, d := range cands {
		if r, busy := active[d.DataID]; busy {
			if len(want) > 0 {
				return Plan{}, apierr.FailedPrecondition.Errorf("record %d of discrepancy %s is already in active repair %s", d.DataID, d.ID, r)
			}
			p.Skipped++
			continue
		}
		if len(p.Items) >= m.cfg.MaxItems {
			p.Truncated = true
			break
		}
		it, err := m.item(ctx, run.Scope.DetectID, d)
		if err != nil {
			return Plan{}, err
		}
		p.Items = append(p.Items, it)
	}
	if len(p.Items) == 0 {
		return Plan{}, apierr.FailedPrecondition.Errorf("nothing to repair in run %s: every discrepancy is resolved or in an active repair (%d)", run.ID, p.Skipped)
	}
	if err := m.checkIdentity(ctx, run.Scope, p.Items); err != nil {
		return Plan{}, err
	}
	// Always, so a plan says which epoch a rebuild would need whatever it
	// holds (a caller passes rebuild_epoch = epoch_floor + 1); over the
	// whole campaign, as the rebuild does (see CreateRepairs).
	if p.EpochFloor, err = m.EpochFloor(ctx, run.Scope.Campaign()); err != nil {
		return Plan{}, err
	}
	if sel.RebuildEpoch != 0 && sel.RebuildEpoch <= int(p.EpochFloor) {
		return Plan{}, &apierr.FieldError{Field: "rebuild_epoch", Description: fmt.Sprintf("must be greater than the current epoch floor %d", p.EpochFloor)}
	}
	return p, nil
}

// checkIdentity refuses (apierr.FailedPrecondition) a plan that would remove a
// record the source holds, read by data_id without any scope, or replay a
// record that a run scoped to a project or school saw missing while the
// projection holds it in the campaign (under another project or school: at
// an equal version that is wrong content, which a rebuild repairs; a replay
// of the same version would not). Reconciliation itself no longer reports
// either (reconcile.settleIdentity); this guards discrepancies stored by
// older runs or records that appeared since.
func (m *Manager) checkIdentity(ctx context.Context, scope reconcile.Scope, items []Item) error {
	var removals, missing []int64
	for _, it := range items {
		switch {
		case it.Action == ActionRemove && it.Class != reconcile.TargetAheadOfSource:
			removals = append(removals, it.DataID)
		case scope.Narrows() && it.Class == reconcile.MissingInTarget:
			missing = append(missing, it.DataID)
		}
	}
	if err := m.checkRemovals(ctx, removals); err != nil {
		return err
	}
	if len(missing) == 0 {
		return nil
	}
	held, err := m.verifier.dst.Records(ctx, scope.Campaign(), 0, nil, missing)
	if err != nil {
		return fmt.Errorf("%w: reading the projection outside the run's scope: %w", ErrUnavailable, err)
	}
	for _, id := range missing {
		if rec, ok := held[id]; ok {
			return apierr.FailedPrecondition.Errorf("record %d, MISSING_IN_TARGET in the run's scope (project %d, school %d), is in the projection at version %d under school %d: "+
				"a record on both sides is not replayed; reconcile again (the comparison looks it up outside the scope)",
				id, scope.ProjectID, scope.SchoolID, rec.Version, rec.SchoolID)
		}
	}
	return nil
}

// checkRemovals refuses to remove the projection rows of any of ids (records
// reported UNEXPECTED_TARGET_RECORD) when the source holds the record in any
// campaign, on any shard.
func (m *Manager) checkRemovals(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	held, err := m.verifier.src.Records(ctx, reconcile.Scope{}, 0, nil, ids)
	if err != nil {
		return fmt.Errorf("%w: reading the source of the records to remove: %w", ErrUnavailable, err)
	}
	for _, id := range ids {
		if rec, ok := held[id]; ok {
			return refuseRemoval(id, m.shardOf(id), rec)
		}
	}
	return nil
}

// item plans one discrepancy.
func (m *Manager) item(ctx context.Context, detectID int64, d reconcile.StoredDiscrepancy) (Item, error) {
	a, ok := ActionFor(d.Class)
	if !ok {
		return Item{}, fmt.Errorf("discrepancy %s has unknown class %d", d.ID, d.Class)
	}
	it := Item{DiscrepancyID: d.ID, DataID: d.DataID, DetectID: detectID, ShardID: m.shardOf(d.DataID), Class: d.Class, Action: a,
		Outcome: OutcomePending, Verification: VerifyPending}
	if d.Source != nil {
		it.SourceVersion = d.Source.Version
	}
	if d.Target != nil {
		it.TargetVersion = d.Target.Version
	}
	if a == ActionRemove {
		rows, err := m.editor.Origins(ctx, detectID, d.DataID)
		if err != nil {
			return Item{}, fmt.Errorf("%w: reading the origins of record %d in the projection: %w", ErrUnavailable, d.DataID, err)
		}
		for _, r := range rows {
			if r.Version > it.SourceVersion {
				it.Origins = append(it.Origins, OriginOf(r))
			}
		}
		sort.Slice(it.Origins, func(i, j int) bool { return it.Origins[i].Version < it.Origins[j].Version })
	}
	return it, nil
}

// EpochFloor returns the epoch a new rebuild of scope must exceed when it
// is planned (Plan, Create, StartRebuild): the configured floor, the highest
// epoch stored in the projection for the scope or retired there
// (projection_epoch_floor), and the highest epoch of the campaign's
// rebuilds that wrote rows. The epoch chosen above it is the fixed
// transformation's and is stored with the rebuild; approval applies a
// different rule (checkEpoch), because the flow deploys the live consumer
// at that epoch in between.
func (m *Manager) EpochFloor(ctx context.Context, scope reconcile.Scope) (uint16, error) {
	stored, err := m.storedEpoch(ctx, scope)
	if err != nil {
		return 0, err
	}
	e, err := m.store.MaxRebuildEpoch(ctx, scope.DetectID)
	if err != nil {
		return 0, err
	}
	return max(m.cfg.EpochFloor, stored, uint16(min(e, 65535))), nil
}

// storedEpoch is the highest epoch stored in the projection for scope or
// retired (0 without an EpochSource).
func (m *Manager) storedEpoch(ctx context.Context, scope reconcile.Scope) (uint16, error) {
	if m.epochs == nil {
		return 0, nil
	}
	e, err := m.epochs.MaxEpoch(ctx, scope)
	if err != nil {
		return 0, fmt.Errorf("%w: reading the projection's epochs: %w", ErrUnavailable, err)
	}
	return e, nil
}

// CreateRequest is a CreateRepair call.
type CreateRequest struct {
	Selection
	RequestID, Reason, By string
}

func (r CreateRequest) hash() string {
	ids := append([]string(nil), r.DiscrepancyIDs...)
	sort.Strings(ids)
	sum := sha256.Sum256([]byte(fmt.Sprintf("v1\x00%s\x00%s\x00%s\x00%d", r.RunID, strings.Join(ids, ","), r.Reason, r.RebuildEpoch)))
	return hex.EncodeToString(sum[:])
}

// Create plans the selection and stores one repair per action. Replays and
// tombstones start executing at once; rebuilds and removals wait for
// approval. A REBUILD needs sel.RebuildEpoch above the floor.
//
// The items are committed in batches of CreateBatch (Store.CreateRepairs):
// until the last one the repairs are PLANNING, never run. It is idempotent
// by RequestID: the same request returns the repairs it created (in their
// current state), after waiting for a concurrent call still storing them;
// the id reused for a different request is apierr.ErrRequestReused and changes
// nothing. A request a crashed call left PLANNING (its lease expired) is
// removed and planned again; Create also removes such requests of other ids.
func (m *Manager) Create(ctx context.Context, req CreateRequest) ([]Repair, error) {
	h := req.hash()
	if rs, done, err := m.byRequest(ctx, req.RequestID, h); done || err != nil {
		return rs, err
	}
	if err := m.dropAbandoned(ctx); err != nil {
		return nil, err
	}
	p, err := m.Plan(ctx, req.Selection)
	if err != nil {
		// A concurrent retry of this very request may have stored its
		// repairs between the check above and the plan (which then finds
		// every discrepancy in an active repair): answer with those.
		if rs, done, berr := m.byRequest(ctx, req.RequestID, h); done || berr != nil {
			return rs, berr
		}
		return nil, err
	}
	byAction := map[Action][]Item{}
	for _, it := range p.Items {
		byAction[it.Action] = append(byAction[it.Action], it)
	}
	if len(byAction[ActionRebuild]) > 0 && req.RebuildEpoch == 0 {
		return nil, &apierr.FieldError{Field: "rebuild_epoch", Description: fmt.Sprintf(
			"required: the selection has %d CONTENT_MISMATCH discrepancies, repaired by a rebuild at the fixed transformation's epoch (> %d)",
			len(byAction[ActionRebuild]), p.EpochFloor)}
	}
	spec := CreateSpec{RequestID: req.RequestID, RequestHash: h, RunID: p.RunID, Scope: p.Scope, Reason: req.Reason, CreatedBy: req.By,
		Batch: m.cfg.CreateBatch, Lease: m.cfg.CreateLease}
	for _, a := range Actions {
		if items := byAction[a]; len(items) > 0 {
			nr := NewRepair{Action: a, Items: items}
			if a == ActionRebuild {
				nr.RebuildEpoch = req.RebuildEpoch
			}
			spec.Repairs = append(spec.Repairs, nr)
		}
	}
	rs, err := m.store.CreateRepairs(ctx, spec)
	if errors.Is(err, errDuplicateRequest) || errors.Is(err, errPlanningLost) {
		// Another call stored this request id first, or took over ours: its
		// outcome, or (when it was removed as incomplete) a new attempt.
		if rs, done, err := m.byRequest(ctx, req.RequestID, h); done || err != nil {
			return rs, err
		}
		return m.Create(ctx, req)
	}
	if err != nil {
		return nil, err
	}
	m.wake()
	return rs, nil
}

// planningPoll is how often a Create waits for another call still storing
// the same request.
const planningPoll = 100 * time.Millisecond

// maxEmptyLooks bounds how often byRequest looks again at a stored request
// without repairs (50 x planningPoll: 5 s).
const maxEmptyLooks = 50

// byRequest returns the repairs of a stored request with hash h (done), an
// apierr.ErrRequestReused for a different hash, or nothing for a new request id.
// While another call is storing the request's items (PLANNING under a live
// lease) it waits for that call; a request whose lease expired (a crashed
// call) is removed and then reported as new.
func (m *Manager) byRequest(ctx context.Context, requestID, h string) ([]Repair, bool, error) {
	// A stored request holds at least one repair. Seen without any, it is
	// between states (another call inserting its first repair, or removing
	// an incomplete one): look again, a bounded number of times.
	empty := 0
	for {
		stored, ok, err := m.store.RequestHash(ctx, requestID)
		if err != nil || !ok {
			return nil, false, err
		}
		if stored != h {
			return nil, true, fmt.Errorf("%w: request_id %q", apierr.ErrRequestReused, requestID)
		}
		planning, expired, err := m.store.Planning(ctx, requestID)
		if err != nil {
			return nil, true, err
		}
		if !planning {
			rs, err := m.store.RepairsByRequest(ctx, requestID)
			if err == nil && len(rs) == 0 && empty < maxEmptyLooks {
				empty++
				select {
				case <-ctx.Done():
					return nil, true, fmt.Errorf("waiting for request %s, between states: %w", requestID, ctx.Err())
				case <-time.After(planningPoll):
				}
				continue
			}
			return rs, true, err
		}
		if expired {
			if err := m.dropPlanning(ctx, requestID); err != nil {
				return nil, true, err
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil, true, fmt.Errorf("waiting for request %s, still being stored by another call: %w", requestID, ctx.Err())
		case <-time.After(planningPoll):
		}
	}
}

// dropPlanning removes an incomplete request whose lease expired, unless
// another call took it over first.
func (m *Manager) dropPlanning(ctx context.Context, requestID string) error {
	owner := "drop-" + newID()[:24]
	lease := m.cfg.CreateLease
	if lease <= 0 {
		lease = DefaultCreateLease
	}
	ok, err := m.store.TakeOverPlanning(ctx, requestID, owner, lease)
	if err != nil || !ok {
		return err
	}
	if err := m.store.DropPlanning(ctx, requestID, owner); err != nil && !errors.Is(err, errPlanningLost) {
		return fmt.Errorf("removing incomplete repair request %s: %w", requestID, err)
	}
	return nil
}

// dropAbandoned removes the requests crashed calls left PLANNING, so that
// their items no longer reserve records.
func (m *Manager) dropAbandoned(ctx context.Context) error {
	ids, err := m.store.AbandonedPlanning(ctx, 10)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := m.dropPlanning(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// checkApprover applies the approval rules shared by repairs and rebuilds.
func (m *Manager) checkApprover(kind, id, state, requester, approver string) error {
	if state != StateAwaitingApproval {
		return apierr.WithReason(apierr.FailedPrecondition.Errorf("%s %s is %s, not awaiting approval", kind, id, state), apierr.InvalidState, "state", state)
	}
	if approver == requester && !m.cfg.AllowSelfApproval {
		return apierr.WithReason(apierr.FailedPrecondition.Errorf("%s %s was requested by %s, who cannot approve it: another admin must (or run the server with --allow-self-approval)", kind, id, requester),
			apierr.NeedsSecondApprover)
	}
	return nil
}

// Approve approves a repair AWAITING_APPROVAL by approver (an admin: the
// caller checks the role). A repair needing no approval, not awaiting it,
// or approved by its requester (unless AllowSelfApproval) is
// apierr.FailedPrecondition; so is a REBUILD whose epoch no longer exceeds the
// floor.
func (m *Manager) Approve(ctx context.Context, id, approver, reason string) (Repair, error) {
	r, err := m.store.GetRepair(ctx, id)
	if err != nil {
		return Repair{}, err
	}
	if !r.RequiresApproval {
		return Repair{}, apierr.FailedPrecondition.Errorf("repair %s (%s) needs no approval", id, r.Action)
	}
	if err := m.checkApprover("repair", id, r.State, r.CreatedBy, approver); err != nil {
		return Repair{}, err
	}
	if r.Action == ActionRebuild {
		if err := m.checkEpoch(ctx, r.Scope, r.RebuildEpoch); err != nil {
			return Repair{}, err
		}
	}
	if r.Action == ActionRemove {
		// The source may hold a record since the plan: checked again (and
		// once more by the executor before each removal).
		items, err := m.store.allItems(ctx, id, "", "")
		if err != nil {
			return Repair{}, err
		}
		var ids []int64
		for _, it := range items {
			if it.Class != reconcile.TargetAheadOfSource {
				ids = append(ids, it.DataID)
			}
		}
		if err := m.checkRemovals(ctx, ids); err != nil {
			return Repair{}, err
		}
	}
	if err := m.store.Approve(ctx, id, approver, reason); err != nil {
		return Repair{}, err
	}
	m.wake()
	return m.store.GetRepair(ctx, id)
}

// checkEpoch is the epoch rule at approval. The epoch E was fixed at
// planning above every epoch of the scope, so rows the scope gets at E
// afterwards come from the fixed transformation: the live consumer the flow
// redeploys at E before approving (docs/design.md, "Controlled rebuild
// under live writes"), and replays it delivers. They hold what the rebuild
// would write for their versions and are allowed, however many arrive.
// Refused: E not above the configured floor; a row of the scope stored at an
// epoch above E, or a retired floor above E (either would outrank or refuse
// the rebuild's rows of the same version); another rebuild of the campaign
// at E or above that wrote rows.
func (m *Manager) checkEpoch(ctx context.Context, scope reconcile.Scope, epoch int) error {
	refuse := func(why string, args ...any) error {
		return apierr.FailedPrecondition.Errorf("rebuild epoch %d of campaign %d is no longer valid: %s; request a new rebuild at a higher epoch",
			epoch, scope.DetectID, fmt.Sprintf(why, args...))
	}
	if epoch <= int(m.cfg.EpochFloor) {
		return refuse("it does not exceed the configured epoch floor %d", m.cfg.EpochFloor)
	}
	stored, err := m.storedEpoch(ctx, scope)
	if err != nil {
		return err
	}
	if int(stored) > epoch {
		return refuse("the projection holds or retired epoch %d above it in the scope", stored)
	}
	e, err := m.store.MaxRebuildEpoch(ctx, scope.DetectID)
	if err != nil {
		return err
	}
	if e >= epoch {
		return refuse("another rebuild of the campaign wrote rows at epoch %d", e)
	}
	return nil
}

// Cancel cancels a repair that has not ended (and its rebuild, unless that
// is switching readers). Items already applied stay applied. An ended
// repair is apierr.FailedPrecondition.
func (m *Manager) Cancel(ctx context.Context, id, by, reason string) (Repair, error) {
	if err := m.store.Cancel(ctx, id, by, reason); err != nil {
		return Repair{}, err
	}
	return m.store.GetRepair(ctx, id)
}

// VerifyResult is the outcome of one verification pass.
type VerifyResult struct {
	Passed, Mismatched int64
}

// Verify runs one verification pass of a repair now: AWAITING_VERIFICATION
// (clean: VERIFIED; otherwise it keeps waiting until its deadline), or
// FAILED by its verification with every item applied (clean: VERIFIED).
// Other states are apierr.FailedPrecondition.
func (m *Manager) Verify(ctx context.Context, id, by string) (Repair, VerifyResult, error) {
	r, err := m.store.GetRepair(ctx, id)
	if err != nil {
		return Repair{}, VerifyResult{}, err
	}
	switch {
	case r.State == StateAwaitingVerification:
	case r.State == StateFailed && r.Verification == VerifyFailed && r.ItemsFailed == 0:
	default:
		return Repair{}, VerifyResult{}, apierr.WithReason(apierr.FailedPrecondition.Errorf("repair %s is %s (verification %s): only a repair awaiting verification, or whose verification failed, can be verified",
			id, r.State, r.Verification), apierr.InvalidState, "state", r.State)
	}
	res, err := m.verifier.check(ctx, r, by, r.State == StateFailed)
	if err != nil {
		return Repair{}, VerifyResult{}, err
	}
	r, err = m.store.GetRepair(ctx, id)
	return r, res, err
}

// RebuildRequest is a StartRebuild call.
type RebuildRequest struct {
	RequestID string
	Scope     reconcile.Scope
	Epoch     int
	Reason    string
	By        string
}

func (r RebuildRequest) hash() string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("v1\x00%d\x00%d\x00%d\x00%d\x00%s", r.Scope.DetectID, r.Scope.ProjectID, r.Scope.SchoolID, r.Epoch, r.Reason)))
	return hex.EncodeToString(sum[:])
}

// StartRebuild stores a rebuild of a scope at an epoch, AWAITING_APPROVAL.
// It is idempotent by RequestID (apierr.ErrRequestReused for a different request);
// an epoch not above the floor is an apierr.FieldError, a campaign with an active
// rebuild apierr.FailedPrecondition.
func (m *Manager) StartRebuild(ctx context.Context, req RebuildRequest) (Rebuild, error) {
	h := req.hash()
	if rb, ok, err := m.store.RebuildByRequest(ctx, req.RequestID); err != nil || ok {
		if err == nil && rb.RequestHash != h {
			err = fmt.Errorf("%w: request_id %q", apierr.ErrRequestReused, req.RequestID)
		}
		return rb, err
	}
	floor, err := m.EpochFloor(ctx, req.Scope)
	if err != nil {
		return Rebuild{}, err
	}
	if req.Epoch <= int(floor) {
		return Rebuild{}, &apierr.FieldError{Field: "epoch", Description: fmt.Sprintf("must be greater than the current epoch floor %d", floor)}
	}
	rb, err := m.store.CreateRebuild(ctx, Rebuild{RequestID: req.RequestID, RequestHash: h, Scope: req.Scope, Epoch: req.Epoch,
		Reason: req.Reason, CreatedBy: req.By})
	if errors.Is(err, errDuplicateRequest) {
		return m.StartRebuild(ctx, req)
	}
	return rb, err
}

// ApproveRebuild approves a rebuild AWAITING_APPROVAL (same rules as
// Approve). A rebuild of a REBUILD repair is approved through the repair.
func (m *Manager) ApproveRebuild(ctx context.Context, id, approver, reason string) (Rebuild, error) {
	rb, err := m.store.GetRebuild(ctx, id)
	if err != nil {
		return Rebuild{}, err
	}
	if rb.RepairID != "" {
		return Rebuild{}, apierr.FailedPrecondition.Errorf("rebuild %s belongs to repair %s: approve the repair", id, rb.RepairID)
	}
	if err := m.checkApprover("rebuild", id, rb.State, rb.CreatedBy, approver); err != nil {
		return Rebuild{}, err
	}
	if err := m.checkEpoch(ctx, rb.Scope, rb.Epoch); err != nil {
		return Rebuild{}, err
	}
	if err := m.store.ApproveRebuild(ctx, id, approver, reason); err != nil {
		return Rebuild{}, err
	}
	m.wake()
	return m.store.GetRebuild(ctx, id)
}

// CancelRebuild cancels a rebuild before it switches readers. A rebuild of a
// REBUILD repair is cancelled through the repair.
func (m *Manager) CancelRebuild(ctx context.Context, id, by, reason string) (Rebuild, error) {
	rb, err := m.store.GetRebuild(ctx, id)
	if err != nil {
		return Rebuild{}, err
	}
	if rb.RepairID != "" {
		return Rebuild{}, apierr.FailedPrecondition.Errorf("rebuild %s belongs to repair %s: cancel the repair", id, rb.RepairID)
	}
	if err := m.store.CancelRebuild(ctx, id, by, reason); err != nil {
		return Rebuild{}, err
	}
	return m.store.GetRebuild(ctx, id)
}

// ProjectionEpochs is the EpochSource of the ClickHouse projection.
type ProjectionEpochs struct {
	Conn driver.Conn
}

// MaxEpoch implements EpochSource: the highest epoch of any stored row of
// the scope, or retired (projection_epoch_floor), 0 for none.
func (p ProjectionEpochs) MaxEpoch(ctx context.Context, s reconcile.Scope) (uint16, error) {
	q := "SELECT toUInt16(max(epoch)) FROM fitness_result_versions WHERE detect_id = ?"
	args := []any{s.DetectID}
	if s.ProjectID != 0 {
		q += " AND project_id = ?"
		args = append(args, s.ProjectID)
	}
	if s.SchoolID != 0 {
		q += " AND school_id = ?"
		args = append(args, s.SchoolID)
	}
	var e uint16
	if err := p.Conn.QueryRow(ctx, q, args...).Scan(&e); err != nil {
		return 0, fmt.Errorf("reading the highest epoch of campaign %d: %w", s.DetectID, err)
	}
	retired, err := chstore.NewProjection(p.Conn).EpochFloor(ctx)
	if err != nil {
		return 0, err
	}
	return max(e, retired), nil
}
