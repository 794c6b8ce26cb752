// Package resultstore is the write path on one shard: every command commits,
// in ONE local transaction, the business row with its new version, the
// campaign revision, the idempotency record and the outbox row carrying the
// full-state event of exactly that version. Either all of it commits or none.
//
// Versions advance under a row lock (SELECT ... FOR UPDATE) checked against
// the caller's expected version; a delivery retry never touches them.
//
// A Store enforces data_id uniqueness only within its shard (the primary key
// of fitness_result), and request ids are scoped to it: callers must route
// every command and read of a data_id to the one shard that owns it
// (shard.Map.Owner), never by a field such as the school. Commands of an
// existing record carry its school, which must match the stored one.
package resultstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/timestamppb"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
)

// SchemaVersion is the version of FitnessResultChanged the write path emits.
const SchemaVersion = 1

// Errors returned by the store; the RPC edge maps them to status codes. A
// request_id reused for a different request is apierr.ErrRequestReused.
var (
	ErrNotFound      = apierr.NewReason(apierr.NotFound, apierr.ResultNotFound, "result not found")
	ErrAlreadyExists = apierr.NewReason(apierr.AlreadyExists, apierr.ResultExists, "result already exists")
	ErrDeleted       = apierr.NewReason(apierr.FailedPrecondition, apierr.ResultDeleted, "result is deleted")
)

// VersionConflictError says the caller's expected version is not current:
// an apierr.Aborted whose status carries a fitness.v1.VersionConflict.
type VersionConflictError struct {
	DataID, Expected, Current int64
}

// Is makes errors.Is(err, apierr.Aborted) true for a version conflict.
func (e *VersionConflictError) Is(target error) bool { return target == apierr.Aborted }

// ErrorReason implements apierr.Reasoned: VERSION_CONFLICT, told apart from
// contention (also ABORTED) by it.
func (e *VersionConflictError) ErrorReason() (apierr.Reason, map[string]string) {
	return apierr.VersionConflict, map[string]string{"current_version": strconv.FormatInt(e.Current, 10)}
}

// StatusDetails implements apierr.Detailed.
func (e *VersionConflictError) StatusDetails() []protoadapt.MessageV1 {
	return []protoadapt.MessageV1{&fitnessv1.VersionConflict{DataId: e.DataID, ExpectedVersion: e.Expected, CurrentVersion: e.Current}}
}

func (e *VersionConflictError) Error() string {
	return fmt.Sprintf("result %d is at version %d, not the expected %d", e.DataID, e.Current, e.Expected)
}

// Options adjust a Store. The zero value is the production behaviour.
type Options struct {
	// SkipOutbox leaves out the outbox row. Only for measuring the outbox's
	// cost in benchmarks: a store with it set breaks the delivery promise.
	SkipOutbox bool
	// Now returns the commit timestamp (default time.Now).
	Now func() time.Time
}

// Store runs commands against one shard: the owner of every data_id it is
// given (see the package comment).
type Store struct {
	shardID string
	db      *sql.DB
	opts    Options
	known   *identityCache
}

// New returns a Store for the shard shardID reached through db.
func New(shardID string, db *sql.DB, opts Options) *Store {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{shardID: shardID, db: db, opts: opts, known: newIdentityCache(1 << 20)}
}

// ShardID names the store's shard.
func (s *Store) ShardID() string { return s.shardID }

// Outcome is the committed result of a command.
type Outcome struct {
	Result  *fitnessv1.FitnessResult
	EventID string
	// Replayed is true when the outcome was returned for a retried request_id.
	Replayed bool
}

// RecordCommand creates a result at version 1. Fields must be validated and
// canonical (see canonical.CheckResult).
type RecordCommand struct {
	RequestID                                     string
	DataID, DetectID, UserID, ProjectID, SchoolID int64
	Grade                                         int32
	Result, Unit                                  string
}

// CorrectCommand changes a result's value. Result and Unit must be validated
// against the record's project by Check before use, which Correct does.
type CorrectCommand struct {
	RequestID                         string
	SchoolID, DataID, ExpectedVersion int64
	Result, Unit, Reason              string
}

