package reconcile

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/platform/changefeed"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
)

// Run states (values of fitness.v1.RunState).
const (
	StatePending   = "PENDING"
	StateQueued    = "QUEUED" // waiting for a free run slot
	StateRunning   = "RUNNING"
	StateWaiting   = "WAITING_FOR_CATCH_UP"
	StateSucceeded = "SUCCEEDED"
	StateFailed    = "FAILED"
	// StateBoundaryNotReached ends a run whose projection did not reach the
	// shards' positions at scan start within the catch-up wait: what it
	// lists is confirmed by evidence, the records still in flight are
	// counted per shard, and Shards names the shards that were behind.
	StateBoundaryNotReached = "BOUNDARY_NOT_REACHED"
	maxMessageBytes         = 2000
	maxShardReportBytes     = 4000
)

// ShardReport is one shard's part of a run: its boundary, the projection's
// applied position when last checked, and its records in flight.
type ShardReport struct {
	ShardID string `json:"shard_id"`
	// Boundary is the commit time of the shard's newest outbox event when the
	// scan started (zero: none).
	Boundary time.Time `json:"boundary,omitzero"`
	// Applied is the projection's applied position of the shard when last
	// checked (zero: nothing applied).
	Applied time.Time `json:"applied,omitzero"`
	// Behind is set when the projection had not reached Boundary.
	Behind bool `json:"behind,omitempty"`
	// InFlight counts the records of the scope whose newest version was
	// still unsent or unapplied on this shard at the re-check.
	InFlight int64 `json:"in_flight,omitempty"`
}

// Run is a stored reconciliation run.
type Run struct {
	ID                                      string
	Scope                                   Scope
	Depth                                   Depth
	SampleRate                              float64
	State                                   string
	BucketsDone, BucketsTotal, RowsCompared int64
	Discrepancies                           int64
	// InFlight counts the records not reported because their newest version
	// was still in flight (per shard in Shards).
	InFlight                  int64
	Shards                    []ShardReport
	BoundaryRetries           int
	Message, Error, CreatedBy string
	Created                   time.Time
	Ended                     time.Time // zero until terminal
	// Window, when set, narrows the run to a window of buckets, each drilled
	// into record by record (the scheduler's rotating sample). Not stored:
	// the run's message names it.
	Window *BucketWindow
	// Resolved counts the earlier discrepancies the run resolved by finding
	// their records consistent (in the message once stored).
	Resolved int64
}

// BucketWindow is the buckets From, From+1, ..., From+Count-1 (mod the
// run's bucket count).
type BucketWindow struct{ From, Count int }

// Contains reports whether bucket b of n lies in the window.
func (w BucketWindow) Contains(b, n int) bool {
	if n <= 0 || w.Count >= n {
		return true
	}
	return ((b-w.From)%n+n)%n < w.Count
}

// Terminal reports whether the run has ended.
func (r Run) Terminal() bool {
	return r.State == StateSucceeded || r.State == StateFailed || r.State == StateBoundaryNotReached
}

// BehindShards names the shards the projection had not caught up with.
func (r Run) BehindShards() []string {
	var out []string
	for _, s := range r.Shards {
		if s.Behind {
			out = append(out, s.ShardID)
		}
	}
	return out
}

// ErrRunNotFound is returned for an unknown run id (apierr.NotFound).
var ErrRunNotFound = apierr.NewReason(apierr.NotFound, apierr.RunNotFound, "reconciliation run not found")

// RunStore keeps runs and discrepancies in the control database.
type RunStore struct {
	db   *sql.DB
	feed *changefeed.Feed
}

// NewRunStore returns a store over the control database.
func NewRunStore(db *sql.DB) *RunStore { return &RunStore{db: db, feed: changefeed.New()} }

// Changes is notified (key RunKey(id)) after every Update of a run through
// this store, whether it succeeded or not: a watcher in this process reads
// the run again at once (pkg/platform/changefeed). Updates of other
// processes are not seen here.
func (s *RunStore) Changes() *changefeed.Feed { return s.feed }

