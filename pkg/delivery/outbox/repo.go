package outbox

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
)

// Status values of an outbox row.
const (
	StatusNew        = "NEW"
	StatusProcessing = "PROCESSING"
	StatusSent       = "SENT"
	StatusFailed     = "FAILED"
	StatusParked     = "PARKED"
)

// Row is one outbox row as the relay and the admin API see it.
type Row struct {
	ID        int64
	EventID   string
	DataID    int64
	Version   int64
	Payload   []byte
	Status    string
	Attempts  int
	DueTime   time.Time // NEW: commit time; FAILED: next retry; PROCESSING: lease expiry
	LastError string
	Created   time.Time
	Sent      time.Time // zero unless SENT
	// Reclaimed is set by Claim on rows taken over from an expired lease.
	Reclaimed bool
}

// Claim is a batch of rows owned by one claimant until Lease.
type Claim struct {
	Token string
	Lease time.Time
	Rows  []Row
	// Parked are rows this claim PARKED instead of claiming: their lease
	// expired once too often (ClaimSpec.MaxAttempts). They are not owned.
	Parked []Row
}

// Repo is the relay's access to one shard's outbox. Every method is one
// short transaction or a single statement; none holds locks across a publish.
type Repo struct {
	shardID string
	db      *sql.DB
	now     func() time.Time
}

// NewRepo returns a Repo over db, the shard shardID.
func NewRepo(shardID string, db *sql.DB) *Repo {
	return &Repo{shardID: shardID, db: db, now: time.Now}
}

// ShardID names the shard.
func (r *Repo) ShardID() string { return r.shardID }

func (r *Repo) clock() time.Time { return r.now().UTC().Truncate(time.Millisecond) }

const rowColumns = "id, event_id, data_id, version, payload, status, attempts, due_time, COALESCE(last_error, ''), create_time, sent_time"

func scanRow(sc interface{ Scan(...any) error }) (Row, error) {
	var x Row
	var sent sql.NullTime
	err := sc.Scan(&x.ID, &x.EventID, &x.DataID, &x.Version, &x.Payload, &x.Status, &x.Attempts, &x.DueTime, &x.LastError, &x.Created, &sent)
	if sent.Valid {
		x.Sent = sent.Time
	}
	return x, err
}

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ClaimSpec says what one claim takes.
type ClaimSpec struct {
	// Limit bounds the rows of the claim (positive).
	Limit int
	// Lease is how long the claimant owns them.
	Lease time.Duration
	// MaxAttempts parks a row whose lease expired once that expiry brings
	// its attempts to MaxAttempts: a claimant that stops before recording
	// the outcome (a crash, a kill, a hang past the lease) spent an
	// attempt, so an event that takes its claimant down every time ends
	// PARKED instead of being claimed for ever. 0 never parks at claim time
	// (the expiry is still counted).
	MaxAttempts int
}

// LeaseExpiredError is the last_error of a row whose lease expired: its
// claimant stopped before recording the outcome.
const LeaseExpiredError = "lease expired: the claimant stopped (crashed, killed or hung) before recording the outcome"

// Claim is ClaimBatch without parking: it takes up to limit rows for lease.
func (r *Repo) Claim(ctx context.Context, limit int, lease time.Duration) (Claim, error) {
	return r.ClaimBatch(ctx, ClaimSpec{Limit: limit, Lease: lease})
}

// Eligible reports whether a claim now would find anything: a NEW row or a
// FAILED row whose due time has come, or a PROCESSING row whose lease
// expired. It is one consistent (non-locking) read outside any transaction
// (idx_status_due), where an empty ClaimBatch is five statements (isolation,
// START TRANSACTION, the probe, the locking scan, COMMIT): what an idle
// relay loop asks before it opens a claim transaction. A row committed
// just after the answer is found by the next question, as by the next
// claim.
func (r *Repo) Eligible(ctx context.Context) (bool, error) {
	now := r.clock()
	var any bool
	if err := r.db.QueryRowContext(ctx, "SELECT EXISTS(SELECT 1 FROM outbox_event WHERE status = 'NEW' AND due_time <= ?) "+
		"OR EXISTS(SELECT 1 FROM outbox_event WHERE status = 'FAILED' AND due_time <= ?) "+
		"OR EXISTS(SELECT 1 FROM outbox_event WHERE status = 'PROCESSING' AND due_time <= ?)", now, now, now).Scan(&any); err != nil {
		return false, fmt.Errorf("looking for eligible rows on %s: %w", r.shardID, err)
	}
	return any, nil
}

