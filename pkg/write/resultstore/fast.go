package resultstore

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strings"
	"sync"

	"github.com/go-sql-driver/mysql"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
)

// identityCache remembers the fields of a record that never change
// (campaign, user, project, school, grade). Nothing mutable is cached, so an
// entry can never be stale; it is bounded by clearing when full.
type identityCache struct {
	mu  sync.Mutex
	max int
	m   map[int64]*fitnessv1.FitnessResult
}

func newIdentityCache(max int) *identityCache {
	return &identityCache{max: max, m: map[int64]*fitnessv1.FitnessResult{}}
}

func (c *identityCache) put(r *fitnessv1.FitnessResult) {
	id := &fitnessv1.FitnessResult{DataId: r.GetDataId(), DetectId: r.GetDetectId(), UserId: r.GetUserId(),
		ProjectId: r.GetProjectId(), SchoolId: r.GetSchoolId(), Grade: r.GetGrade()}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		c.m = map[int64]*fitnessv1.FitnessResult{}
	}
	c.m[id.GetDataId()] = id
}

func (c *identityCache) get(dataID int64) (*fitnessv1.FitnessResult, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[dataID]
	return r, ok
}

// correctFast commits a correction in ONE round trip:
//
//	START TRANSACTION;
//	UPDATE fitness_result ... WHERE data_id = ? AND school_id = ? AND version = <expected> AND is_deleted = 0;
//	INSERT INTO outbox_event ... SELECT ... FROM DUAL WHERE <the row is in the state the UPDATE writes>;
//	INSERT INTO request_log  ... SELECT ... FROM DUAL WHERE <the same>;
//	COMMIT
//
// Each insert happens only if the transaction's own row is at the new
// version with this correction's update time, i.e. the UPDATE changed it:
// both inserts test the row, not ROW_COUNT(). (They tested ROW_COUNT()
// before; with the client's connection cut while the batch ran, a MySQL 9.7
// server committed the UPDATE and the outbox row without the request_log
// row — the retried request was then answered ABORTED instead of its
// stored outcome; found by the chaos soak, test/chaos.) When the version
// moved (or the record is deleted) nothing is written and done is false:
// the caller takes the locking path, which reports the conflict or replays
// a retried request. A failing statement stops the batch before COMMIT and
// the transaction is rolled back. The event is built from the cached
// identity plus the new values, which is exactly the row the UPDATE leaves.
func (s *Store) correctFast(ctx context.Context, c CorrectCommand, id *fitnessv1.FitnessResult) (Outcome, bool, error) {
	res, unit, err := canonical.CheckResult(id.GetProjectId(), c.Result, c.Unit)
	if err != nil {
		return Outcome{}, true, err
	}
	now := s.now()
	r := proto.Clone(id).(*fitnessv1.FitnessResult)
	r.Version, r.Result, r.Unit, r.ShardId, r.UpdateTime = c.ExpectedVersion+1, res, unit, s.shardID, timestamppb.New(now)
	ev := Event(r)
	var b batch
	b.add("START TRANSACTION")
	b.add("UPDATE fitness_result SET result = ?, unit = ?, version = ?, update_time = ? WHERE data_id = ? AND school_id = ? AND version = ? AND is_deleted = 0",
		res, unit, r.GetVersion(), now, c.DataID, c.SchoolID, c.ExpectedVersion)
	// The row as this UPDATE leaves it (a concurrent writer's row at the same
	// version carries another update time; were it the same millisecond, the
	// outbox row's event id collides, the batch rolls back and the locking
	// path reports the conflict).
	const changed = "EXISTS (SELECT 1 FROM fitness_result WHERE data_id = ? AND version = ? AND update_time = ?)"
	changedArgs := []any{c.DataID, r.GetVersion(), now}
	if !s.opts.SkipOutbox {
		q, args, err := outbox.InsertIf(ev, now, changed, changedArgs...)
		if err != nil {
			return Outcome{}, true, err
		}
		b.add(q, args...)
	}
	if c.RequestID != "" {
		resp, err := proto.MarshalOptions{Deterministic: true}.Marshal(r)
		if err != nil {
			return Outcome{}, true, fmt.Errorf("encoding outcome: %w", err)
		}
		b.add(`INSERT INTO request_log (request_id, method, request_hash, data_id, version, response, create_time)
			SELECT ?, ?, ?, ?, ?, ?, ? FROM DUAL WHERE `+changed, append([]any{c.RequestID, "correct", c.hash(), r.GetDataId(), r.GetVersion(), resp, now}, changedArgs...)...)
	}
	b.add("COMMIT")

	conn, err := s.db.Conn(ctx)
	if err != nil {
		return Outcome{}, true, fmt.Errorf("connecting to %s: %w", s.shardID, err)
	}
	defer conn.Close()
	var affected []int64
	err = conn.Raw(func(dc any) error {
		ex, ok := dc.(driver.ExecerContext)
		if !ok {
			return fmt.Errorf("driver connection %T cannot execute", dc)
		}
		named := make([]driver.NamedValue, len(b.args))
		for i, a := range b.args {
			v, err := driver.DefaultParameterConverter.ConvertValue(a)
			if err != nil {
				return fmt.Errorf("argument %d: %w", i+1, err)
			}
			named[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
		}
		res, err := ex.ExecContext(ctx, strings.Join(b.stmts, ";\n"), named)
		if err != nil {
			return err
		}
		if mr, ok := res.(mysql.Result); ok {
			affected = mr.AllRowsAffected()
		}
		return nil
	})
	if err != nil {
		s.rollback(ctx, conn)
		if mysqldb.IsErrorNumber(err, mysqldb.ErDupEntry) {
			// Rolled back: a retried request id, or a concurrent writer's
			// row matched in the same millisecond (its event id). The
			// locking path replays the stored outcome or reports the
			// conflict.
			return Outcome{}, false, nil
		}
		return Outcome{}, true, fmt.Errorf("writing correction of %d on %s: %w", c.DataID, s.shardID, err)
	}
	if len(affected) < 2 || affected[1] != 1 {
		// Nothing was written (the UPDATE matched no row, and the batch's
		// COMMIT ended the empty transaction); let the locking path explain.
		return Outcome{}, false, nil
	}
	return Outcome{Result: r, EventID: ev.GetEventId()}, true, nil
}
