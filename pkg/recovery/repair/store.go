package repair

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/platform/changefeed"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
)

// Store keeps repairs, their items and transitions, and rebuilds in the
// control database (tables of control/0003_repair.sql, owned here). Every
// state change is a conditional update in a transaction together with its
// transition row, so concurrent callers (the API, several executors) never
// overwrite each other's changes.
type Store struct {
	db   *sql.DB
	now  func() time.Time
	feed *changefeed.Feed
	// afterBatch, when set (internal tests), runs after each committed
	// batch of CreateRepairs' items; an error stops CreateRepairs there as
	// a crash would (nothing is cleaned up).
	afterBatch func(stored int) error
}

// NewStore returns a store over the control database.
func NewStore(db *sql.DB) *Store {
	return &Store{db: db, now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }, feed: changefeed.New()}
}

// Changes is notified after every write through this store of a repair
// (key RepairKey(id)) or a rebuild (RebuildKey(id)), whether it succeeded or
// not: a watcher in this process reads it again at once
// (pkg/platform/changefeed). Writes of other processes are not seen here.
func (s *Store) Changes() *changefeed.Feed { return s.feed }

// RepairKey is the Changes key of repair id.
func RepairKey(id string) string { return "repair:" + id }

// RebuildKey is the Changes key of rebuild id.
func RebuildKey(id string) string { return "rebuild:" + id }

const (
	maxMessage = 2000
	maxNote    = 1000
	maxReason  = 1000
	itemBatch  = 500
)

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func timeOf(t sql.NullTime) time.Time {
	if t.Valid {
		return t.Time
	}
	return time.Time{}
}

// isDuplicate reports a duplicate-key error on the named unique key.
func isDuplicate(err error, key string) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1062 && strings.Contains(me.Message, key)
}

// Ping checks that the control database answers and holds the repair
// tables (migration control/0003 applied): the health of the repair server.
func (s *Store) Ping(ctx context.Context) error {
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM repair WHERE 1 = 0").Scan(&n); err != nil {
		return fmt.Errorf("control database: %w", err)
	}
	return nil
}

// subject names the table of a state machine.
type subject struct {
	kind, table, idCol string
}

var (
	repairSubject  = subject{"repair", "repair", "repair_id"}
	rebuildSubject = subject{"rebuild", "rebuild", "rebuild_id"}
)

// change is one conditional state change.
type change struct {
	from        []string // allowed current states
	to          string
	actor, note string
	set         string // extra assignments, e.g. "approved_by = ?"
	args        []any
}

// changeState applies c to the row id of sub within tx: it locks the row,
// checks its state, updates it (state, state_time, update_time, end_time for
// a terminal state, plus c.set) and records the transition. It returns the
// previous state; a state not in c.from is apierr.FailedPrecondition, an unknown
// id notFound.
func (s *Store) changeState(ctx context.Context, tx *sql.Tx, sub subject, id string, c change, notFound error) (string, error) {
	var cur string
	err := tx.QueryRowContext(ctx, "SELECT state FROM "+sub.table+" WHERE "+sub.idCol+" = ? FOR UPDATE", id).Scan(&cur)
	if errors.Is(err, sql.ErrNoRows) {
		return "", notFound
	}
	if err != nil {
		return "", fmt.Errorf("reading %s %s: %w", sub.kind, id, err)
	}
	allowed := false
	for _, f := range c.from {
		allowed = allowed || f == cur
	}
	if !allowed {
		return cur, apierr.WithReason(apierr.FailedPrecondition.Errorf("%s %s is %s (this needs %s)", sub.kind, id, cur, strings.Join(c.from, " or ")),
			apierr.InvalidState, "state", cur)
	}
	now := s.now()
	set := "state = ?, state_time = ?, update_time = ?"
	args := []any{c.to, now, now}
	if terminal(c.to) {
		set += ", end_time = ?"
		args = append(args, now)
	}
	if c.set != "" {
		set += ", " + c.set
		args = append(args, c.args...)
	}
	args = append(args, id)
	if _, err := tx.ExecContext(ctx, "UPDATE "+sub.table+" SET "+set+" WHERE "+sub.idCol+" = ?", args...); err != nil {
		return cur, fmt.Errorf("moving %s %s to %s: %w", sub.kind, id, c.to, err)
	}
	if err := s.addTransition(ctx, tx, sub, id, cur, c.to, c.actor, c.note, now); err != nil {
		return cur, err
	}
	if terminal(c.to) {
		if err := s.releaseActive(ctx, tx, sub, id); err != nil {
			return cur, err
		}
	}
	return cur, nil
}