// RunKey is the Changes key of run id.
func RunKey(id string) string { return "run:" + id }

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func clip(s string) string {
	if len(s) > maxMessageBytes {
		return s[:maxMessageBytes]
	}
	return s
}

// Create stores a new PENDING run.
func (s *RunStore) Create(ctx context.Context, sc Scope, depth Depth, sample float64, by string) (Run, error) {
	r, _, err := s.CreateWithID(ctx, newID(), sc, depth, sample, by)
	return r, err
}

// CreateWithID stores a new PENDING run with id (32 hex characters), or,
// when a run with that id exists (an earlier attempt of the same idempotent
// call created it), returns that run with existed set.
func (s *RunStore) CreateWithID(ctx context.Context, id string, sc Scope, depth Depth, sample float64, by string) (r Run, existed bool, err error) {
	r = Run{ID: id, Scope: sc, Depth: depth, SampleRate: sample, State: StatePending, CreatedBy: by, Created: time.Now().UTC().Truncate(time.Millisecond)}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO reconcile_run (run_id, detect_id, project_id, school_id, depth, sample_rate, state, created_by, create_time)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.ID, sc.DetectID, sc.ProjectID, sc.SchoolID, depth, sample, r.State, by, r.Created); err != nil {
		if mysqldb.IsErrorNumber(err, 1062) {
			r, err := s.Get(ctx, id)
			return r, err == nil, err
		}
		return Run{}, false, fmt.Errorf("creating run: %w", err)
	}
	return r, false, nil
}

const runColumns = `run_id, detect_id, project_id, school_id, depth, sample_rate, state, buckets_done, buckets_total, rows_compared,
	discrepancy_count, boundary_retries, message, error_message, created_by, create_time, end_time, in_flight_count, shard_report`

// scanRun reads runColumns, after any leading destinations in extra.
func scanRun(sc interface{ Scan(...any) error }, extra ...any) (Run, error) {
	var r Run
	var end sql.NullTime
	var shards string
	err := sc.Scan(append(extra, &r.ID, &r.Scope.DetectID, &r.Scope.ProjectID, &r.Scope.SchoolID, &r.Depth, &r.SampleRate, &r.State, &r.BucketsDone,
		&r.BucketsTotal, &r.RowsCompared, &r.Discrepancies, &r.BoundaryRetries, &r.Message, &r.Error, &r.CreatedBy, &r.Created, &end,
		&r.InFlight, &shards)...)
	if end.Valid {
		r.Ended = end.Time
	}
	if err == nil && shards != "" {
		if jerr := json.Unmarshal([]byte(shards), &r.Shards); jerr != nil {
			err = fmt.Errorf("run %s: shard report: %w", r.ID, jerr)
		}
	}
	return r, err
}

// Get returns one run.
func (s *RunStore) Get(ctx context.Context, id string) (Run, error) {
	r, err := scanRun(s.db.QueryRowContext(ctx, "SELECT "+runColumns+" FROM reconcile_run WHERE run_id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, ErrRunNotFound
	}
	if err != nil {
		return Run{}, fmt.Errorf("reading run %s: %w", id, err)
	}
	return r, nil
}

// List returns runs newest first, optionally of one campaign, older than
// the run with internal id before (0: from the newest).
func (s *RunStore) List(ctx context.Context, detectID, before int64, limit int) ([]Run, []int64, error) {
	q := "SELECT id, " + runColumns + " FROM reconcile_run WHERE 1=1"
	var args []any
	if detectID != 0 {
		q += " AND detect_id = ?"
		args = append(args, detectID)
	}
	if before > 0 {
		q += " AND id < ?"
		args = append(args, before)
	}
	q += " ORDER BY id DESC LIMIT ?"
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("listing runs: %w", err)
	}
	defer rows.Close()
	var out []Run
	var ids []int64
	for rows.Next() {
		var id int64
		r, err := scanRun(rows, &id)
		if err != nil {
			return nil, nil, fmt.Errorf("listing runs: %w", err)
		}
		out = append(out, r)
		ids = append(ids, id)
	}
	return out, ids, rows.Err()
}

