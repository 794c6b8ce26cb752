// Package repair plans, stores, executes and verifies repairs of the
// discrepancies reconciliation found (pkg/reconciliation/reconcile), each class in its own
// way, and runs controlled rebuilds:
//
//	MISSING_IN_TARGET, STALE_TARGET_VERSION  -> REPLAY    authoritative state, existing version and event id
//	DELETION_NOT_APPLIED                     -> TOMBSTONE the retained versioned tombstone, through the same path
//	CONTENT_MISMATCH                         -> REBUILD   of the run's scope at a new transformation epoch (approved)
//	UNEXPECTED_TARGET_RECORD                 -> REMOVE    every projection row of the key (approved; origins shown)
//	TARGET_AHEAD_OF_SOURCE                   -> REMOVE    the rows above the source version, then REPLAY (approved)
//
// A CreateRepair request makes one repair per action. Repairs, their items,
// their state transitions and rebuilds live in the control database (Store,
// migration control/0003_repair.sql). The Manager applies the rules of
// creation, approval, cancellation and manual verification; the Executor runs
// EXECUTING and AWAITING_VERIFICATION repairs and approved rebuilds in the
// background under a lease, rate-limited per shard, and resumes them after a
// crash. A repair ends VERIFIED only when a comparison of exactly its keys is
// clean (Verifier); only then are its discrepancies marked resolved.
//
// The shard-side replay, the ClickHouse-side removal and the rebuild are
// consumed through the small interfaces Replayer, TargetEditor and Rebuilder.
package repair

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/recovery/replay"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
)

// Replayer re-delivers the authoritative current state of a record through the normal
// event path (a new or re-armed outbox row on its owning shard) with its EXISTING version
// and event id; for a deleted or purged record it delivers the retained tombstone.
//
// Replay is idempotent: calling it again for a record whose state did not
// change re-arms the same event (same version, same event id). The executor
// calls it again after a crash for items it had not recorded as applied.
//
// ReplayBatch is Replay of many records at once (pkg/recovery/replay: one transaction
// per shard): one outcome per data id, in order; an outcome's Err concerns
// that record alone, the error the whole batch (which the executor then
// applies item by item).
type Replayer interface {
	Replay(ctx context.Context, dataID int64) (shardID string, version int64, eventID string, deleted bool, err error)
	ReplayBatch(ctx context.Context, dataIDs []int64) ([]replay.Outcome, error)
}

// TargetEditor shows and removes projection rows (approved removals only).
//
// RemoveAbove is idempotent: removing what is already gone removes 0 rows.
// The removal may become visible asynchronously (a ClickHouse mutation);
// verification polls until it is.
type TargetEditor interface {
	Origins(ctx context.Context, detectID, dataID int64) ([]chstore.Row, error)           // every stored version of the key
	RemoveAbove(ctx context.Context, detectID, dataID, aboveVersion int64) (int64, error) // deletes rows with version > aboveVersion (0: all); returns rows removed
}

// Rebuilder runs a controlled rebuild of a scope at epoch and switches readers only after
// its verification passed; progress is called as it goes.
//
// Rebuild returns nil only after readers were switched to the verified clean
// projection (so the live projection, fitness_result_versions, serves the
// rebuilt scope). The executor calls it again with the same scope and epoch
// when a crash or restart interrupted it before it returned; a cancelled ctx
// must never leave readers half-switched. Phases reported through progress
// are BUILDING, CATCHING_UP, VERIFYING, SWITCHING and SWITCHED (see the
// Phase constants); once SWITCHING is reported the rebuild can no longer be
// cancelled through the API.
type Rebuilder interface {
	Rebuild(ctx context.Context, scope reconcile.Scope, epoch uint16, progress func(phase string, done, total int64)) (rows int64, err error)
}