// DeleteCommand writes a tombstone version.
type DeleteCommand struct {
	RequestID                         string
	SchoolID, DataID, ExpectedVersion int64
	Reason                            string
}

func hashOf(parts ...any) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%v\x1f", p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (c RecordCommand) hash() string {
	return hashOf("record", c.DataID, c.DetectID, c.UserID, c.ProjectID, c.SchoolID, c.Grade, c.Result, c.Unit)
}

func (c CorrectCommand) hash() string {
	return hashOf("correct", c.SchoolID, c.DataID, c.ExpectedVersion, c.Result, c.Unit, c.Reason)
}

func (c DeleteCommand) hash() string {
	return hashOf("delete", c.SchoolID, c.DataID, c.ExpectedVersion, c.Reason)
}

const selectColumns = `data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, update_time`

type scanner interface{ Scan(dest ...any) error }

func (s *Store) scanResult(sc scanner) (*fitnessv1.FitnessResult, error) {
	var r fitnessv1.FitnessResult
	var result string
	var grade int32
	var updated time.Time
	if err := sc.Scan(&r.DataId, &r.DetectId, &r.UserId, &r.ProjectId, &r.SchoolId, &grade, &result,
		&r.Unit, &r.Version, &r.IsDeleted, &updated); err != nil {
		return nil, err
	}
	c, err := canonical.Decimal(result)
	if err != nil {
		return nil, fmt.Errorf("stored result %q of %d: %w", result, r.DataId, err)
	}
	r.Result, r.Grade, r.ShardId = c, grade, s.shardID
	r.UpdateTime = timestamppb.New(updated)
	s.known.put(&r)
	return &r, nil
}

// Event builds the full-state event of r at its current version.
func Event(r *fitnessv1.FitnessResult) *fitnessv1.FitnessResultChanged {
	return &fitnessv1.FitnessResultChanged{
		EventId:          canonical.EventID(r.GetDataId(), r.GetVersion()),
		DataId:           r.GetDataId(),
		DetectId:         r.GetDetectId(),
		UserId:           r.GetUserId(),
		ProjectId:        r.GetProjectId(),
		SchoolId:         r.GetSchoolId(),
		Grade:            r.GetGrade(),
		Version:          r.GetVersion(),
		Result:           r.GetResult(),
		Unit:             r.GetUnit(),
		IsDeleted:        r.GetIsDeleted(),
		SchemaVersion:    SchemaVersion,
		SourceCommitTime: r.GetUpdateTime(),
		ShardId:          r.GetShardId(),
	}
}

func (s *Store) now() time.Time { return s.opts.Now().UTC().Truncate(time.Millisecond) }

// Record creates a result at version 1. A data_id that already exists on the
// shard, under any school, is ErrAlreadyExists and nothing is written. The
// result and unit are stored and published in their canonical form (as
// Correct does), so the event of version 1 is exactly what a read of the
// row, and a replay of it, builds ("1.80" is stored and published as "1.8").
func (s *Store) Record(ctx context.Context, c RecordCommand) (Outcome, error) {
	hash := c.hash()
	res, unit, err := canonical.CheckResult(c.ProjectID, c.Result, c.Unit)
	if err != nil {
		return Outcome{}, err
	}
	c.Result, c.Unit = res, unit
	now := s.now()
	r := &fitnessv1.FitnessResult{
		DataId: c.DataID, DetectId: c.DetectID, UserId: c.UserID, ProjectId: c.ProjectID, SchoolId: c.SchoolID,
		Grade: c.Grade, Version: 1, Result: c.Result, Unit: c.Unit, ShardId: s.shardID, UpdateTime: timestamppb.New(now),
	}
	// A duplicate key here is the record itself (or, handled by change, the
	// request id). The record may be another school's: say only that the id
	// is taken, nothing about its owner.
	taken := fmt.Errorf("data_id %d is already taken (a data_id is recorded once, whatever its school): %w", c.DataID, ErrAlreadyExists)
	out, err := s.change(ctx, c.RequestID, "record", hash, r, taken, func(_ context.Context, _ *sql.Conn, b *batch) error {
		b.add("START TRANSACTION")
		b.add(`INSERT INTO fitness_result
			(data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, 0, ?, ?)`,
			c.DataID, c.DetectID, c.UserID, c.ProjectID, c.SchoolID, c.Grade, c.Result, c.Unit, now, now)
		return nil
	})
	if err == nil {
		// Only a committed (or replayed) outcome says what the record is; a
		// refused request's fields must never reach the identity cache.
		s.known.put(out.Result)
	}
	return out, err
}