// Update writes a run's mutable fields.
func (s *RunStore) Update(ctx context.Context, r Run) error {
	defer s.feed.Notify(RunKey(r.ID))
	var end any
	if !r.Ended.IsZero() {
		end = r.Ended
	}
	var shards []byte
	if len(r.Shards) > 0 {
		var err error
		if shards, err = json.Marshal(r.Shards); err != nil {
			return fmt.Errorf("updating run %s: %w", r.ID, err)
		}
		if len(shards) > maxShardReportBytes {
			shards = nil // more shards than a run can list: the counts stay in the message
		}
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE reconcile_run SET state = ?, buckets_done = ?, buckets_total = ?, rows_compared = ?,
		discrepancy_count = ?, boundary_retries = ?, message = ?, error_message = ?, end_time = ?, in_flight_count = ?, shard_report = ? WHERE run_id = ?`,
		r.State, r.BucketsDone, r.BucketsTotal, r.RowsCompared, r.Discrepancies, r.BoundaryRetries, clip(r.Message), clip(r.Error), end,
		r.InFlight, string(shards), r.ID); err != nil {
		return fmt.Errorf("updating run %s: %w", r.ID, err)
	}
	return nil
}

// FailInterrupted marks every non-terminal run FAILED: it was interrupted by
// a restart (runs are not resumed; start a new one). It returns how many.
func (s *RunStore) FailInterrupted(ctx context.Context) (int64, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE reconcile_run SET state = 'FAILED', error_message = 'interrupted by a restart of the reconcile server; start a new run', end_time = ?
		WHERE state IN ('PENDING', 'QUEUED', 'RUNNING', 'WAITING_FOR_CATCH_UP')`, time.Now().UTC())
	if err != nil {
		return 0, fmt.Errorf("failing interrupted runs: %w", err)
	}
	return res.RowsAffected()
}

// StoredDiscrepancy is a discrepancy as stored for a run.
type StoredDiscrepancy struct {
	ID      string
	RunID   string
	Seq     int64
	Created time.Time
	// Resolved is set once a verified repair fixed it (MarkResolved) or a
	// later SUCCEEDED run covering its record found it consistent
	// (ResolveCovered).
	Resolved bool
	// ResolvedByRun is the run that found the record consistent (empty when
	// a repair resolved it); ResolveTime and Resolution (ResolutionCleanRun,
	// ResolutionRepair; empty for rows resolved before migration 0008) say
	// when and how.
	ResolvedByRun string
	ResolveTime   time.Time
	Resolution    string
	Discrepancy
}

// How a discrepancy was resolved (discrepancy.resolution).
const (
	ResolutionCleanRun = "CLEAN_RUN"       // a later run covering the record found it consistent
	ResolutionRepair   = "VERIFIED_REPAIR" // a verified repair fixed it
)

// DiscrepancyBatch is the number of discrepancies stored per statement.
const DiscrepancyBatch = 1000