// EpochSource reads the highest transformation epoch stored in the
// projection for a scope (ProjectionEpochs is the ClickHouse one).
type EpochSource interface {
	MaxEpoch(ctx context.Context, scope reconcile.Scope) (uint16, error)
}

// States of repairs and rebuilds (values of fitness.v1.RepairState without
// the prefix).
const (
	StateAwaitingApproval     = "AWAITING_APPROVAL"
	StateExecuting            = "EXECUTING"
	StateAwaitingVerification = "AWAITING_VERIFICATION"
	StateVerified             = "VERIFIED"
	StateFailed               = "FAILED"
	StateCancelled            = "CANCELLED"
)

// States lists every state, in state-machine order.
var States = []string{StateAwaitingApproval, StateExecuting, StateAwaitingVerification, StateVerified, StateFailed, StateCancelled}

// terminal reports whether a repair or rebuild in state s has ended.
func terminal(s string) bool { return s == StateVerified || s == StateFailed || s == StateCancelled }

// Item outcomes (values of fitness.v1.RepairItemOutcome without the prefix).
const (
	OutcomePending    = "PENDING"
	OutcomeApplied    = "APPLIED"
	OutcomeSuperseded = "SUPERSEDED_BY_NEWER_VERSION"
	OutcomeFailed     = "FAILED"
)

// Verification results (values of fitness.v1.VerificationResult without the prefix).
const (
	VerifyPending = "PENDING"
	VerifyPassed  = "PASSED"
	VerifyFailed  = "FAILED"
)

// Rebuild phases, as reported by a Rebuilder (values of
// fitness.v1.RebuildPhase without the prefix).
const (
	PhaseBuilding   = "BUILDING"
	PhaseCatchingUp = "CATCHING_UP"
	PhaseVerifying  = "VERIFYING"
	PhaseSwitching  = "SWITCHING"
	PhaseSwitched   = "SWITCHED"
)

// Action is how a discrepancy is repaired (values match fitness.v1.RepairAction).
type Action int

// Actions.
const (
	ActionReplay    Action = 1
	ActionTombstone Action = 2
	ActionRebuild   Action = 3
	ActionRemove    Action = 4
)

// Actions lists every action in the order repairs of one request are made.
var Actions = []Action{ActionReplay, ActionTombstone, ActionRebuild, ActionRemove}