// Correct sets a new result value at version expected+1. When the record's
// identity (its fields that never change) is known from an earlier read, the
// whole correction is one round trip (see correctFast); otherwise, or when
// that finds the version moved, it takes the locking path. A record of
// another school than c.SchoolID is ErrNotFound and is left unchanged.
func (s *Store) Correct(ctx context.Context, c CorrectCommand) (Outcome, error) {
	if id, ok := s.known.get(c.DataID); ok && id.SchoolId == c.SchoolID {
		out, done, err := s.correctFast(ctx, c, id)
		if done {
			return out, err
		}
	}
	return s.update(ctx, c.RequestID, "correct", c.hash(), c.SchoolID, c.DataID, c.ExpectedVersion,
		func(r *fitnessv1.FitnessResult) error {
			res, unit, err := canonical.CheckResult(r.GetProjectId(), c.Result, c.Unit)
			if err != nil {
				return err
			}
			r.Result, r.Unit = res, unit
			return nil
		})
}

// Delete writes a tombstone at version expected+1; the row is kept. A record
// of another school than c.SchoolID is ErrNotFound and is left unchanged.
func (s *Store) Delete(ctx context.Context, c DeleteCommand) (Outcome, error) {
	return s.update(ctx, c.RequestID, "delete", c.hash(), c.SchoolID, c.DataID, c.ExpectedVersion,
		func(r *fitnessv1.FitnessResult) error {
			r.IsDeleted = true
			return nil
		})
}

// update locks the row, checks the expected version, applies mutate and
// commits the new version.
func (s *Store) update(ctx context.Context, requestID, method, hash string, schoolID, dataID, expected int64,
	mutate func(*fitnessv1.FitnessResult) error) (Outcome, error) {
	r := &fitnessv1.FitnessResult{}
	return s.change(ctx, requestID, method, hash, r, nil, func(ctx context.Context, conn *sql.Conn, b *batch) error {
		// START TRANSACTION and the row lock travel in one round trip.
		cur, err := s.lockRow(ctx, conn, dataID)
		if err == nil && cur.GetSchoolId() != schoolID {
			err = ErrNotFound
		}
		if err != nil {
			return err
		}
		if cur.GetVersion() != expected {
			return &VersionConflictError{DataID: dataID, Expected: expected, Current: cur.GetVersion()}
		}
		if cur.GetIsDeleted() {
			return ErrDeleted
		}
		if err := mutate(cur); err != nil {
			return err
		}
		now := s.now()
		cur.Version = expected + 1
		cur.UpdateTime = timestamppb.New(now)
		b.add("UPDATE fitness_result SET result = ?, unit = ?, is_deleted = ?, version = ?, update_time = ? WHERE data_id = ?",
			cur.GetResult(), cur.GetUnit(), cur.GetIsDeleted(), cur.GetVersion(), now, dataID)
		proto.Reset(r)
		proto.Merge(r, cur)
		return nil
	})
}

// batch collects statements sent to the server in one round trip (the pool
// is opened with multi-statement support, see PoolOptions).
type batch struct {
	stmts []string
	args  []any
}

func (b *batch) add(q string, args ...any) {
	b.stmts = append(b.stmts, q)
	b.args = append(b.args, args...)
}

// PoolOptions are the connection settings a Store's pool must be opened with:
// READ COMMITTED sessions (row locks only, no gap locks) and multi-statement
// batches.
func PoolOptions(maxConns int) mysqldb.Options {
	return mysqldb.Options{MaxOpen: maxConns, ReadCommitted: true, MultiStatements: true}
}