// AddDiscrepancies stores the confirmed discrepancies of a run, in
// multi-row statements of DiscrepancyBatch rows.
func (s *RunStore) AddDiscrepancies(ctx context.Context, runID string, detectID int64, ds []Discrepancy) error {
	now := time.Now().UTC()
	side := func(r *Record) (bool, int64, bool, string) {
		if r == nil {
			return false, 0, false, ""
		}
		return true, r.Version, r.Deleted, r.Canonical
	}
	// Ids: a random prefix per call and a sequence, so a batch appends to
	// the unique index instead of scattering over it.
	prefix := newID()[:16]
	for i := 0; i < len(ds); i += DiscrepancyBatch {
		chunk := ds[i:min(i+DiscrepancyBatch, len(ds))]
		args := make([]any, 0, 14*len(chunk))
		for k, d := range chunk {
			sp, sv, sd, sc := side(d.Source)
			dp, dv, dd, dc := side(d.Target)
			args = append(args, fmt.Sprintf("%s%016x", prefix, i+k), runID, d.Class, d.DataID, detectID, sp, sv, sd, sc, dp, dv, dd, dc, now)
		}
		if _, err := s.db.ExecContext(ctx, `INSERT INTO discrepancy (discrepancy_id, run_id, class, data_id, detect_id,
			src_present, src_version, src_deleted, src_canonical, dst_present, dst_version, dst_deleted, dst_canonical, create_time)
			VALUES `+mysqldb.Rows(len(chunk), 14), args...); err != nil {
			return fmt.Errorf("storing %d discrepancies (data ids %d-%d): %w", len(chunk), chunk[0].DataID, chunk[len(chunk)-1].DataID, err)
		}
	}
	return nil
}

// Discrepancies lists a run's discrepancies by data_id after afterDataID,
// optionally of one class.
func (s *RunStore) Discrepancies(ctx context.Context, runID string, class Class, afterDataID int64, limit int) ([]StoredDiscrepancy, error) {
	return s.ListDiscrepancies(ctx, runID, DiscrepancyFilter{Class: class}, afterDataID, limit)
}

// DiscrepancyFilter narrows ListDiscrepancies.
type DiscrepancyFilter struct {
	Class          Class // 0: any
	UnresolvedOnly bool  // only those neither a repair nor a later run resolved
}