func (s *Store) addTransition(ctx context.Context, ex interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, sub subject, id, from, to, actor, note string, at time.Time) error {
	if _, err := ex.ExecContext(ctx, `INSERT INTO repair_transition (subject, subject_id, from_state, to_state, actor, note, create_time)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, sub.kind, id, from, to, clip(actor, 128), clip(note, maxNote), at); err != nil {
		return fmt.Errorf("recording transition of %s %s: %w", sub.kind, id, err)
	}
	return nil
}

// releaseActive frees what an ended repair or rebuild reserved: the
// discrepancies of its items, or its campaign.
func (s *Store) releaseActive(ctx context.Context, tx *sql.Tx, sub subject, id string) error {
	q := "UPDATE repair_item SET active_data_id = NULL WHERE repair_id = ? AND active_data_id IS NOT NULL"
	if sub == rebuildSubject {
		q = "UPDATE rebuild SET active_detect_id = NULL, lease_owner = NULL, lease_expire = NULL WHERE rebuild_id = ?"
	}
	if _, err := tx.ExecContext(ctx, q, id); err != nil {
		return fmt.Errorf("releasing %s %s: %w", sub.kind, id, err)
	}
	return nil
}

// inTx runs f in a transaction and commits it.
func (s *Store) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("beginning transaction: %w", err)
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing: %w", err)
	}
	return nil
}

// ---- repairs ----

// A repair's counters: its row's plus its progress slots' (FinishItems).
const (
	itemsDoneSQL   = "(items_done + COALESCE((SELECT SUM(p.items_done) FROM repair_progress p WHERE p.repair_id = repair.repair_id), 0))"
	itemsFailedSQL = "(items_failed + COALESCE((SELECT SUM(p.items_failed) FROM repair_progress p WHERE p.repair_id = repair.repair_id), 0))"
	updateTimeSQL  = "GREATEST(update_time, COALESCE((SELECT MAX(p.update_time) FROM repair_progress p WHERE p.repair_id = repair.repair_id), update_time))"
)

const repairColumns = `repair_id, request_id, run_id, detect_id, project_id, school_id, action, state, requires_approval, reason,
	created_by, approved_by, approve_reason, rebuild_id, rebuild_epoch, items_total, ` + itemsDoneSQL + `, ` + itemsFailedSQL + `, verification,
	message, COALESCE(lease_owner, ''), create_time, ` + updateTimeSQL + `, state_time, approve_time, end_time, verify_deadline`

func scanRepair(sc interface{ Scan(...any) error }, extra ...any) (Repair, error) {
	var r Repair
	var approved, ended, deadline sql.NullTime
	err := sc.Scan(append(extra, &r.ID, &r.RequestID, &r.RunID, &r.Scope.DetectID, &r.Scope.ProjectID, &r.Scope.SchoolID, &r.Action,
		&r.State, &r.RequiresApproval, &r.Reason, &r.CreatedBy, &r.ApprovedBy, &r.ApproveReason, &r.RebuildID, &r.RebuildEpoch,
		&r.ItemsTotal, &r.ItemsDone, &r.ItemsFailed, &r.Verification, &r.Message, &r.LeaseOwner, &r.Created, &r.Updated,
		&r.StateTime, &approved, &ended, &deadline)...)
	r.Approved, r.Ended, r.VerifyDeadline = timeOf(approved), timeOf(ended), timeOf(deadline)
	return r, err
}

// NewRepair is a repair to create, with its items (Seq is assigned).
type NewRepair struct {
	Action       Action
	Items        []Item
	RebuildEpoch int // REBUILD repairs: a rebuild of the run's scope is created with it
}

// CreateSpec is what one CreateRepair request creates.
type CreateSpec struct {
	RequestID, RequestHash string
	RunID                  string
	Scope                  reconcile.Scope
	Reason, CreatedBy      string
	Repairs                []NewRepair
	// Batch is the items committed per transaction (default
	// DefaultCreateBatch); Lease how long the creator holds the request
	// between two commits before another call may take it over (default
	// DefaultCreateLease).
	Batch int
	Lease time.Duration
}

// StatePlanning is the state of a repair whose items are still being
// stored: CreateRepairs commits them in batches and only then moves the
// repair to its first real state. The executor never runs a PLANNING repair
// and it cannot be approved; over the API it shows as
// REPAIR_STATE_UNSPECIFIED with a message saying how many items are stored.
// A crash leaves it PLANNING with an expiring lease: the next CreateRepair
// (with its request id, or any other once the lease expired) deletes it and
// the request is planned again.
const StatePlanning = "PLANNING"

// Defaults of CreateSpec.
const (
	DefaultCreateBatch = 2000
	DefaultCreateLease = 30 * time.Second
)

// errDuplicateRequest: another call stored the same request_id first.
var errDuplicateRequest = errors.New("request_id stored concurrently")

// errCrash is what a test's afterBatch returns to stop CreateRepairs as a
// crash would.
var errCrash = errors.New("simulated crash")

// errPlanningLost: another call took over the PLANNING request (our lease
// expired).
var errPlanningLost = errors.New("the request's planning was taken over by another call")

// CreateRepairs stores the repairs of one request in bounded transactions,
// so that a request of 100,000 items never holds one long transaction:
//
//  1. the request row, each repair PLANNING under owner's lease (a new id)
//     and, for a REBUILD repair, its rebuild (reserving the campaign);
//  2. the items, spec.Batch per transaction, each renewing the lease (and
//     stopping with errPlanningLost if another call took it over); an item
//     reserves its record (one active repair per record);
//  3. every repair moved to its first state (AWAITING_APPROVAL when its
//     action needs approval, else EXECUTING) with its creation transition,
//     in one transaction.
//
// A record already in an active repair, or a campaign with an active
// rebuild, is apierr.FailedPrecondition and what was stored is removed. A crash
// between 1 and 3 leaves the repairs PLANNING (recognisably incomplete,
// never run) until DropPlanning removes them.
func (s *Store) CreateRepairs(ctx context.Context, spec CreateSpec) ([]Repair, error) {
	if spec.Batch <= 0 {
		spec.Batch = DefaultCreateBatch
	}
	if spec.Lease <= 0 {
		spec.Lease = DefaultCreateLease
	}
	owner := "create-" + newID()[:24]
	now := s.now()
	var out []Repair
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		out = nil
		if _, err := tx.ExecContext(ctx, `INSERT INTO repair_request (request_id, request_hash, created_by, create_time) VALUES (?, ?, ?, ?)`,
			spec.RequestID, spec.RequestHash, clip(spec.CreatedBy, 128), now); err != nil {
			if isDuplicate(err, "PRIMARY") {
				return errDuplicateRequest
			}
			return fmt.Errorf("storing request %s: %w", spec.RequestID, err)
		}
		for _, nr := range spec.Repairs {
			scope := spec.Scope
			if nr.Action == ActionRebuild {
				// A rebuild covers the whole campaign, whatever the run's
				// scope: a record a mapping defect shows under another
				// school or project is outside that scope on one side, and
				// a rebuild of the scope would neither re-read it from the
				// shards nor replace the defective row.
				scope = scope.Campaign()
			}
			r := Repair{ID: newID(), RequestID: spec.RequestID, RunID: spec.RunID, Scope: scope, Action: nr.Action,
				State: StatePlanning, RequiresApproval: nr.Action.NeedsApproval(), Reason: clip(spec.Reason, maxReason),
				CreatedBy: clip(spec.CreatedBy, 128), ItemsTotal: int64(len(nr.Items)), Verification: VerifyPending,
				Message: fmt.Sprintf("planning: 0 of %d items stored", len(nr.Items)), Created: now, Updated: now, StateTime: now}
			if nr.Action == ActionRebuild {
				r.RebuildID, r.RebuildEpoch = newID(), nr.RebuildEpoch
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO repair (repair_id, request_id, run_id, detect_id, project_id, school_id, action,
				state, requires_approval, reason, created_by, rebuild_id, rebuild_epoch, items_total, verification, message, lease_owner, lease_expire,
				create_time, update_time, state_time)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND), ?, ?, ?)`,
				r.ID, r.RequestID, r.RunID, r.Scope.DetectID, r.Scope.ProjectID, r.Scope.SchoolID, r.Action, r.State, r.RequiresApproval,
				r.Reason, r.CreatedBy, r.RebuildID, r.RebuildEpoch, r.ItemsTotal, r.Verification, r.Message, owner, spec.Lease.Microseconds(),
				now, now, now); err != nil {
				return fmt.Errorf("storing repair: %w", err)
			}
			if nr.Action == ActionRebuild {
				rb := Rebuild{ID: r.RebuildID, RequestID: "repair-" + r.ID, RequestHash: spec.RequestHash, RepairID: r.ID, Scope: scope,
					Epoch: nr.RebuildEpoch, Reason: r.Reason, CreatedBy: r.CreatedBy}
				if err := s.insertRebuild(ctx, tx, rb, now, "created by repair "+r.ID+"; approved through the repair"); err != nil {
					return err
				}
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := s.storeItems(ctx, spec, owner, out); err != nil {
		if !errors.Is(err, errPlanningLost) && !errors.Is(err, errCrash) {
			// Best effort: leave nothing that reserves records; a crash
			// here leaves the PLANNING repairs to DropPlanning.
			if derr := s.DropPlanning(context.WithoutCancel(ctx), spec.RequestID, owner); derr != nil {
				err = errors.Join(err, fmt.Errorf("removing the incomplete request: %w", derr))
			}
		}
		return nil, err
	}
	now = s.now()
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		for i := range out {
			r := &out[i]
			r.State, r.Message = StateExecuting, ""
			note := "created; needs no approval, executing"
			if r.RequiresApproval {
				r.State, note = StateAwaitingApproval, "created; awaiting an admin's approval"
			}
			res, err := tx.ExecContext(ctx, `UPDATE repair SET state = ?, message = '', lease_owner = NULL, lease_expire = NULL,
				update_time = ?, state_time = ? WHERE repair_id = ? AND state = 'PLANNING' AND lease_owner = ?`, r.State, now, now, r.ID, owner)
			if err != nil {
				return fmt.Errorf("completing repair %s: %w", r.ID, err)
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				return fmt.Errorf("completing repair %s: %w", r.ID, errPlanningLost)
			}
			r.Updated, r.StateTime = now, now
			if err := s.addTransition(ctx, tx, repairSubject, r.ID, "", r.State, spec.CreatedBy, note, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// renewPlanning extends owner's lease of the PLANNING repairs of spec's
// request inside tx and sets their message, or returns errPlanningLost when
// owner no longer holds them. Whether owner holds them is read with a
// locking read, never from the UPDATE's affected-row count: MySQL and
// MariaDB count only the rows an UPDATE changes, and a renewal that writes
// the same message and the same expiry (two one-item repairs of one request
// stored within a millisecond) changes none; read as "lost", that made
// CreateRepair wait out its own lease (30 s) and start again.
func renewPlanning(ctx context.Context, tx *sql.Tx, spec CreateSpec, owner, message string) error {
	var held int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM repair WHERE request_id = ? AND state = 'PLANNING' AND lease_owner = ? FOR UPDATE",
		spec.RequestID, owner).Scan(&held); err != nil {
		return fmt.Errorf("renewing the planning of request %s: %w", spec.RequestID, err)
	}
	if held == 0 {
		return errPlanningLost
	}
	if _, err := tx.ExecContext(ctx, `UPDATE repair SET message = ?, lease_expire = DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND)
		WHERE request_id = ? AND state = 'PLANNING' AND lease_owner = ?`, message, spec.Lease.Microseconds(), spec.RequestID, owner); err != nil {
		return fmt.Errorf("renewing the planning of request %s: %w", spec.RequestID, err)
	}
	return nil
}

// storeItems commits the items of the PLANNING repairs out, spec.Batch per
// transaction, each renewing owner's lease.
func (s *Store) storeItems(ctx context.Context, spec CreateSpec, owner string, out []Repair) error {
	stored := 0
	for k, nr := range spec.Repairs {
		id := out[k].ID
		for i := 0; i < len(nr.Items); i += spec.Batch {
			chunk := nr.Items[i:min(i+spec.Batch, len(nr.Items))]
			err := s.inTx(ctx, func(tx *sql.Tx) error {
				if err := renewPlanning(ctx, tx, spec, owner, fmt.Sprintf("planning: %d of %d items stored", i+len(chunk), len(nr.Items))); err != nil {
					return err
				}
				return s.insertItems(ctx, tx, id, i, chunk)
			})
			if err != nil {
				return err
			}
			stored += len(chunk)
			if s.afterBatch != nil {
				if err := s.afterBatch(stored); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Planning reports whether a request's repairs are still PLANNING, and if
// so whether the lease of the call storing them has expired (a crash).
func (s *Store) Planning(ctx context.Context, requestID string) (planning, expired bool, err error) {
	var n, dead int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(lease_expire IS NULL OR lease_expire < UTC_TIMESTAMP(3)), 0)
		FROM repair WHERE request_id = ? AND state = 'PLANNING'`, requestID).Scan(&n, &dead); err != nil {
		return false, false, fmt.Errorf("reading the planning of request %s: %w", requestID, err)
	}
	return n > 0, n > 0 && dead == n, nil
}

// AbandonedPlanning returns up to limit request ids whose repairs are
// PLANNING with an expired lease: left by a crashed CreateRepair.
func (s *Store) AbandonedPlanning(ctx context.Context, limit int) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT request_id FROM repair WHERE state = 'PLANNING'
		AND (lease_expire IS NULL OR lease_expire < UTC_TIMESTAMP(3)) LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("finding abandoned repair requests: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("finding abandoned repair requests: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// TakeOverPlanning gives owner the lease of a request whose PLANNING
// repairs' lease expired; it reports whether owner now holds it.
func (s *Store) TakeOverPlanning(ctx context.Context, requestID, owner string, lease time.Duration) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE repair SET lease_owner = ?, lease_expire = DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND)
		WHERE request_id = ? AND state = 'PLANNING' AND (lease_expire IS NULL OR lease_expire < UTC_TIMESTAMP(3))`, owner, lease.Microseconds(), requestID)
	if err != nil {
		return false, fmt.Errorf("taking over the planning of request %s: %w", requestID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("taking over the planning of request %s: %w", requestID, err)
	}
	return n > 0, nil
}

// planning reads the repairs (and their rebuilds) of a request PLANNING
// under owner.
func (s *Store) planning(ctx context.Context, requestID, owner string) (repairs, rebuilds []any, err error) {
	rows, err := s.db.QueryContext(ctx, "SELECT repair_id, rebuild_id FROM repair WHERE request_id = ? AND state = 'PLANNING' AND lease_owner = ?", requestID, owner)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var r, rb string
		if err := rows.Scan(&r, &rb); err != nil {
			return nil, nil, err
		}
		repairs = append(repairs, r)
		if rb != "" {
			rebuilds = append(rebuilds, rb)
		}
	}
	return repairs, rebuilds, rows.Err()
}

// DropPlanning deletes what an incomplete request stored while owner holds
// its lease: the items of its PLANNING repairs in bounded batches, then in
// one transaction its rebuilds, transitions, repairs and the request row,
// so that the request id can be planned again. A request no longer
// PLANNING under owner changes nothing (errPlanningLost).
func (s *Store) DropPlanning(ctx context.Context, requestID, owner string) error {
	repairs, rebuilds, err := s.planning(ctx, requestID, owner)
	if err != nil {
		return fmt.Errorf("reading the planning of request %s: %w", requestID, err)
	}
	if len(repairs) == 0 {
		return errPlanningLost
	}
	for _, r := range repairs {
		for {
			res, err := s.db.ExecContext(ctx, "DELETE FROM repair_item WHERE repair_id = ? LIMIT ?", r, DefaultCreateBatch)
			if err != nil {
				return fmt.Errorf("removing the items of incomplete repair %s: %w", r, err)
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				break
			}
		}
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM repair WHERE request_id = ? AND state = 'PLANNING' AND lease_owner = ? AND repair_id IN ("+mysqldb.Placeholders(len(repairs))+")",
			append([]any{requestID, owner}, repairs...)...)
		if err != nil {
			return fmt.Errorf("removing incomplete request %s: %w", requestID, err)
		}
		if n, err := res.RowsAffected(); err != nil || n != int64(len(repairs)) {
			return errPlanningLost
		}
		// Items a concurrent batch committed after the deletion above.
		if _, err := tx.ExecContext(ctx, "DELETE FROM repair_item WHERE repair_id IN ("+mysqldb.Placeholders(len(repairs))+")", repairs...); err != nil {
			return fmt.Errorf("removing incomplete request %s: %w", requestID, err)
		}
		ids := append(append([]any{}, repairs...), rebuilds...)
		if _, err := tx.ExecContext(ctx, "DELETE FROM repair_transition WHERE subject_id IN ("+mysqldb.Placeholders(len(ids))+")", ids...); err != nil {
			return fmt.Errorf("removing incomplete request %s: %w", requestID, err)
		}
		if len(rebuilds) > 0 {
			if _, err := tx.ExecContext(ctx, "DELETE FROM rebuild WHERE rebuild_id IN ("+mysqldb.Placeholders(len(rebuilds))+")", rebuilds...); err != nil {
				return fmt.Errorf("removing incomplete request %s: %w", requestID, err)
			}
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM repair_request WHERE request_id = ?", requestID); err != nil {
			return fmt.Errorf("removing incomplete request %s: %w", requestID, err)
		}
		return nil
	})
}

// insertItems stores items as the repair's items first+1, first+2, ...
func (s *Store) insertItems(ctx context.Context, tx *sql.Tx, repairID string, first int, items []Item) error {
	for i := 0; i < len(items); i += itemBatch {
		chunk := items[i:min(i+itemBatch, len(items))]
		var args []any
		for j, it := range chunk {
			var origins any
			if len(it.Origins) > 0 {
				b, err := json.Marshal(it.Origins)
				if err != nil {
					return fmt.Errorf("encoding origins of %d: %w", it.DataID, err)
				}
				origins = string(b)
			}
			args = append(args, repairID, first+i+j+1, it.DiscrepancyID, it.DataID, it.DataID, it.DetectID, it.ShardID, it.Class, it.Action,
				it.SourceVersion, it.TargetVersion, origins)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO repair_item (repair_id, seq, discrepancy_id, active_data_id, data_id, detect_id, shard_id,
			class, action, source_version, target_version, origins) VALUES `+
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?),", len(chunk)), ","), args...)
		if isDuplicate(err, "uk_active_record") {
			return apierr.FailedPrecondition.Errorf("a record of the selection is already in an active repair (%v)", err)
		}
		if err != nil {
			return fmt.Errorf("storing items of repair %s: %w", repairID, err)
		}
	}
	return nil
}

// RequestHash returns the hash stored for a CreateRepair request id.
func (s *Store) RequestHash(ctx context.Context, requestID string) (string, bool, error) {
	var h string
	err := s.db.QueryRowContext(ctx, "SELECT request_hash FROM repair_request WHERE request_id = ?", requestID).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading request %s: %w", requestID, err)
	}
	return h, true, nil
}

// RepairsByRequest returns the repairs one request created, in action order.
func (s *Store) RepairsByRequest(ctx context.Context, requestID string) ([]Repair, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+repairColumns+" FROM repair WHERE request_id = ? ORDER BY action", requestID)
	if err != nil {
		return nil, fmt.Errorf("reading repairs of request %s: %w", requestID, err)
	}
	defer rows.Close()
	var out []Repair
	for rows.Next() {
		r, err := scanRepair(rows)
		if err != nil {
			return nil, fmt.Errorf("reading repairs of request %s: %w", requestID, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// GetRepair returns one repair.
func (s *Store) GetRepair(ctx context.Context, id string) (Repair, error) {
	r, err := scanRepair(s.db.QueryRowContext(ctx, "SELECT "+repairColumns+" FROM repair WHERE repair_id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Repair{}, ErrRepairNotFound
	}
	if err != nil {
		return Repair{}, fmt.Errorf("reading repair %s: %w", id, err)
	}
	return r, nil
}

// ListRepairs returns repairs newest first, optionally of one run and in one
// state, older than the repair of internal id before (0: from the newest),
// with their internal ids (page positions).
func (s *Store) ListRepairs(ctx context.Context, runID, state string, before int64, limit int) ([]Repair, []int64, error) {
	q := "SELECT id, " + repairColumns + " FROM repair WHERE 1=1"
	var args []any
	if runID != "" {
		q += " AND run_id = ?"
		args = append(args, runID)
	}
	if state != "" {
		q += " AND state = ?"
		args = append(args, state)
	}
	if before > 0 {
		q += " AND id < ?"
		args = append(args, before)
	}
	q += " ORDER BY id DESC LIMIT ?"
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("listing repairs: %w", err)
	}
	defer rows.Close()
	var out []Repair
	var ids []int64
	for rows.Next() {
		var id int64
		r, err := scanRepair(rows, &id)
		if err != nil {
			return nil, nil, fmt.Errorf("listing repairs: %w", err)
		}
		out, ids = append(out, r), append(ids, id)
	}
	return out, ids, rows.Err()
}

const itemColumns = `repair_id, seq, discrepancy_id, data_id, detect_id, shard_id, class, action, source_version, target_version,
	applied_version, event_id, rows_removed, outcome, verification, attempts, origins, message, apply_time`

func scanItem(sc interface{ Scan(...any) error }) (Item, error) {
	var it Item
	var origins sql.NullString
	var applied sql.NullTime
	if err := sc.Scan(&it.RepairID, &it.Seq, &it.DiscrepancyID, &it.DataID, &it.DetectID, &it.ShardID, &it.Class, &it.Action,
		&it.SourceVersion, &it.TargetVersion, &it.AppliedVersion, &it.EventID, &it.RowsRemoved, &it.Outcome, &it.Verification,
		&it.Attempts, &origins, &it.Message, &applied); err != nil {
		return Item{}, err
	}
	it.Applied = timeOf(applied)
	if origins.Valid && origins.String != "" {
		if err := json.Unmarshal([]byte(origins.String), &it.Origins); err != nil {
			return Item{}, fmt.Errorf("decoding origins of item %d: %w", it.Seq, err)
		}
	}
	return it, nil
}

// Items returns a repair's items after seq afterSeq, in plan order; outcome
// and verification, when not empty, select items in that outcome or
// verification state.
func (s *Store) Items(ctx context.Context, repairID string, afterSeq, limit int, outcome, verification string) ([]Item, error) {
	q := "SELECT " + itemColumns + " FROM repair_item WHERE repair_id = ? AND seq > ?"
	args := []any{repairID, afterSeq}
	if outcome != "" {
		q += " AND outcome = ?"
		args = append(args, outcome)
	}
	if verification != "" {
		q += " AND verification = ?"
		args = append(args, verification)
	}
	q += " ORDER BY seq LIMIT ?"
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing items of repair %s: %w", repairID, err)
	}
	defer rows.Close()
	var out []Item
	for rows.Next() {
		it, err := scanItem(rows)
		if err != nil {
			return nil, fmt.Errorf("listing items of repair %s: %w", repairID, err)
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// allItems pages through every item of a repair matching outcome and verification.
func (s *Store) allItems(ctx context.Context, repairID, outcome, verification string) ([]Item, error) {
	var out []Item
	after := 0
	for {
		page, err := s.Items(ctx, repairID, after, 1000, outcome, verification)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < 1000 {
			return out, nil
		}
		after = page[len(page)-1].Seq
	}
}

// DiscrepancyIDs returns the discrepancy ids of a repair's first limit items.
func (s *Store) DiscrepancyIDs(ctx context.Context, repairID string, limit int) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT discrepancy_id FROM repair_item WHERE repair_id = ? ORDER BY seq LIMIT ?", repairID, limit)
	if err != nil {
		return nil, fmt.Errorf("reading discrepancies of repair %s: %w", repairID, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("reading discrepancies of repair %s: %w", repairID, err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// Cover says why a discrepancy cannot be planned again.
type Cover struct {
	RepairID string
	Resolved bool // a VERIFIED repair resolved it; otherwise RepairID is active
}

// Covered returns the discrepancies of a run that a VERIFIED repair resolved
// or an active repair covers.
func (s *Store) Covered(ctx context.Context, runID string) (map[string]Cover, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT i.discrepancy_id, r.repair_id, r.state FROM repair_item i JOIN repair r ON r.repair_id = i.repair_id
		WHERE r.run_id = ? AND (i.active_data_id IS NOT NULL OR r.state = 'VERIFIED')`, runID)
	if err != nil {
		return nil, fmt.Errorf("reading repairs of run %s: %w", runID, err)
	}
	defer rows.Close()
	out := map[string]Cover{}
	for rows.Next() {
		var d, id, st string
		if err := rows.Scan(&d, &id, &st); err != nil {
			return nil, fmt.Errorf("reading repairs of run %s: %w", runID, err)
		}
		if c, seen := out[d]; !seen || !c.Resolved {
			out[d] = Cover{RepairID: id, Resolved: st == StateVerified}
		}
	}
	return out, rows.Err()
}

// ActiveRecords returns, of the given records, those an active repair (of
// any run) touches, with that repair's id.
func (s *Store) ActiveRecords(ctx context.Context, dataIDs []int64) (map[int64]string, error) {
	out := map[int64]string{}
	for i := 0; i < len(dataIDs); i += itemBatch {
		if err := s.activeRecords(ctx, dataIDs[i:min(i+itemBatch, len(dataIDs))], out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *Store) activeRecords(ctx context.Context, chunk []int64, out map[int64]string) error {
	args := make([]any, len(chunk))
	for j, id := range chunk {
		args[j] = id
	}
	rows, err := s.db.QueryContext(ctx, "SELECT active_data_id, repair_id FROM repair_item WHERE active_data_id IN ("+mysqldb.Placeholders(len(chunk))+")", args...)
	if err != nil {
		return fmt.Errorf("reading active repairs of records: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var r string
		if err := rows.Scan(&id, &r); err != nil {
			return fmt.Errorf("reading active repairs of records: %w", err)
		}
		out[id] = r
	}
	return rows.Err()
}

// Approve moves a repair from AWAITING_APPROVAL to EXECUTING, and its
// rebuild (REBUILD repairs) likewise, recording the approver.
func (s *Store) Approve(ctx context.Context, id, by, reason string) error {
	defer s.feed.Notify(RepairKey(id))
	now := s.now()
	return s.inTx(ctx, func(tx *sql.Tx) error {
		c := change{from: []string{StateAwaitingApproval}, to: StateExecuting, actor: by, note: "approved: " + reason,
			set: "approved_by = ?, approve_reason = ?, approve_time = ?", args: []any{clip(by, 128), clip(reason, maxReason), now}}
		if _, err := s.changeState(ctx, tx, repairSubject, id, c, ErrRepairNotFound); err != nil {
			return err
		}
		var rb string
		if err := tx.QueryRowContext(ctx, "SELECT rebuild_id FROM repair WHERE repair_id = ?", id).Scan(&rb); err != nil {
			return fmt.Errorf("reading repair %s: %w", id, err)
		}
		if rb == "" {
			return nil
		}
		c.note = "approved with repair " + id + ": " + reason
		_, err := s.changeState(ctx, tx, rebuildSubject, rb, c, ErrRebuildNotFound)
		return err
	})
}

// Cancel ends a repair that has not ended, and its rebuild unless that is
// switching readers already (then nothing changes and the refusal is
// apierr.FailedPrecondition).
func (s *Store) Cancel(ctx context.Context, id, by, reason string) error {
	defer s.feed.Notify(RepairKey(id))
	return s.inTx(ctx, func(tx *sql.Tx) error {
		c := change{from: []string{StateAwaitingApproval, StateExecuting, StateAwaitingVerification}, to: StateCancelled, actor: by,
			note: "cancelled: " + reason, set: "message = ?", args: []any{clip("cancelled by "+by+": "+reason, maxMessage)}}
		if _, err := s.changeState(ctx, tx, repairSubject, id, c, ErrRepairNotFound); err != nil {
			return err
		}
		var rb string
		if err := tx.QueryRowContext(ctx, "SELECT rebuild_id FROM repair WHERE repair_id = ?", id).Scan(&rb); err != nil {
			return fmt.Errorf("reading repair %s: %w", id, err)
		}
		if rb == "" {
			return nil
		}
		return s.cancelRebuild(ctx, tx, rb, by, reason)
	})
}

func (s *Store) cancelRebuild(ctx context.Context, tx *sql.Tx, id, by, reason string) error {
	var phase, state string
	if err := tx.QueryRowContext(ctx, "SELECT phase, state FROM rebuild WHERE rebuild_id = ? FOR UPDATE", id).Scan(&phase, &state); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return ErrRebuildNotFound
		}
		return fmt.Errorf("reading rebuild %s: %w", id, err)
	}
	if terminal(state) {
		return nil // a REBUILD repair whose rebuild already ended
	}
	if phase == PhaseSwitching || phase == PhaseSwitched {
		return apierr.FailedPrecondition.Errorf("rebuild %s is switching readers; it can no longer be cancelled", id)
	}
	_, err := s.changeState(ctx, tx, rebuildSubject, id, change{from: []string{StateAwaitingApproval, StateExecuting}, to: StateCancelled,
		actor: by, note: "cancelled: " + reason, set: "message = ?", args: []any{clip("cancelled by "+by+": "+reason, maxMessage)}}, ErrRebuildNotFound)
	return err
}

// ItemResult is the outcome of applying one item.
type ItemResult struct {
	Seq            int
	Outcome        string // APPLIED, SUPERSEDED_BY_NEWER_VERSION or FAILED
	ShardID        string // the shard that replayed it (empty: keep the planned one)
	AppliedVersion int64
	EventID        string
	RowsRemoved    int64
	Attempts       int
	Message        string
}

// FinishItem records the outcome of a PENDING item and counts it on the
// repair, in one transaction, provided owner still holds the repair's
// lease; otherwise nothing changes and the error is errLeaseLost. An item
// no longer PENDING is left alone (recorded once).
func (s *Store) FinishItem(ctx context.Context, repairID, owner string, res ItemResult) error {
	defer s.feed.Notify(RepairKey(repairID))
	return s.FinishItems(ctx, repairID, owner, []ItemResult{res})
}

// FinishItems records the outcomes of many items of a repair in one
// transaction (each as FinishItem does), so that a batch of replays costs one
// commit in the control database, not one per item. The lease is checked
// under a shared lock on the repair's row, which the executor's workers hold
// together while a takeover (an update of the row) waits for them; the
// counts go to one of the repair's progress slots, chosen at random, so the
// workers do not queue on one counter row either.
func (s *Store) FinishItems(ctx context.Context, repairID, owner string, results []ItemResult) error {
	defer s.feed.Notify(RepairKey(repairID))
	if len(results) == 0 {
		return nil
	}
	now := s.now()
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, "SELECT 1 FROM repair WHERE repair_id = ? AND lease_owner = ? LOCK IN SHARE MODE", repairID, owner).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return errLeaseLost
		}
		if err != nil {
			return fmt.Errorf("checking the lease of repair %s: %w", repairID, err)
		}
		var done, failed int64
		for _, outcome := range []bool{false, true} {
			var part []ItemResult
			for _, res := range results {
				if (res.Outcome == OutcomeFailed) == outcome {
					part = append(part, res)
				}
			}
			n, err := finishItems(ctx, tx, repairID, part, now)
			if err != nil {
				return err
			}
			if outcome {
				failed = n
			} else {
				done = n
			}
		}
		if done+failed == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO repair_progress (repair_id, slot, items_done, items_failed, update_time) VALUES (?, ?, ?, ?, ?)
			ON DUPLICATE KEY UPDATE items_done = items_done + ?, items_failed = items_failed + ?, update_time = GREATEST(update_time, ?)`,
			repairID, mrand.IntN(progressSlots), done, failed, now, done, failed, now); err != nil {
			return fmt.Errorf("counting %d items of repair %s: %w", done+failed, repairID, err)
		}
		return nil
	})
}

// progressSlots is how many counter rows a repair's progress is spread over.
const progressSlots = 16

// itemOutcome is an item's outcome as finishItems passes it to JSON_TABLE.
type itemOutcome struct {
	Seq            int    `json:"s"`
	Outcome        string `json:"o"`
	ShardID        string `json:"h"`
	AppliedVersion int64  `json:"v"`
	EventID        string `json:"e"`
	RowsRemoved    int64  `json:"r"`
	Attempts       int    `json:"a"`
	Message        string `json:"m"`
}

// finishItems records outcomes of PENDING items, a statement per itemBatch
// (an UPDATE joined with the outcomes, passed as one JSON document read by
// JSON_TABLE: one parameter to parse instead of a derived table of a SELECT
// per item), and returns how many were PENDING (the others were recorded
// before: a resumed repair).
func finishItems(ctx context.Context, tx *sql.Tx, repairID string, results []ItemResult, now time.Time) (int64, error) {
	var n int64
	for i := 0; i < len(results); i += itemBatch {
		chunk := results[i:min(i+itemBatch, len(results))]
		outs := make([]itemOutcome, len(chunk))
		for j, res := range chunk {
			outs[j] = itemOutcome{Seq: res.Seq, Outcome: res.Outcome, ShardID: res.ShardID, AppliedVersion: res.AppliedVersion,
				EventID: clip(res.EventID, 128), RowsRemoved: res.RowsRemoved, Attempts: res.Attempts, Message: clip(res.Message, maxNote)}
		}
		doc, err := json.Marshal(outs)
		if err != nil {
			return n, fmt.Errorf("encoding %d item outcomes of repair %s: %w", len(chunk), repairID, err)
		}
		r, err := tx.ExecContext(ctx, `UPDATE repair_item i JOIN JSON_TABLE(?, '$[*]' COLUMNS (
				seq INT PATH '$.s', outcome VARCHAR(32) PATH '$.o', shard_id VARCHAR(64) PATH '$.h', applied_version BIGINT PATH '$.v',
				event_id VARCHAR(128) PATH '$.e', rows_removed BIGINT PATH '$.r', attempts INT PATH '$.a', message VARCHAR(1024) PATH '$.m')) v
				ON v.seq = i.seq
			SET i.outcome = v.outcome, i.shard_id = COALESCE(NULLIF(v.shard_id, ''), i.shard_id), i.applied_version = v.applied_version,
				i.event_id = v.event_id, i.rows_removed = v.rows_removed, i.attempts = v.attempts, i.message = v.message, i.apply_time = ?
			WHERE i.repair_id = ? AND i.outcome = 'PENDING'`, string(doc), now, repairID)
		if err != nil {
			return n, fmt.Errorf("recording %d items of repair %s: %w", len(chunk), repairID, err)
		}
		k, err := r.RowsAffected()
		if err != nil {
			return n, err
		}
		n += k
	}
	return n, nil
}

// ApplyAllPending marks every PENDING item of a repair APPLIED (a REBUILD
// repair once its rebuild switched readers).
func (s *Store) ApplyAllPending(ctx context.Context, repairID, owner, message string) error {
	defer s.feed.Notify(RepairKey(repairID))
	now := s.now()
	return s.inTx(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, `UPDATE repair_item SET outcome = 'APPLIED', message = ?, apply_time = ? WHERE repair_id = ? AND outcome = 'PENDING'`,
			clip(message, maxNote), now, repairID)
		if err != nil {
			return fmt.Errorf("recording items of repair %s: %w", repairID, err)
		}
		n, err := r.RowsAffected()
		if err != nil {
			return err
		}
		r, err = tx.ExecContext(ctx, "UPDATE repair SET items_done = items_done + ?, update_time = ? WHERE repair_id = ? AND lease_owner = ?", n, now, repairID, owner)
		if err != nil {
			return fmt.Errorf("counting items of repair %s: %w", repairID, err)
		}
		if k, err := r.RowsAffected(); err != nil || k == 0 {
			if err == nil {
				err = errLeaseLost
			}
			return err
		}
		return nil
	})
}

// AwaitVerification moves an EXECUTING repair to AWAITING_VERIFICATION with
// its verification deadline.
func (s *Store) AwaitVerification(ctx context.Context, id, actor, note string, deadline time.Time) error {
	defer s.feed.Notify(RepairKey(id))
	return s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := s.changeState(ctx, tx, repairSubject, id, change{from: []string{StateExecuting}, to: StateAwaitingVerification,
			actor: actor, note: note, set: "verify_deadline = ?, message = ?", args: []any{deadline, clip(note, maxMessage)}}, ErrRepairNotFound)
		return err
	})
}

// SetVerification records the verification result of items (by seq).
func (s *Store) SetVerification(ctx context.Context, repairID string, seqs []int, result string) error {
	defer s.feed.Notify(RepairKey(repairID))
	now := s.now()
	for i := 0; i < len(seqs); i += itemBatch {
		chunk := seqs[i:min(i+itemBatch, len(seqs))]
		args := []any{result, now, repairID}
		for _, q := range chunk {
			args = append(args, q)
		}
		if _, err := s.db.ExecContext(ctx, "UPDATE repair_item SET verification = ?, verify_time = ? WHERE repair_id = ? AND seq IN ("+
			mysqldb.Placeholders(len(chunk))+")", args...); err != nil {
			return fmt.Errorf("recording verification of repair %s: %w", repairID, err)
		}
	}
	return nil
}

// MarkVerified ends a repair VERIFIED, from AWAITING_VERIFICATION or from a
// FAILED verification.
func (s *Store) MarkVerified(ctx context.Context, id, actor, note string) error {
	defer s.feed.Notify(RepairKey(id))
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var ver string
		var failed int64
		if err := tx.QueryRowContext(ctx, "SELECT verification, "+itemsFailedSQL+" FROM repair WHERE repair_id = ? FOR UPDATE", id).Scan(&ver, &failed); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return ErrRepairNotFound
			}
			return fmt.Errorf("reading repair %s: %w", id, err)
		}
		from := []string{StateAwaitingVerification}
		if ver == VerifyFailed && failed == 0 {
			from = append(from, StateFailed)
		}
		_, err := s.changeState(ctx, tx, repairSubject, id, change{from: from, to: StateVerified, actor: actor, note: note,
			set: "verification = 'PASSED', message = ?, lease_owner = NULL, lease_expire = NULL", args: []any{clip(note, maxMessage)}}, ErrRepairNotFound)
		return err
	})
}

// Fail ends a repair FAILED from one of the given states, with its
// verification result (VerifyFailed for a failed verification, else the
// current one is kept when verification is empty).
func (s *Store) Fail(ctx context.Context, id string, from []string, actor, message, verification string) error {
	defer s.feed.Notify(RepairKey(id))
	return s.inTx(ctx, func(tx *sql.Tx) error {
		set, args := "message = ?, lease_owner = NULL, lease_expire = NULL", []any{clip(message, maxMessage)}
		if verification != "" {
			set += ", verification = ?"
			args = append(args, verification)
		}
		_, err := s.changeState(ctx, tx, repairSubject, id, change{from: from, to: StateFailed, actor: actor, note: message, set: set, args: args}, ErrRepairNotFound)
		return err
	})
}

// SetMessage replaces a repair's message (progress notes).
func (s *Store) SetMessage(ctx context.Context, id, message string) error {
	defer s.feed.Notify(RepairKey(id))
	if _, err := s.db.ExecContext(ctx, "UPDATE repair SET message = ?, update_time = ? WHERE repair_id = ?", clip(message, maxMessage), s.now(), id); err != nil {
		return fmt.Errorf("updating repair %s: %w", id, err)
	}
	return nil
}

// Transitions returns the recorded transitions of a repair or rebuild, oldest first.
func (s *Store) Transitions(ctx context.Context, id string) ([]Transition, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT from_state, to_state, actor, note, create_time FROM repair_transition WHERE subject_id = ? ORDER BY id", id)
	if err != nil {
		return nil, fmt.Errorf("reading transitions of %s: %w", id, err)
	}
	defer rows.Close()
	var out []Transition
	for rows.Next() {
		var t Transition
		if err := rows.Scan(&t.From, &t.To, &t.Actor, &t.Note, &t.Time); err != nil {
			return nil, fmt.Errorf("reading transitions of %s: %w", id, err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// ---- leases ----

// runnable returns ids of table rows in states that an executor runs and
// whose lease is free, expired or owner's.
func (s *Store) runnable(ctx context.Context, sub subject, owner string, limit int) ([]string, error) {
	q := "SELECT repair_id FROM repair WHERE state IN ('EXECUTING', 'AWAITING_VERIFICATION')"
	if sub == rebuildSubject {
		q = "SELECT rebuild_id FROM rebuild WHERE state = 'EXECUTING' AND repair_id = ''"
	}
	rows, err := s.db.QueryContext(ctx, q+" AND (lease_owner IS NULL OR lease_owner = ? OR lease_expire < UTC_TIMESTAMP(3)) ORDER BY id LIMIT ?", owner, limit)
	if err != nil {
		return nil, fmt.Errorf("finding runnable %ss: %w", sub.kind, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("finding runnable %ss: %w", sub.kind, err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// claim takes the lease of id for owner when it is free, expired or
// owner's already, and reports whether owner holds it.
func (s *Store) claim(ctx context.Context, sub subject, id, owner string, lease time.Duration) (bool, error) {
	cond := "state IN ('EXECUTING', 'AWAITING_VERIFICATION')"
	if sub == rebuildSubject {
		cond = "state = 'EXECUTING'"
	}
	if _, err := s.db.ExecContext(ctx, "UPDATE "+sub.table+" SET lease_owner = ?, lease_expire = DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND) WHERE "+
		sub.idCol+" = ? AND "+cond+" AND (lease_owner IS NULL OR lease_owner = ? OR lease_expire < UTC_TIMESTAMP(3))",
		owner, lease.Microseconds(), id, owner); err != nil {
		return false, fmt.Errorf("claiming %s %s: %w", sub.kind, id, err)
	}
	var got sql.NullString
	err := s.db.QueryRowContext(ctx, "SELECT lease_owner FROM "+sub.table+" WHERE "+sub.idCol+" = ? AND "+cond, id).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("claiming %s %s: %w", sub.kind, id, err)
	}
	return got.Valid && got.String == owner, nil
}

// renew extends owner's leases of ids and returns, per id, whether owner
// still holds it in a runnable state.
func (s *Store) renew(ctx context.Context, sub subject, ids []string, owner string, lease time.Duration) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	args := []any{lease.Microseconds(), owner}
	for _, id := range ids {
		args = append(args, id)
	}
	if _, err := s.db.ExecContext(ctx, "UPDATE "+sub.table+" SET lease_expire = DATE_ADD(UTC_TIMESTAMP(3), INTERVAL ? MICROSECOND) WHERE lease_owner = ? AND "+
		sub.idCol+" IN ("+mysqldb.Placeholders(len(ids))+")", args...); err != nil {
		return nil, fmt.Errorf("renewing %s leases: %w", sub.kind, err)
	}
	cond := "state IN ('EXECUTING', 'AWAITING_VERIFICATION')"
	if sub == rebuildSubject {
		cond = "state = 'EXECUTING'"
	}
	rows, err := s.db.QueryContext(ctx, "SELECT "+sub.idCol+" FROM "+sub.table+" WHERE lease_owner = ? AND "+cond+" AND "+sub.idCol+" IN ("+mysqldb.Placeholders(len(ids))+")", args[1:]...)
	if err != nil {
		return nil, fmt.Errorf("renewing %s leases: %w", sub.kind, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("renewing %s leases: %w", sub.kind, err)
		}
		out[id] = true
	}
	return out, rows.Err()
}

// release gives up owner's lease of id.
func (s *Store) release(ctx context.Context, sub subject, id, owner string) error {
	if _, err := s.db.ExecContext(ctx, "UPDATE "+sub.table+" SET lease_owner = NULL, lease_expire = NULL WHERE "+sub.idCol+" = ? AND lease_owner = ?", id, owner); err != nil {
		return fmt.Errorf("releasing %s %s: %w", sub.kind, id, err)
	}
	return nil
}

// ---- signals ----

// Counts returns the number of repairs (or rebuilds) per state.
func (s *Store) Counts(ctx context.Context, rebuilds bool) (map[string]int64, error) {
	table := "repair"
	if rebuilds {
		table = "rebuild"
	}
	rows, err := s.db.QueryContext(ctx, "SELECT state, COUNT(*) FROM "+table+" GROUP BY state")
	if err != nil {
		return nil, fmt.Errorf("counting %ss: %w", table, err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, fmt.Errorf("counting %ss: %w", table, err)
		}
		out[st] = n
	}
	return out, rows.Err()
}

// OldestInState returns when the repair longest in state entered it (zero
// when none is).
func (s *Store) OldestInState(ctx context.Context, state string) (time.Time, error) {
	var t sql.NullTime
	if err := s.db.QueryRowContext(ctx, "SELECT MIN(state_time) FROM repair WHERE state = ?", state).Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("reading oldest %s repair: %w", state, err)
	}
	return timeOf(t), nil
}

// ---- rebuilds ----

const rebuildColumns = `rebuild_id, request_id, request_hash, repair_id, detect_id, project_id, school_id, epoch, state, phase, verification,
	reason, created_by, approved_by, approve_reason, rows_written, rows_total, message, create_time, update_time, state_time, approve_time, end_time`

func scanRebuild(sc interface{ Scan(...any) error }, extra ...any) (Rebuild, error) {
	var r Rebuild
	var approved, ended sql.NullTime
	err := sc.Scan(append(extra, &r.ID, &r.RequestID, &r.RequestHash, &r.RepairID, &r.Scope.DetectID, &r.Scope.ProjectID, &r.Scope.SchoolID,
		&r.Epoch, &r.State, &r.Phase, &r.Verification, &r.Reason, &r.CreatedBy, &r.ApprovedBy, &r.ApproveReason, &r.RowsWritten,
		&r.RowsTotal, &r.Message, &r.Created, &r.Updated, &r.StateTime, &approved, &ended)...)
	r.Approved, r.Ended = timeOf(approved), timeOf(ended)
	return r, err
}

func (s *Store) insertRebuild(ctx context.Context, tx *sql.Tx, rb Rebuild, now time.Time, note string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO rebuild (rebuild_id, request_id, request_hash, repair_id, detect_id, project_id, school_id, epoch,
		state, verification, reason, created_by, active_detect_id, create_time, update_time, state_time)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'AWAITING_APPROVAL', 'PENDING', ?, ?, ?, ?, ?, ?)`, rb.ID, rb.RequestID, rb.RequestHash, rb.RepairID,
		rb.Scope.DetectID, rb.Scope.ProjectID, rb.Scope.SchoolID, rb.Epoch, clip(rb.Reason, maxReason), clip(rb.CreatedBy, 128), rb.Scope.DetectID, now, now, now)
	switch {
	case isDuplicate(err, "uk_active_campaign"):
		return apierr.FailedPrecondition.Errorf("campaign %d already has an active rebuild", rb.Scope.DetectID)
	case isDuplicate(err, "uk_request_id"):
		return errDuplicateRequest
	case err != nil:
		return fmt.Errorf("storing rebuild: %w", err)
	}
	return s.addTransition(ctx, tx, rebuildSubject, rb.ID, "", StateAwaitingApproval, rb.CreatedBy, note, now)
}

// CreateRebuild stores a rebuild requested directly, AWAITING_APPROVAL,
// reserving its campaign (one active rebuild per campaign).
func (s *Store) CreateRebuild(ctx context.Context, rb Rebuild) (Rebuild, error) {
	now := s.now()
	rb.ID, rb.State, rb.Verification, rb.Created, rb.Updated, rb.StateTime = newID(), StateAwaitingApproval, VerifyPending, now, now, now
	rb.Reason, rb.CreatedBy = clip(rb.Reason, maxReason), clip(rb.CreatedBy, 128)
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		return s.insertRebuild(ctx, tx, rb, now, "requested; awaiting an admin's approval")
	})
	if err != nil {
		return Rebuild{}, err
	}
	return rb, nil
}