// ClaimBatch takes eligible rows and marks them PROCESSING under a fresh
// claim token with a lease of spec.Lease, in one short READ COMMITTED
// transaction that skips rows other claimants hold locked. It returns an
// empty claim when nothing is eligible.
//
// Eligible are, in this order: a PROCESSING row whose lease has expired,
// FAILED rows whose retry time has come, then NEW rows, each in due order.
// A row whose lease expired cost its claimant an attempt (attempts+1,
// last_error LeaseExpiredError) and is claimed ALONE: when one event takes
// every claimant down with it, the batch-mates that shared its fate are
// published one by one and spend that attempt only once, while the event
// itself keeps spending attempts until, at spec.MaxAttempts, it is PARKED
// here (Claim.Parked) instead of claimed.
func (r *Repo) ClaimBatch(ctx context.Context, spec ClaimSpec) (Claim, error) {
	if spec.Limit <= 0 {
		return Claim{}, fmt.Errorf("claim limit must be positive, got %d", spec.Limit)
	}
	now := r.clock()
	tx, err := r.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return Claim{}, fmt.Errorf("claiming on %s: %w", r.shardID, err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit

	c := Claim{Token: newToken(), Lease: now.Add(spec.Lease)}
	// Which of the rarely eligible statuses have eligible rows, by a
	// consistent (non-locking) read: a locking scan of an empty range locks
	// the first record past it — on MariaDB the oldest PROCESSING row of
	// another claimant, whose SENT update then waits for this claim to
	// commit.
	var expired, retries bool
	if err := tx.QueryRowContext(ctx, "SELECT EXISTS(SELECT 1 FROM outbox_event WHERE status = 'PROCESSING' AND due_time <= ?), "+
		"EXISTS(SELECT 1 FROM outbox_event WHERE status = 'FAILED' AND due_time <= ?)", now, now).Scan(&expired, &retries); err != nil {
		return Claim{}, fmt.Errorf("probing expired leases and due retries on %s: %w", r.shardID, err)
	}
	// Expired leases first, one row at a time; the ones that reach the
	// limit are parked and the next is looked at.
	for expired && len(c.Parked) < spec.Limit {
		got, err := claimStatus(ctx, tx, StatusProcessing, now, 1)
		if err != nil {
			return Claim{}, fmt.Errorf("claiming expired leases on %s: %w", r.shardID, err)
		}
		if len(got) == 0 {
			break
		}
		x := got[0]
		x.Attempts++
		x.LastError = LeaseExpiredError
		if spec.MaxAttempts > 0 && x.Attempts >= spec.MaxAttempts {
			if _, err := tx.ExecContext(ctx, "UPDATE outbox_event SET status = 'PARKED', attempts = attempts + 1, last_error = ?, claim_token = NULL, due_time = ? WHERE id = ?",
				LeaseExpiredError, now, x.ID); err != nil {
				return Claim{}, fmt.Errorf("parking a row whose lease expired on %s: %w", r.shardID, err)
			}
			x.Status, x.DueTime = StatusParked, now
			c.Parked = append(c.Parked, x)
			continue
		}
		if _, err := tx.ExecContext(ctx, "UPDATE outbox_event SET status = 'PROCESSING', attempts = attempts + 1, last_error = ?, claim_token = ?, due_time = ? WHERE id = ?",
			LeaseExpiredError, c.Token, c.Lease, x.ID); err != nil {
			return Claim{}, fmt.Errorf("reclaiming a row whose lease expired on %s: %w", r.shardID, err)
		}
		x.DueTime = c.Lease
		c.Rows = []Row{x}
		return c, r.commitClaim(tx)
	}

	// One statement per status: each walks (status, due_time) in order and
	// stops at the limit, so it locks only the rows it returns.
	for _, st := range []string{StatusFailed, StatusNew} {
		if len(c.Rows) >= spec.Limit {
			break
		}
		if st == StatusFailed && !retries {
			continue
		}
		got, err := claimStatus(ctx, tx, st, now, spec.Limit-len(c.Rows))
		if err != nil {
			return Claim{}, fmt.Errorf("claiming %s rows on %s: %w", st, r.shardID, err)
		}
		c.Rows = append(c.Rows, got...)
	}
	if len(c.Rows) > 0 {
		args := make([]any, 0, len(c.Rows)+2)
		args = append(args, c.Token, c.Lease)
		for _, x := range c.Rows {
			args = append(args, x.ID)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE outbox_event SET status = 'PROCESSING', claim_token = ?, due_time = ? WHERE id IN ("+
			mysqldb.Placeholders(len(c.Rows))+")", args...); err != nil {
			return Claim{}, fmt.Errorf("marking claimed rows on %s: %w", r.shardID, err)
		}
	}
	if len(c.Rows) == 0 && len(c.Parked) == 0 {
		return Claim{}, tx.Commit()
	}
	return c, r.commitClaim(tx)
}

func (r *Repo) commitClaim(tx *sql.Tx) error {
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing claim on %s: %w", r.shardID, err)
	}
	return nil
}

func claimStatus(ctx context.Context, tx *sql.Tx, status string, now time.Time, limit int) ([]Row, error) {
	rows, err := tx.QueryContext(ctx, "SELECT "+rowColumns+" FROM outbox_event WHERE status = ? AND due_time <= ? "+
		"ORDER BY due_time, id LIMIT ? FOR UPDATE SKIP LOCKED", status, now, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		x, err := scanRow(rows)
		if err != nil {
			return nil, err
		}
		x.Reclaimed = status == StatusProcessing
		out = append(out, x)
	}
	return out, rows.Err()
}

// MarkSent records that the broker acknowledged the rows ids of claim token.
// Rows whose token no longer matches (their lease expired and another
// claimant took them) are left alone; it returns how many rows it marked.
func (r *Repo) MarkSent(ctx context.Context, token string, ids []int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	now := r.clock()
	args := []any{now, now, token}
	for _, id := range ids {
		args = append(args, id)
	}
	// due_time of a SENT row is its sent time, so that purging walks (status, due_time).
	res, err := r.db.ExecContext(ctx, "UPDATE outbox_event SET status = 'SENT', sent_time = ?, due_time = ?, claim_token = NULL, last_error = NULL "+
		"WHERE claim_token = ? AND id IN ("+mysqldb.Placeholders(len(ids))+")", args...)
	if err != nil {
		return 0, fmt.Errorf("marking %d rows SENT on %s: %w", len(ids), r.shardID, err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// Backoff bounds the retry delay: base * 2^(attempts-1), at most Max, times
// a random factor in [0.5, 1) (jitter), computed per row by the database.
type Backoff struct {
	Base, Max time.Duration
}

// MarkFailed records a failed publish of rows ids of claim token: attempts+1,
// the error, and either a retry time (FAILED) or, when attempts reaches
// maxAttempts, PARKED. Rows of another claimant are left alone. It returns
// how many rows were marked FAILED and PARKED.
func (r *Repo) MarkFailed(ctx context.Context, token string, ids []int64, cause string, maxAttempts int, b Backoff) (failed, parked int64, err error) {
	if len(ids) == 0 {
		return 0, 0, nil
	}
	if len(cause) > 1000 {
		cause = cause[:1000]
	}
	now := r.clock()
	in := mysqldb.Placeholders(len(ids))
	idArgs := make([]any, 0, len(ids))
	for _, id := range ids {
		idArgs = append(idArgs, id)
	}
	tx, err := r.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return 0, 0, fmt.Errorf("marking failures on %s: %w", r.shardID, err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	res, err := tx.ExecContext(ctx, "UPDATE outbox_event SET status = 'PARKED', attempts = attempts + 1, last_error = ?, claim_token = NULL, due_time = ? "+
		"WHERE claim_token = ? AND attempts + 1 >= ? AND id IN ("+in+")", append([]any{cause, now, token, maxAttempts}, idArgs...)...)
	if err != nil {
		return 0, 0, fmt.Errorf("parking rows on %s: %w", r.shardID, err)
	}
	parked, _ = res.RowsAffected()
	res, err = tx.ExecContext(ctx, "UPDATE outbox_event SET status = 'FAILED', "+
		"due_time = DATE_ADD(?, INTERVAL FLOOR(LEAST(?, ? * POW(2, attempts)) * (0.5 + RAND() * 0.5)) MICROSECOND), "+
		"attempts = attempts + 1, last_error = ?, claim_token = NULL "+
		"WHERE claim_token = ? AND id IN ("+in+")",
		append([]any{now, b.Max.Microseconds(), b.Base.Microseconds(), cause, token}, idArgs...)...)
	if err != nil {
		return 0, 0, fmt.Errorf("marking rows FAILED on %s: %w", r.shardID, err)
	}
	failed, _ = res.RowsAffected()
	if err := tx.Commit(); err != nil {
		return 0, 0, fmt.Errorf("committing failures on %s: %w", r.shardID, err)
	}
	return failed, parked, nil
}

// Stats summarises the outbox.
type Stats struct {
	Counts         map[string]int64 // by status
	ExpiredClaims  int64            // PROCESSING rows past their lease
	OldestUnsent   time.Time        // create time of the oldest row not SENT; zero when none
	OldestUnsentID int64
}

// Stats reads counts per status, expired claims and the oldest unsent row.
func (r *Repo) Stats(ctx context.Context) (Stats, error) {
	s := Stats{Counts: map[string]int64{}}
	rows, err := r.db.QueryContext(ctx, "SELECT status, COUNT(*) FROM outbox_event GROUP BY status")
	if err != nil {
		return s, fmt.Errorf("counting outbox on %s: %w", r.shardID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return s, fmt.Errorf("counting outbox on %s: %w", r.shardID, err)
		}
		s.Counts[st] = n
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("counting outbox on %s: %w", r.shardID, err)
	}
	_ = rows.Close() // before the next queries on the pool
	if err := r.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM outbox_event WHERE status = 'PROCESSING' AND due_time < ?", r.clock()).
		Scan(&s.ExpiredClaims); err != nil {
		return s, fmt.Errorf("counting expired claims on %s: %w", r.shardID, err)
	}
	// The oldest unsent row: the smallest id among non-SENT statuses. Each
	// probe is an index range read of one status.
	for _, st := range []string{StatusNew, StatusProcessing, StatusFailed, StatusParked} {
		var id int64
		var created time.Time
		err := r.db.QueryRowContext(ctx, "SELECT id, create_time FROM outbox_event WHERE status = ? ORDER BY id LIMIT 1", st).Scan(&id, &created)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return s, fmt.Errorf("finding the oldest unsent row on %s: %w", r.shardID, err)
		}
		if s.OldestUnsent.IsZero() || created.Before(s.OldestUnsent) {
			s.OldestUnsent, s.OldestUnsentID = created, id
		}
	}
	return s, nil
}

// List returns rows with id > afterID, optionally of one status, by id.
func (r *Repo) List(ctx context.Context, status string, afterID int64, limit int) ([]Row, error) {
	q := "SELECT " + rowColumns + " FROM outbox_event WHERE id > ?"
	args := []any{afterID}
	if status != "" {
		q += " AND status = ?"
		args = append(args, status)
	}
	q += " ORDER BY id LIMIT ?"
	args = append(args, limit)
	rows, err := r.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing outbox on %s: %w", r.shardID, err)
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		x, err := scanRow(rows)
		if err != nil {
			return nil, fmt.Errorf("listing outbox on %s: %w", r.shardID, err)
		}
		out = append(out, x)
	}
	return out, rows.Err()
}

// ReplayParked moves PARKED rows back to NEW (attempts reset, due now) so
// the relay publishes them again: the rows ids, or when ids is empty every
// parked row (of dataID when non-zero), at most limit. It returns the ids
// replayed.
func (r *Repo) ReplayParked(ctx context.Context, ids []int64, dataID int64, limit int) ([]int64, error) {
	tx, err := r.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return nil, fmt.Errorf("replaying on %s: %w", r.shardID, err)
	}
	defer tx.Rollback() //nolint:errcheck // no-op after Commit
	q := "SELECT id FROM outbox_event WHERE status = 'PARKED'"
	var args []any
	if len(ids) > 0 {
		q += " AND id IN (" + mysqldb.Placeholders(len(ids)) + ")"
		for _, id := range ids {
			args = append(args, id)
		}
	}
	if dataID != 0 {
		q += " AND data_id = ?"
		args = append(args, dataID)
	}
	q += " ORDER BY id LIMIT ? FOR UPDATE"
	args = append(args, limit)
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("selecting parked rows on %s: %w", r.shardID, err)
	}
	defer rows.Close()
	var picked []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("selecting parked rows on %s: %w", r.shardID, err)
		}
		picked = append(picked, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("selecting parked rows on %s: %w", r.shardID, err)
	}
	_ = rows.Close() // the transaction's next statements need the connection
	if len(picked) == 0 {
		return nil, tx.Commit()
	}
	args = []any{r.clock()}
	for _, id := range picked {
		args = append(args, id)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE outbox_event SET status = 'NEW', attempts = 0, due_time = ?, claim_token = NULL "+
		"WHERE status = 'PARKED' AND id IN ("+mysqldb.Placeholders(len(picked))+")", args...); err != nil {
		return nil, fmt.Errorf("replaying parked rows on %s: %w", r.shardID, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("committing replay on %s: %w", r.shardID, err)
	}
	return picked, nil
}

// PurgeSent deletes up to batch SENT rows sent before cutoff and returns how
// many it deleted; call it repeatedly to purge in small batches.
func (r *Repo) PurgeSent(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	res, err := r.db.ExecContext(ctx, "DELETE FROM outbox_event WHERE status = 'SENT' AND due_time < ? ORDER BY due_time LIMIT ?", cutoff, batch)
	if err != nil {
		return 0, fmt.Errorf("purging SENT rows on %s: %w", r.shardID, err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}