// ListDiscrepancies lists a run's discrepancies by data_id after
// afterDataID, filtered by f.
func (s *RunStore) ListDiscrepancies(ctx context.Context, runID string, f DiscrepancyFilter, afterDataID int64, limit int) ([]StoredDiscrepancy, error) {
	q := `SELECT discrepancy_id, class, data_id, src_present, src_version, src_deleted, src_canonical,
		dst_present, dst_version, dst_deleted, dst_canonical, create_time, resolved, resolved_by_run, resolve_time, resolution
		FROM discrepancy WHERE run_id = ? AND data_id > ?`
	args := []any{runID, afterDataID}
	if f.Class != 0 {
		q += " AND class = ?"
		args = append(args, f.Class)
	}
	if f.UnresolvedOnly {
		q += " AND resolved = 0"
	}
	q += " ORDER BY data_id LIMIT ?"
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing discrepancies: %w", err)
	}
	defer rows.Close()
	var out []StoredDiscrepancy
	for rows.Next() {
		var d StoredDiscrepancy
		var sp, dp bool
		var src, dst Record
		var at sql.NullTime
		if err := rows.Scan(&d.ID, &d.Class, &d.DataID, &sp, &src.Version, &src.Deleted, &src.Canonical,
			&dp, &dst.Version, &dst.Deleted, &dst.Canonical, &d.Created, &d.Resolved, &d.ResolvedByRun, &at, &d.Resolution); err != nil {
			return nil, fmt.Errorf("listing discrepancies: %w", err)
		}
		if at.Valid {
			d.ResolveTime = at.Time
		}
		d.RunID = runID
		if sp {
			src.DataID = d.DataID
			d.Source = &src
		}
		if dp {
			dst.DataID = d.DataID
			d.Target = &dst
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// MarkResolved marks discrepancies resolved (a verified repair fixed them)
// and returns how many changed. It is idempotent: ids already resolved, or
// unknown, are left as they are.
func (s *RunStore) MarkResolved(ctx context.Context, ids []string) (int64, error) {
	var n int64
	for i := 0; i < len(ids); i += 500 {
		chunk := ids[i:min(i+500, len(ids))]
		args := make([]any, len(chunk))
		for j, id := range chunk {
			args[j] = id
		}
		res, err := s.db.ExecContext(ctx, "UPDATE discrepancy SET resolved = 1, resolve_time = ?, resolution = ? WHERE resolved = 0 AND discrepancy_id IN ("+
			mysqldb.Placeholders(len(chunk))+")", append([]any{time.Now().UTC(), ResolutionRepair}, args...)...)
		if err != nil {
			return n, fmt.Errorf("marking %d discrepancies resolved: %w", len(chunk), err)
		}
		k, err := res.RowsAffected()
		if err != nil {
			return n, fmt.Errorf("marking %d discrepancies resolved: %w", len(chunk), err)
		}
		n += k
	}
	return n, nil
}

// Clears reports whether a run at depth that finds a record consistent
// clears a discrepancy of class c: COUNTS proves no record right (matching
// counts can hide a wrong version), VERSIONS clears every class but
// CONTENT_MISMATCH, CONTENT clears every class.
func Clears(depth Depth, c Class) bool {
	switch {
	case depth >= DepthContent:
		return true
	case depth == DepthVersions:
		return c != ContentMismatch
	}
	return false
}

// UnresolvedKeys returns, in data_id order after afterDataID, at most limit
// records of the campaign with an unresolved discrepancy of one of classes
// stored before before.
func (s *RunStore) UnresolvedKeys(ctx context.Context, detectID int64, classes []Class, before time.Time, afterDataID int64, limit int) ([]int64, error) {
	if len(classes) == 0 {
		return nil, nil
	}
	args := []any{detectID, afterDataID, before.UTC()}
	for _, c := range classes {
		args = append(args, c)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT data_id FROM discrepancy WHERE detect_id = ? AND resolved = 0 AND data_id > ?
		AND create_time < ? AND class IN (`+mysqldb.Placeholders(len(classes))+`) ORDER BY data_id LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("reading unresolved discrepancies of campaign %d: %w", detectID, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("reading unresolved discrepancies of campaign %d: %w", detectID, err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// ResolveKeys marks resolved, as found consistent by run runID, the
// unresolved discrepancies of the campaign's records ids of one of classes
// stored before before, and returns how many changed (idempotent).
func (s *RunStore) ResolveKeys(ctx context.Context, runID string, detectID int64, classes []Class, before time.Time, ids []int64) (int64, error) {
	var n int64
	now := time.Now().UTC()
	for i := 0; i < len(ids); i += 500 {
		chunk := ids[i:min(i+500, len(ids))]
		args := []any{runID, now, ResolutionCleanRun, detectID, before.UTC()}
		for _, c := range classes {
			args = append(args, c)
		}
		for _, id := range chunk {
			args = append(args, id)
		}
		res, err := s.db.ExecContext(ctx, `UPDATE discrepancy SET resolved = 1, resolved_by_run = ?, resolve_time = ?, resolution = ?
			WHERE detect_id = ? AND resolved = 0 AND create_time < ? AND class IN (`+mysqldb.Placeholders(len(classes))+`) AND data_id IN (`+mysqldb.Placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return n, fmt.Errorf("resolving the discrepancies of %d records: %w", len(chunk), err)
		}
		k, err := res.RowsAffected()
		if err != nil {
			return n, fmt.Errorf("resolving the discrepancies of %d records: %w", len(chunk), err)
		}
		n += k
	}
	return n, nil
}

// UnresolvedRecords counts, per class, the records with an unresolved
// discrepancy in any run of any campaign (a record found by two runs counts
// once).
func (s *RunStore) UnresolvedRecords(ctx context.Context) (map[Class]int64, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT class, COUNT(DISTINCT data_id) FROM discrepancy WHERE resolved = 0 GROUP BY class")
	if err != nil {
		return nil, fmt.Errorf("counting unresolved discrepancies: %w", err)
	}
	defer rows.Close()
	out := map[Class]int64{}
	for rows.Next() {
		var c Class
		var n int64
		if err := rows.Scan(&c, &n); err != nil {
			return nil, fmt.Errorf("counting unresolved discrepancies: %w", err)
		}
		out[c] = n
	}
	return out, rows.Err()
}