// GetRebuild returns one rebuild.
func (s *Store) GetRebuild(ctx context.Context, id string) (Rebuild, error) {
	r, err := scanRebuild(s.db.QueryRowContext(ctx, "SELECT "+rebuildColumns+" FROM rebuild WHERE rebuild_id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Rebuild{}, ErrRebuildNotFound
	}
	if err != nil {
		return Rebuild{}, fmt.Errorf("reading rebuild %s: %w", id, err)
	}
	return r, nil
}

// RebuildByRequest returns the rebuild a request id created, if any.
func (s *Store) RebuildByRequest(ctx context.Context, requestID string) (Rebuild, bool, error) {
	r, err := scanRebuild(s.db.QueryRowContext(ctx, "SELECT "+rebuildColumns+" FROM rebuild WHERE request_id = ?", requestID))
	if errors.Is(err, sql.ErrNoRows) {
		return Rebuild{}, false, nil
	}
	if err != nil {
		return Rebuild{}, false, fmt.Errorf("reading rebuild of request %s: %w", requestID, err)
	}
	return r, true, nil
}

// ListRebuilds returns rebuilds newest first, optionally of one campaign and
// state, older than internal id before, with their internal ids.
func (s *Store) ListRebuilds(ctx context.Context, detectID int64, state string, before int64, limit int) ([]Rebuild, []int64, error) {
	q := "SELECT id, " + rebuildColumns + " FROM rebuild WHERE 1=1"
	var args []any
	if detectID != 0 {
		q += " AND detect_id = ?"
		args = append(args, detectID)
	}
	if state != "" {
		q += " AND state = ?"
		args = append(args, state)
	}
	if before > 0 {
		q += " AND id < ?"
		args = append(args, before)
	}
	q += " ORDER BY id DESC LIMIT ?"
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("listing rebuilds: %w", err)
	}
	defer rows.Close()
	var out []Rebuild
	var ids []int64
	for rows.Next() {
		var id int64
		r, err := scanRebuild(rows, &id)
		if err != nil {
			return nil, nil, fmt.Errorf("listing rebuilds: %w", err)
		}
		out, ids = append(out, r), append(ids, id)
	}
	return out, ids, rows.Err()
}