// lockRow starts a transaction on conn and reads dataID under a row lock.
func (s *Store) lockRow(ctx context.Context, conn *sql.Conn, dataID int64) (*fitnessv1.FitnessResult, error) {
	rows, err := conn.QueryContext(ctx, "START TRANSACTION; SELECT "+selectColumns+" FROM fitness_result WHERE data_id = ? FOR UPDATE", dataID)
	if err != nil {
		return nil, fmt.Errorf("locking result %d: %w", dataID, err)
	}
	defer rows.Close()
	var cur *fitnessv1.FitnessResult
	for {
		for rows.Next() {
			if cur, err = s.scanResult(rows); err != nil {
				return nil, fmt.Errorf("locking result %d: %w", dataID, err)
			}
		}
		if !rows.NextResultSet() {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("locking result %d: %w", dataID, err)
	}
	if cur == nil {
		return nil, ErrNotFound
	}
	return cur, nil
}

// change runs one command as a transaction on a dedicated connection, in as
// few round trips as the server allows: start opens the transaction (alone,
// or with the row lock it needs) and puts the command's own write in the
// batch; the common tail — campaign revision, outbox row, idempotency record
// — and COMMIT follow in the same batch. A failing statement stops the batch
// before COMMIT and the transaction is rolled back, so all of it commits or
// none. When start fails or a key is duplicated and requestID was seen
// before, the stored outcome of that earlier request is returned instead;
// otherwise a duplicate key is reported as dupErr (when set).
func (s *Store) change(ctx context.Context, requestID, method, hash string, r *fitnessv1.FitnessResult, dupErr error,
	start func(ctx context.Context, conn *sql.Conn, b *batch) error) (Outcome, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return Outcome{}, fmt.Errorf("connecting to %s: %w", s.shardID, err)
	}
	defer conn.Close()

	var b batch
	if err := start(ctx, conn, &b); err != nil {
		s.rollback(ctx, conn)
		return s.replayOr(ctx, requestID, hash, err)
	}
	now := r.GetUpdateTime().AsTime()
	// The campaign revision and the bucket aggregates (campaign_bucket) are
	// advanced by the shard's triggers in this same transaction.
	ev := Event(r)
	if !s.opts.SkipOutbox {
		q, args, err := outbox.Insert(ev, now)
		if err != nil {
			s.rollback(ctx, conn)
			return Outcome{}, err
		}
		b.add(q, args...)
	}
	if requestID != "" {
		resp, err := proto.MarshalOptions{Deterministic: true}.Marshal(r)
		if err != nil {
			s.rollback(ctx, conn)
			return Outcome{}, fmt.Errorf("encoding outcome: %w", err)
		}
		b.add(`INSERT INTO request_log (request_id, method, request_hash, data_id, version, response, create_time)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, requestID, method, hash, r.GetDataId(), r.GetVersion(), resp, now)
	}
	b.add("COMMIT")
	if _, err := conn.ExecContext(ctx, strings.Join(b.stmts, ";\n"), b.args...); err != nil {
		s.rollback(ctx, conn)
		if mysqldb.IsErrorNumber(err, mysqldb.ErDupEntry) {
			cause := dupErr
			if cause == nil {
				cause = fmt.Errorf("writing change of result %d on %s: %w", r.GetDataId(), s.shardID, err)
			}
			return s.replayOr(ctx, requestID, hash, cause)
		}
		return Outcome{}, fmt.Errorf("writing change of result %d on %s: %w", r.GetDataId(), s.shardID, err)
	}
	return Outcome{Result: r, EventID: ev.GetEventId()}, nil
}

// rollback ends any open transaction on conn. If that fails, the connection
// is discarded rather than returned to the pool with a transaction open.
func (s *Store) rollback(ctx context.Context, conn *sql.Conn) {
	if _, err := conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
}

// replayOr returns the stored outcome of requestID when it exists with the
// same hash, apierr.ErrRequestReused when it exists with another, and cause
// otherwise. Call it after the failed transaction was rolled back.
func (s *Store) replayOr(ctx context.Context, requestID, hash string, cause error) (Outcome, error) {
	if requestID == "" {
		return Outcome{}, cause
	}
	var storedHash string
	var resp []byte
	err := s.db.QueryRowContext(ctx, "SELECT request_hash, response FROM request_log WHERE request_id = ?", requestID).
		Scan(&storedHash, &resp)
	if errors.Is(err, sql.ErrNoRows) {
		return Outcome{}, cause
	}
	if err != nil {
		return Outcome{}, fmt.Errorf("looking up request %s: %w", requestID, err)
	}
	if storedHash != hash {
		return Outcome{}, apierr.ErrRequestReused
	}
	r := &fitnessv1.FitnessResult{}
	if err := proto.Unmarshal(resp, r); err != nil {
		return Outcome{}, fmt.Errorf("decoding stored outcome of request %s: %w", requestID, err)
	}
	return Outcome{Result: r, EventID: canonical.EventID(r.GetDataId(), r.GetVersion()), Replayed: true}, nil
}

// Get returns the current state of dataID, tombstones included. A record of
// another school is ErrNotFound.
func (s *Store) Get(ctx context.Context, schoolID, dataID int64) (*fitnessv1.FitnessResult, error) {
	r, err := s.scanResult(s.db.QueryRowContext(ctx, "SELECT "+selectColumns+" FROM fitness_result WHERE data_id = ?", dataID))
	if errors.Is(err, sql.ErrNoRows) || (err == nil && r.GetSchoolId() != schoolID) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("reading result %d on %s: %w", dataID, s.shardID, err)
	}
	return r, nil
}

// ListQuery selects results of a campaign after a data_id.
type ListQuery struct {
	DetectID, SchoolID, ProjectID int64 // SchoolID, ProjectID: 0 = any
	ShowDeleted                   bool
	AfterDataID                   int64
	Limit                         int
}

// List returns up to q.Limit results ordered by data_id.
func (s *Store) List(ctx context.Context, q ListQuery) ([]*fitnessv1.FitnessResult, error) {
	var where []string
	args := []any{q.DetectID, q.AfterDataID}
	where = append(where, "detect_id = ?", "data_id > ?")
	if q.SchoolID != 0 {
		where = append(where, "school_id = ?")
		args = append(args, q.SchoolID)
	}
	if q.ProjectID != 0 {
		where = append(where, "project_id = ?")
		args = append(args, q.ProjectID)
	}
	if !q.ShowDeleted {
		where = append(where, "is_deleted = 0")
	}
	args = append(args, q.Limit)
	rows, err := s.db.QueryContext(ctx, "SELECT "+selectColumns+" FROM fitness_result WHERE "+
		strings.Join(where, " AND ")+" ORDER BY data_id LIMIT ?", args...)
	if err != nil {
		return nil, fmt.Errorf("listing campaign %d on %s: %w", q.DetectID, s.shardID, err)
	}
	defer rows.Close()
	var out []*fitnessv1.FitnessResult
	for rows.Next() {
		r, err := s.scanResult(rows)
		if err != nil {
			return nil, fmt.Errorf("listing campaign %d on %s: %w", q.DetectID, s.shardID, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing campaign %d on %s: %w", q.DetectID, s.shardID, err)
	}
	return out, nil
}

// CampaignRevision returns the revision of a campaign on this shard (the sum
// of its bucket revisions, advanced by triggers with every change; 0 when it
// never changed).
func (s *Store) CampaignRevision(ctx context.Context, detectID int64) (int64, error) {
	var rev int64
	if err := s.db.QueryRowContext(ctx, "SELECT COALESCE(SUM(revision), 0) FROM campaign_bucket WHERE detect_id = ?", detectID).Scan(&rev); err != nil {
		return 0, fmt.Errorf("reading revision of campaign %d on %s: %w", detectID, s.shardID, err)
	}
	return rev, nil
}