func (a Action) String() string {
	switch a {
	case ActionReplay:
		return "REPLAY"
	case ActionTombstone:
		return "TOMBSTONE"
	case ActionRebuild:
		return "REBUILD"
	case ActionRemove:
		return "REMOVE"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// NeedsApproval reports whether repairs of a need an admin's approval:
// rebuilds and removals do, replays and tombstones do not.
func (a Action) NeedsApproval() bool { return a == ActionRebuild || a == ActionRemove }

// ActionFor returns the repair action of a discrepancy class.
func ActionFor(c reconcile.Class) (Action, bool) {
	switch c {
	case reconcile.MissingInTarget, reconcile.StaleTargetVersion:
		return ActionReplay, true
	case reconcile.DeletionNotApplied:
		return ActionTombstone, true
	case reconcile.ContentMismatch:
		return ActionRebuild, true
	case reconcile.UnexpectedTargetRecord, reconcile.TargetAheadOfSource:
		return ActionRemove, true
	}
	return 0, false
}

// Repair is a stored repair: the discrepancies of one action from one request.
type Repair struct {
	ID, RequestID, RunID string
	Scope                reconcile.Scope
	Action               Action
	State                string
	RequiresApproval     bool
	Reason, CreatedBy    string
	ApprovedBy           string
	ApproveReason        string
	RebuildID            string
	RebuildEpoch         int
	ItemsTotal           int64
	ItemsDone            int64 // applied, including superseded
	ItemsFailed          int64
	Verification         string
	Message              string
	LeaseOwner           string
	Created, Updated     time.Time
	StateTime            time.Time // when it entered State
	Approved             time.Time // zero until approved
	Ended                time.Time // zero until terminal
	VerifyDeadline       time.Time // zero until AWAITING_VERIFICATION
}

// Terminal reports whether the repair has ended.
func (r Repair) Terminal() bool { return terminal(r.State) }

// Origin is one stored projection version of a record, shown before a removal.
type Origin struct {
	Version        int64  `json:"version"`
	Epoch          uint16 `json:"epoch"`
	EventID        string `json:"event_id"`
	ShardID        string `json:"shard_id"`
	IngestMs       int64  `json:"ingest_ms"`
	SourceCommitMs int64  `json:"source_commit_ms"`
	Deleted        bool   `json:"is_deleted"`
	SchoolID       int64  `json:"school_id"`
	ProjectID      int64  `json:"project_id"`
	Grade          int16  `json:"grade"`
	Result         string `json:"result"`
	Unit           string `json:"unit"`
}

// OriginOf describes a projection row.
func OriginOf(r chstore.Row) Origin {
	return Origin{Version: r.Version, Epoch: r.Epoch, EventID: r.EventID, ShardID: r.ShardID, IngestMs: r.IngestMs,
		SourceCommitMs: r.SourceCommitMs, Deleted: r.IsDeleted, SchoolID: r.SchoolID, ProjectID: r.ProjectID,
		Grade: r.Grade, Result: r.Result, Unit: r.Unit}
}

// Item is one discrepancy of a repair and what was done about it.
type Item struct {
	RepairID       string
	Seq            int
	DiscrepancyID  string
	DataID         int64
	DetectID       int64
	ShardID        string
	Class          reconcile.Class
	Action         Action
	SourceVersion  int64 // as reconciliation saw it; 0 when the source lacked the record
	TargetVersion  int64 // as reconciliation saw it; 0 when the target lacked the record
	AppliedVersion int64 // the version replayed
	EventID        string
	RowsRemoved    int64
	Outcome        string
	Verification   string
	Attempts       int
	Origins        []Origin // removals: the rows the removal deletes
	Message        string
	Applied        time.Time // zero until applied
}

// Rebuild is a stored controlled rebuild.
type Rebuild struct {
	ID, RequestID, RequestHash string
	RepairID                   string // the REBUILD repair running it; empty for a direct rebuild
	Scope                      reconcile.Scope
	Epoch                      int
	State, Phase, Verification string
	Reason, CreatedBy          string
	ApprovedBy, ApproveReason  string
	RowsWritten, RowsTotal     int64
	Message                    string
	Created, Updated           time.Time
	StateTime                  time.Time
	Approved, Ended            time.Time // zero until then
}

// Terminal reports whether the rebuild has ended.
func (r Rebuild) Terminal() bool { return terminal(r.State) }

// Transition is one recorded state (or rebuild phase) change.
type Transition struct {
	From, To, Actor, Note string
	Time                  time.Time
}

// Errors of the repair domain, marked with their apierr kinds (the RPC edge
// maps them through apierr.Status). Besides these: a refusal that depends on
// the state of a repair, rebuild, run or discrepancy (not awaiting approval,
// self-approval, already in an active repair, ...) is an
// apierr.FailedPrecondition, a bad request field an *apierr.FieldError, a
// request_id reused for a different request apierr.ErrRequestReused.
var (
	ErrRepairNotFound  = apierr.NewReason(apierr.NotFound, apierr.RepairNotFound, "repair not found")
	ErrRebuildNotFound = apierr.NewReason(apierr.NotFound, apierr.RebuildNotFound, "rebuild not found")
	// ErrUnavailable wraps failures of a dependency (the projection, the shards).
	ErrUnavailable = apierr.NewReason(apierr.Unavailable, apierr.DependencyUnavailable, "dependency unavailable")
	// errLeaseLost: another executor took over the repair or rebuild.
	errLeaseLost = errors.New("lease lost to another executor")
)