// ApproveRebuild moves a rebuild from AWAITING_APPROVAL to EXECUTING.
func (s *Store) ApproveRebuild(ctx context.Context, id, by, reason string) error {
	defer s.feed.Notify(RebuildKey(id))
	now := s.now()
	return s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := s.changeState(ctx, tx, rebuildSubject, id, change{from: []string{StateAwaitingApproval}, to: StateExecuting, actor: by,
			note: "approved: " + reason, set: "approved_by = ?, approve_reason = ?, approve_time = ?",
			args: []any{clip(by, 128), clip(reason, maxReason), now}}, ErrRebuildNotFound)
		return err
	})
}

// CancelRebuild ends a rebuild before it switches readers.
func (s *Store) CancelRebuild(ctx context.Context, id, by, reason string) error {
	defer s.feed.Notify(RebuildKey(id))
	return s.inTx(ctx, func(tx *sql.Tx) error {
		var state string
		if err := tx.QueryRowContext(ctx, "SELECT state FROM rebuild WHERE rebuild_id = ? FOR UPDATE", id).Scan(&state); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return ErrRebuildNotFound
			}
			return fmt.Errorf("reading rebuild %s: %w", id, err)
		}
		if terminal(state) {
			return apierr.FailedPrecondition.Errorf("rebuild %s is %s", id, state)
		}
		return s.cancelRebuild(ctx, tx, id, by, reason)
	})
}

