package rebuild

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
	"github.com/resultsync/resultsync/pkg/write/resultstore"
)

// Phases reported to the progress function of Rebuild, in order.
const (
	PhaseScan          = "scan"           // done/total: records read of the scope
	PhaseCatchUp       = "catch-up"       // done/total: passes
	PhaseVerifyStaging = "verify-staging" // done/total: buckets compared
	PhaseSwitch        = "switch"         // 0/1 before the attach, 1/1 after
	PhaseVerify        = "verify"         // done/total: buckets compared
	PhaseRollback      = "rollback"       // 0/1, 1/1 (only after a failed verification)
	PhaseRetire        = "retire"         // 0/1, 1/1
	PhaseDone          = "done"           // rows, rows
)

// Options tune a Builder. Zero values take the defaults.
type Options struct {
	// BatchSize is the records read per shard query and written per
	// ClickHouse insert (default 10,000: ClickHouse wants large inserts).
	BatchSize int
	// RowsPerSecond bounds the rate of rows read and written (0: unlimited),
	// so the shards and ClickHouse keep serving live traffic.
	RowsPerSecond int
	// CatchUpMargin is how far below a watermark a catch-up pass re-reads
	// (default 5s).
	CatchUpMargin time.Duration
	// MaxCatchUpPasses bounds the catch-up passes (default 5).
	MaxCatchUpPasses int
	// FoldInRounds bounds the re-reads of records that changed during the
	// verification of staging (default 5).
	FoldInRounds int
	// Grace is the wait before re-checking candidates after the switch
	// (default 2s); VerifyRounds bounds the re-checks (default 10).
	Grace        time.Duration
	VerifyRounds int
	// ClickHouse are the settings the projection's connection was opened
	// with. With ClickHouse.Cluster set (docs/cluster.md) the staging tables
	// are replicated and sharded like the projection, and the switch runs on
	// one replica of every shard, connected with these settings and the
	// node's address. Zero: one server.
	ClickHouse chstore.Options
	// Log receives progress and warnings (default: discarded).
	Log *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.BatchSize <= 0 {
		o.BatchSize = 10000
	}
	if o.CatchUpMargin <= 0 {
		o.CatchUpMargin = 5 * time.Second
	}
	if o.MaxCatchUpPasses <= 0 {
		o.MaxCatchUpPasses = 5
	}
	if o.FoldInRounds <= 0 {
		o.FoldInRounds = 5
	}
	if o.Grace <= 0 {
		o.Grace = 2 * time.Second
	}
	if o.VerifyRounds <= 0 {
		o.VerifyRounds = 10
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Builder rebuilds scopes of the projection from the shards.
type Builder struct {
	shards   []*sql.DB
	shardIDs []string
	conn     driver.Conn
	proj     *chstore.Projection
	opts     Options
}

// New returns a Builder reading the authoritative shards (opened with
// mysqldb.Open; shardIDs[i] names shards[i], as the write path names it in
// events) and writing the projection database conn is bound to.
func New(shards []*sql.DB, shardIDs []string, conn driver.Conn, opts Options) *Builder {
	return &Builder{shards: shards, shardIDs: shardIDs, conn: conn, proj: chstore.NewClusterProjection(conn, opts.ClickHouse.Cluster).WithNodes(opts.ClickHouse),
		opts: opts.withDefaults()}
}

// ErrEpochRetired is returned when a rebuild's epoch is below the epoch floor.
var ErrEpochRetired = errors.New("rebuild epoch is retired")

// ErrVerification is matched (errors.Is) by every *VerificationError.
var ErrVerification = errors.New("rebuild verification failed")

// VerificationError is a failed verification. Before the switch nothing was
// changed; after it, the rebuilt rows were rolled back (RolledBack) unless
// the rollback itself failed (then the error says so).
type VerificationError struct {
	Stage         string // "staging" or "after the switch"
	Discrepancies []reconcile.Discrepancy
	// Origins holds the stored versions of a few failing records (after the
	// switch only).
	Origins     map[int64][]chstore.Row
	Staging     string // the staging table, kept for investigation
	RolledBack  bool
	RemovedRows int64
}

func (e *VerificationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "verification %s failed: %d record(s) differ from the shards (%s)", e.Stage, len(e.Discrepancies), summarize(e.Discrepancies))
	ids := make([]int64, 0, len(e.Origins))
	for id := range e.Origins {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		fmt.Fprintf(&b, "; record %d stored as", id)
		for _, r := range e.Origins[id] {
			fmt.Fprintf(&b, " v%d@epoch%d", r.Version, r.Epoch)
		}
	}
	if e.Stage == stageStaging {
		fmt.Fprintf(&b, "; nothing was switched, readers never saw the build; staging table %s kept", e.Staging)
	} else if e.RolledBack {
		fmt.Fprintf(&b, "; rolled back (%d rebuilt rows removed), readers are where they were; staging table %s kept", e.RemovedRows, e.Staging)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrVerification) hold.
func (e *VerificationError) Is(target error) bool { return target == ErrVerification }

const (
	stageStaging = "of staging"
	stageLive    = "after the switch"
)

func summarize(ds []reconcile.Discrepancy) string {
	byClass := map[reconcile.Class][]int64{}
	for _, d := range ds {
		byClass[d.Class] = append(byClass[d.Class], d.DataID)
	}
	classes := make([]reconcile.Class, 0, len(byClass))
	for c := range byClass {
		classes = append(classes, c)
	}
	sort.Slice(classes, func(i, j int) bool { return classes[i] < classes[j] })
	var parts []string
	for _, c := range classes {
		ids := byClass[c]
		s := fmt.Sprintf("%s: %d, e.g. %v", c, len(ids), ids[:min(5, len(ids))])
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// run is the state of one Rebuild call.
type run struct {
	b        *Builder
	scope    reconcile.Scope
	chScope  chstore.Scope
	epoch    uint16
	mark     int64 // ingest_unix_ms of every rebuilt row
	progress func(phase string, done, total int64)
	staging  *chstore.Staging
	pace     pacer
	rows     int64 // rows written to staging
}

// Rebuild rebuilds scope at transformation epoch from the shards, switches
// readers to it once it is verified, verifies again and retires the epochs
// below epoch (see the package documentation for each step). It returns the
// rows written to the staging table (every record of the scope, plus
// records re-read during catch-up and verification), which the switch
// added to the projection. progress, when not nil, is called from the
// calling goroutine with the Phase* constants.
//
// Errors: ErrEpochRetired (epoch below the floor), a *VerificationError
// (ErrVerification: readers stay where they were), or the failure of a step;
// a failure before the switch changed nothing readers see.
func (b *Builder) Rebuild(ctx context.Context, scope reconcile.Scope, epoch uint16, progress func(phase string, done, total int64)) (rows int64, err error) {
	if progress == nil {
		progress = func(string, int64, int64) {}
	}
	if scope.DetectID <= 0 {
		return 0, fmt.Errorf("rebuild: campaign (detect_id) must be positive, got %d", scope.DetectID)
	}
	if len(b.shards) == 0 || len(b.shards) != len(b.shardIDs) {
		return 0, fmt.Errorf("rebuild: need one shard id per shard, got %d shards and %d ids", len(b.shards), len(b.shardIDs))
	}
	if epoch == 0 {
		return 0, errors.New("rebuild: epoch must be above the defective transformation's epoch; 0 outranks nothing")
	}
	floor, err := b.proj.EpochFloor(ctx)
	if err != nil {
		return 0, fmt.Errorf("rebuild: %w", err)
	}
	if epoch < floor {
		return 0, fmt.Errorf("%w: epoch %d is below the epoch floor %d (rebuild at %d or above)", ErrEpochRetired, epoch, floor, floor)
	}
	start := b.opts.Now()
	r := &run{b: b, scope: scope, chScope: chstore.Scope{DetectID: scope.DetectID, ProjectID: scope.ProjectID, SchoolID: scope.SchoolID},
		epoch: epoch, mark: start.UnixMilli(), progress: progress, pace: pacer{rate: b.opts.RowsPerSecond, start: start, now: b.opts.Now}}
	log := b.opts.Log.With("campaign", scope.DetectID, "project", scope.ProjectID, "school", scope.SchoolID, "epoch", epoch)
	log.Info("rebuild started", "epoch_floor", floor, "ingest_mark", r.mark)
	if err := r.execute(ctx, log); err != nil {
		log.Error("rebuild failed", "rows", r.rows, "err", err)
		return r.rows, err
	}
	log.Info("rebuild done", "rows", r.rows, "seconds", b.opts.Now().Sub(start).Seconds())
	return r.rows, nil
}

func (r *run) execute(ctx context.Context, log *slog.Logger) error {
	name := fmt.Sprintf("fitness_result_versions_rebuild_%d_e%d_%d", r.scope.DetectID, r.epoch, r.mark)
	st, err := r.b.proj.CreateStaging(ctx, name)
	if err != nil {
		return err
	}
	r.staging = st
	inStaging := func(err error) error { return fmt.Errorf("%w (staging table %s kept)", err, name) }

	marks, err := r.watermarks(ctx)
	if err != nil {
		return inStaging(err)
	}
	if err := r.scan(ctx); err != nil {
		return inStaging(err)
	}
	if err := r.catchUp(ctx, marks, log); err != nil {
		return inStaging(err)
	}
	if err := r.verifyStaging(ctx); err != nil {
		return err
	}

	// The snapshot for a rollback, then the switch.
	before, err := r.b.proj.CreateStaging(ctx, name+"_before")
	if err != nil {
		return inStaging(err)
	}
	if _, err := r.b.proj.SnapshotCurrent(ctx, before, r.chScope); err != nil {
		_ = before.Drop(context.WithoutCancel(ctx))
		return inStaging(err)
	}
	r.progress(PhaseSwitch, 0, 1)
	if err := r.b.proj.AttachStaging(ctx, st); err != nil {
		// Did the attach take effect before the error (e.g. a lost connection)?
		n, cerr := r.b.proj.CountRebuilt(context.WithoutCancel(ctx), r.chScope, r.epoch, r.mark)
		switch {
		case cerr == nil && n == 0:
			_ = before.Drop(context.WithoutCancel(ctx))
			return inStaging(fmt.Errorf("switching readers: %w; nothing changed: readers still see the previous projection", err))
		case cerr != nil:
			return inStaging(fmt.Errorf("switching readers: %w; whether ClickHouse applied it is unknown (%v): the rebuild's rows, if any, are "+
				"those of campaign %d at epoch %d with ingest_unix_ms %d (snapshot %s kept for a rollback)", err, cerr, r.scope.DetectID, r.epoch, r.mark, before.Name()))
		}
		log.Warn("the switch returned an error but took effect; verifying", "err", err, "rebuilt_rows", n)
	}
	r.progress(PhaseSwitch, 1, 1)

	if err := r.verifyLive(ctx, before, log); err != nil {
		return err
	}

	r.progress(PhaseRetire, 0, 1)
	if err := r.b.proj.RaiseEpochFloor(ctx, chstore.EpochRetirement{Epoch: r.epoch, Time: r.b.opts.Now(), DetectID: r.scope.DetectID,
		ProjectID: r.scope.ProjectID, SchoolID: r.scope.SchoolID, Rows: r.rows}); err != nil {
		return fmt.Errorf("the rebuild is switched and verified, but retiring the epochs below %d failed: %w", r.epoch, err)
	}
	r.progress(PhaseRetire, 1, 1)
	if err := errors.Join(st.Drop(ctx), before.Drop(ctx)); err != nil {
		log.Warn("dropping the rebuild's tables", "err", err)
	}
	r.progress(PhaseDone, r.rows, r.rows)
	return nil
}

// where is the scope as a MySQL predicate.
func (r *run) where() (string, []any) {
	conds, args := []string{"detect_id = ?"}, []any{r.scope.DetectID}
	if r.scope.ProjectID != 0 {
		conds, args = append(conds, "project_id = ?"), append(args, r.scope.ProjectID)
	}
	if r.scope.SchoolID != 0 {
		conds, args = append(conds, "school_id = ?"), append(args, r.scope.SchoolID)
	}
	return strings.Join(conds, " AND "), args
}

// notInFitnessResult keeps the deletion records of purged tombstones only.
const notInFitnessResult = "NOT EXISTS (SELECT 1 FROM fitness_result f WHERE f.data_id = d.data_id)"

// read runs a query of resultstore.ResultColumns on shard i and maps every
// row as the live consumer maps its event.
func (r *run) read(ctx context.Context, i int, query string, args ...any) ([]chstore.Row, error) {
	rows, err := r.b.shards[i].QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("reading shard %s: %w", r.b.shardIDs[i], err)
	}
	defer rows.Close()
	var out []chstore.Row
	for rows.Next() {
		res, err := resultstore.ScanResult(rows, r.b.shardIDs[i])
		if err != nil {
			return nil, fmt.Errorf("reading shard %s: %w", r.b.shardIDs[i], err)
		}
		ev := resultstore.Event(res)
		if err := consumer.Validate(ev); err != nil {
			return nil, fmt.Errorf("record %d on shard %s cannot be projected: %w", res.GetDataId(), r.b.shardIDs[i], err)
		}
		out = append(out, consumer.ToRow(ev, r.epoch, r.mark))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading shard %s: %w", r.b.shardIDs[i], err)
	}
	return out, nil
}

// write inserts rows into staging in batches, paced.
func (r *run) write(ctx context.Context, rows []chstore.Row) error {
	for i := 0; i < len(rows); i += r.b.opts.BatchSize {
		chunk := rows[i:min(i+r.b.opts.BatchSize, len(rows))]
		if err := r.staging.Insert(ctx, chunk); err != nil {
			return err
		}
		r.rows += int64(len(chunk))
		if err := r.pace.wait(ctx, len(chunk)); err != nil {
			return err
		}
	}
	return nil
}

// watermarks returns, per shard, the newest update_time of the scope in
// Unix milliseconds (0 for an empty scope).
func (r *run) watermarks(ctx context.Context) ([]int64, error) {
	where, args := r.where()
	out := make([]int64, len(r.b.shards))
	for i, db := range r.b.shards {
		var t sql.NullTime
		if err := db.QueryRowContext(ctx, "SELECT MAX(update_time) FROM fitness_result WHERE "+where, args...).Scan(&t); err != nil {
			return nil, fmt.Errorf("reading the watermark of shard %s: %w", r.b.shardIDs[i], err)
		}
		if t.Valid {
			out[i] = t.Time.UnixMilli()
		}
	}
	return out, nil
}

// scan copies every record of the scope, tombstones included, into staging.
func (r *run) scan(ctx context.Context) error {
	where, args := r.where()
	var total int64
	for i, db := range r.b.shards {
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM fitness_result WHERE "+where, args...).Scan(&n); err != nil {
			return fmt.Errorf("counting the scope on shard %s: %w", r.b.shardIDs[i], err)
		}
		total += n
	}
	var done int64
	r.progress(PhaseScan, 0, total)
	n := r.b.opts.BatchSize
	for i := range r.b.shards {
		for _, q := range []string{
			"SELECT " + resultstore.ResultColumns + " FROM fitness_result WHERE " + where + " AND data_id > ? ORDER BY data_id LIMIT ?",
			// Purged tombstones: still deleted records at their version.
			"SELECT " + resultstore.ResultColumns + " FROM deletion_log d WHERE " + where + " AND data_id > ? AND " + notInFitnessResult + " ORDER BY data_id LIMIT ?",
		} {
			last := int64(math.MinInt64)
			for {
				rows, err := r.read(ctx, i, q, append(append([]any{}, args...), last, n)...)
				if err != nil {
					return err
				}
				if err := r.write(ctx, rows); err != nil {
					return err
				}
				done += int64(len(rows))
				r.progress(PhaseScan, done, max(total, done))
				if len(rows) < n {
					break
				}
				last = rows[len(rows)-1].DataID
			}
		}
	}
	return nil
}

// catchUp re-reads what changed since the watermarks (see the package
// documentation, step 4).
func (r *run) catchUp(ctx context.Context, marks []int64, log *slog.Logger) error {
	where, args := r.where()
	margin := r.b.opts.CatchUpMargin.Milliseconds()
	maxPasses := r.b.opts.MaxCatchUpPasses
	for pass := 1; pass <= maxPasses; pass++ {
		var reread, newer int64
		for i := range r.b.shards {
			since := time.UnixMilli(max(marks[i]-margin, 0)).UTC()
			rows, err := r.read(ctx, i, "SELECT "+resultstore.ResultColumns+" FROM fitness_result WHERE "+where+" AND update_time >= ?",
				append(append([]any{}, args...), since)...)
			if err != nil {
				return err
			}
			next := marks[i]
			for _, row := range rows {
				if row.SourceCommitMs > marks[i] {
					newer++
				}
				next = max(next, row.SourceCommitMs)
			}
			if err := r.write(ctx, rows); err != nil {
				return err
			}
			reread += int64(len(rows))
			marks[i] = next
		}
		r.progress(PhaseCatchUp, int64(pass), int64(maxPasses))
		log.Info("catch-up pass", "pass", pass, "reread", reread, "newer", newer)
		if newer == 0 {
			return nil
		}
	}
	return nil
}

// readIDs re-reads the given records of the scope from every shard (purged
// tombstones included).
func (r *run) readIDs(ctx context.Context, ids []int64) ([]chstore.Row, error) {
	where, args := r.where()
	var out []chstore.Row
	for c := 0; c < len(ids); c += 500 {
		chunk := ids[c:min(c+500, len(ids))]
		in := mysqldb.Placeholders(len(chunk))
		cargs := append([]any{}, args...)
		for _, id := range chunk {
			cargs = append(cargs, id)
		}
		for i := range r.b.shards {
			for _, q := range []string{
				"SELECT " + resultstore.ResultColumns + " FROM fitness_result WHERE " + where + " AND data_id IN (" + in + ")",
				"SELECT " + resultstore.ResultColumns + " FROM deletion_log d WHERE " + where + " AND data_id IN (" + in + ") AND " + notInFitnessResult,
			} {
				rows, err := r.read(ctx, i, q, cargs...)
				if err != nil {
					return nil, err
				}
				out = append(out, rows...)
			}
		}
	}
	return out, nil
}

func idsOf(ds []reconcile.Discrepancy) []int64 {
	ids := make([]int64, len(ds))
	for i, d := range ds {
		ids[i] = d.DataID
	}
	return ids
}

// verifyStaging compares staging with the shards at CONTENT depth, folding in
// records that changed meanwhile (step 5).
func (r *run) verifyStaging(ctx context.Context) error {
	src := reconcile.MySQLSource{Shards: r.b.shards}
	dst := reconcile.ClickHouseTarget{Conn: r.b.conn, Table: r.staging.Name()}
	res, err := reconcile.Compare(ctx, src, dst, r.scope, reconcile.DepthContent, reconcile.StoredBuckets, nil, func(p reconcile.Progress) {
		r.progress(PhaseVerifyStaging, p.BucketsDone, p.BucketsTotal)
	})
	if err != nil {
		return fmt.Errorf("verifying staging table %s (kept): %w", r.staging.Name(), err)
	}
	cands := res.Discrepancies
	for round := 0; len(cands) > 0 && round < r.b.opts.FoldInRounds; round++ {
		rows, err := r.readIDs(ctx, idsOf(cands))
		if err != nil {
			return fmt.Errorf("verifying staging table %s (kept): %w", r.staging.Name(), err)
		}
		if err := r.write(ctx, rows); err != nil {
			return fmt.Errorf("verifying staging table %s (kept): %w", r.staging.Name(), err)
		}
		if cands, err = reconcile.Recheck(ctx, src, dst, r.scope, reconcile.DepthContent, cands); err != nil {
			return fmt.Errorf("verifying staging table %s (kept): %w", r.staging.Name(), err)
		}
	}
	if len(cands) > 0 {
		return &VerificationError{Stage: stageStaging, Discrepancies: cands, Staging: r.staging.Name()}
	}
	return nil
}

// lagging reports whether d is the live path's delay after staging read the
// record: the source is ahead of the live projection, and the live
// projection is not behind what staging held.
func lagging(d reconcile.Discrepancy, staged map[int64]reconcile.Record) bool {
	switch d.Class {
	case reconcile.MissingInTarget, reconcile.StaleTargetVersion, reconcile.DeletionNotApplied:
	default:
		return false
	}
	var live int64
	if d.Target != nil {
		live = d.Target.Version
	}
	if d.Source == nil || live >= d.Source.Version {
		return false
	}
	return live >= staged[d.DataID].Version
}

// verifyLive compares the live current state with the shards after the
// switch, and rolls back on a failure (steps 7 and 8).
func (r *run) verifyLive(ctx context.Context, before *chstore.Staging, log *slog.Logger) error {
	src := reconcile.MySQLSource{Shards: r.b.shards}
	live := reconcile.ClickHouseTarget{Conn: r.b.conn}
	res, err := reconcile.Compare(ctx, src, live, r.scope, reconcile.DepthContent, reconcile.StoredBuckets, nil, func(p reconcile.Progress) {
		r.progress(PhaseVerify, p.BucketsDone, p.BucketsTotal)
	})
	cands := res.Discrepancies
	for round := 0; err == nil && len(cands) > 0 && round < r.b.opts.VerifyRounds; round++ {
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(r.b.opts.Grace):
			cands, err = reconcile.Recheck(ctx, src, live, r.scope, reconcile.DepthContent, cands)
		}
	}
	if err != nil {
		// The switch is done and cannot be verified: say so, keep everything.
		return fmt.Errorf("the switch is done but verifying it failed: %w; staging %s and snapshot %s kept (a rollback removes the rows of "+
			"campaign %d at epoch %d with ingest_unix_ms %d after writing the snapshot back)", err, r.staging.Name(), before.Name(), r.scope.DetectID, r.epoch, r.mark)
	}
	if len(cands) > 0 {
		staged, err := reconcile.ClickHouseTarget{Conn: r.b.conn, Table: r.staging.Name()}.Records(ctx, r.scope, 0, nil, idsOf(cands))
		if err != nil {
			return fmt.Errorf("the switch is done but verifying it failed: %w", err)
		}
		var failed []reconcile.Discrepancy
		var lag int
		for _, d := range cands {
			if lagging(d, staged) {
				lag++
			} else {
				failed = append(failed, d)
			}
		}
		if lag > 0 {
			log.Warn("records changed after the staging read and are not delivered by the live path yet; left to it", "records", lag)
		}
		cands = failed
	}
	if len(cands) == 0 {
		return nil
	}

	verr := &VerificationError{Stage: stageLive, Discrepancies: cands, Staging: r.staging.Name(), Origins: map[int64][]chstore.Row{}}
	for _, d := range cands[:min(3, len(cands))] {
		if o, err := r.b.proj.Origins(ctx, r.scope.DetectID, d.DataID); err == nil {
			verr.Origins[d.DataID] = o
		}
	}
	r.progress(PhaseRollback, 0, 1)
	if err := r.b.proj.RestoreFrom(ctx, before); err != nil {
		return fmt.Errorf("%w; ROLLBACK FAILED writing the snapshot %s back: %w (the rebuilt rows are still visible)", verr, before.Name(), err)
	}
	removed, err := r.b.proj.RemoveRebuilt(ctx, r.chScope, r.epoch, r.mark)
	if err != nil {
		return fmt.Errorf("%w; ROLLBACK FAILED: %w (rows of campaign %d at epoch %d with ingest_unix_ms %d are the rebuild's)",
			verr, err, r.scope.DetectID, r.epoch, r.mark)
	}
	verr.RolledBack, verr.RemovedRows = true, removed
	if err := before.Drop(ctx); err != nil {
		log.Warn("dropping the rollback snapshot", "err", err)
	}
	r.progress(PhaseRollback, 1, 1)
	return verr
}

// pacer keeps a cumulative row rate at or below rate rows per second.
type pacer struct {
	rate  int
	start time.Time
	now   func() time.Time
	n     int64
}

func (p *pacer) wait(ctx context.Context, rows int) error {
	p.n += int64(rows)
	if p.rate <= 0 {
		return nil
	}
	due := p.start.Add(time.Duration(float64(p.n) / float64(p.rate) * float64(time.Second)))
	d := due.Sub(p.now())
	if d <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