// RebuildProgress records a running rebuild's phase and rows; a change of
// the reported phase (the rebuilder's own name for it) is recorded as a
// transition.
func (s *Store) RebuildProgress(ctx context.Context, id, phase, reported string, done, total int64, phaseChanged bool) error {
	defer s.feed.Notify(RebuildKey(id))
	now := s.now()
	return s.inTx(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, "UPDATE rebuild SET phase = ?, rows_written = ?, rows_total = ?, update_time = ? WHERE rebuild_id = ? AND state = 'EXECUTING'",
			phase, done, total, now, id)
		if err != nil {
			return fmt.Errorf("recording progress of rebuild %s: %w", id, err)
		}
		if n, err := r.RowsAffected(); err != nil || n == 0 || !phaseChanged {
			return err
		}
		note := "phase " + phase
		if reported != phase {
			note += " (rebuilder: " + reported + ")"
		}
		return s.addTransition(ctx, tx, rebuildSubject, id, StateExecuting, StateExecuting, "executor", note, now)
	})
}

// FinishRebuild ends an EXECUTING rebuild in state (VERIFIED or FAILED).
func (s *Store) FinishRebuild(ctx context.Context, id, state, verification, phase string, rows int64, message string) error {
	defer s.feed.Notify(RebuildKey(id))
	return s.inTx(ctx, func(tx *sql.Tx) error {
		set, args := "verification = ?, message = ?, rows_written = GREATEST(rows_written, ?)", []any{verification, clip(message, maxMessage), rows}
		if phase != "" {
			set += ", phase = ?"
			args = append(args, phase)
		}
		_, err := s.changeState(ctx, tx, rebuildSubject, id, change{from: []string{StateExecuting}, to: state, actor: "executor", note: message,
			set: set, args: args}, ErrRebuildNotFound)
		return err
	})
}

// MaxRebuildEpoch returns the highest epoch of the campaign's rebuilds that
// wrote rows (EXECUTING or VERIFIED), 0 when none did.
func (s *Store) MaxRebuildEpoch(ctx context.Context, detectID int64) (int, error) {
	var e sql.NullInt64
	if err := s.db.QueryRowContext(ctx, "SELECT MAX(epoch) FROM rebuild WHERE detect_id = ? AND state IN ('EXECUTING', 'VERIFIED')", detectID).Scan(&e); err != nil {
		return 0, fmt.Errorf("reading rebuild epochs of campaign %d: %w", detectID, err)
	}
	return int(e.Int64), nil
}

// ResolveEarlier marks resolved the unresolved discrepancies of the records
// found before a clean comparison of them started (at before): whichever run
// found them, a CONTENT comparison of the key since then saw it right. It
// returns how many changed; it is idempotent.
func (s *Store) ResolveEarlier(ctx context.Context, dataIDs []int64, before time.Time) (int64, error) {
	var n int64
	for i := 0; i < len(dataIDs); i += itemBatch {
		chunk := dataIDs[i:min(i+itemBatch, len(dataIDs))]
		args := []any{before.UTC()}
		for _, id := range chunk {
			args = append(args, id)
		}
		res, err := s.db.ExecContext(ctx, "UPDATE discrepancy SET resolved = 1 WHERE resolved = 0 AND create_time < ? AND data_id IN ("+
			mysqldb.Placeholders(len(chunk))+")", args...)
		if err != nil {
			return n, fmt.Errorf("resolving earlier discrepancies of %d records: %w", len(chunk), err)
		}
		c, err := res.RowsAffected()
		if err != nil {
			return n, fmt.Errorf("resolving earlier discrepancies of %d records: %w", len(chunk), err)
		}
		n += c
	}
	return n, nil
}

// UnresolvedRecords counts, per discrepancy class, the records with an
// unresolved discrepancy in any run of any campaign (a record found by two
// runs counts once).
func (s *Store) UnresolvedRecords(ctx context.Context) (map[reconcile.Class]int64, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT class, COUNT(DISTINCT data_id) FROM discrepancy WHERE resolved = 0 GROUP BY class")
	if err != nil {
		return nil, fmt.Errorf("counting unresolved discrepancies: %w", err)
	}
	defer rows.Close()
	out := map[reconcile.Class]int64{}
	for rows.Next() {
		var c reconcile.Class
		var n int64
		if err := rows.Scan(&c, &n); err != nil {
			return nil, fmt.Errorf("counting unresolved discrepancies: %w", err)
		}
		out[c] = n
	}
	return out, rows.Err()
}
