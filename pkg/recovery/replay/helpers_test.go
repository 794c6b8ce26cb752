package replay_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/model/shard"
	"github.com/resultsync/resultsync/pkg/recovery/replay"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/write/resultstore"
)

const campaign = 10001

// env is two real shards (MySQL 9.7, or MariaDB with RS_MYSQL_ENGINE) with
// the write path, the outbox repos and a Replayer over them.
type env struct {
	m     shard.Map
	dbs   []*infratest.MySQLDatabase
	store []*resultstore.Store
	repo  []*outbox.Repo
	r     *replay.Replayer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{}
	var plain []*sql.DB
	for i := range 2 {
		d := infratest.NewMySQLDatabase(t, schema.Shard)
		id := fmt.Sprintf("shard-%d", i)
		e.m.Shards = append(e.m.Shards, shard.Shard{ID: id, DSN: d.DSN})
		e.dbs = append(e.dbs, d)
		e.store = append(e.store, resultstore.New(id, storePool(t, d), resultstore.Options{}))
		e.repo = append(e.repo, outbox.NewRepo(id, d.DB))
		plain = append(plain, d.DB)
	}
	// The replayer gets plain pools (the session default isolation): it
	// sets what it needs per transaction.
	e.r = replay.New(e.m, plain)
	return e
}

// storePool opens the pool the write path requires (resultstore.PoolOptions).
func storePool(t *testing.T, d *infratest.MySQLDatabase) *sql.DB {
	t.Helper()
	db, err := mysqldb.Open(t.Context(), d.DSN, resultstore.PoolOptions(8))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func (e *env) owner(dataID int64) int { return e.m.Owner(dataID) }

func (e *env) db(dataID int64) *sql.DB { return e.dbs[e.owner(dataID)].DB }

func (e *env) record(t *testing.T, dataID int64, result string) resultstore.Outcome {
	t.Helper()
	out, err := e.store[e.owner(dataID)].Record(t.Context(), resultstore.RecordCommand{
		DataID: dataID, DetectID: campaign, UserID: 41, ProjectID: 3, SchoolID: 7, Grade: 5, Result: result, Unit: "m"})
	if err != nil {
		t.Fatalf("recording %d: %v", dataID, err)
	}
	return out
}

func (e *env) correct(t *testing.T, dataID, expected int64, result string) resultstore.Outcome {
	t.Helper()
	out, err := e.store[e.owner(dataID)].Correct(t.Context(), resultstore.CorrectCommand{
		SchoolID: 7, DataID: dataID, ExpectedVersion: expected, Result: result, Unit: "m", Reason: "measured again"})
	if err != nil {
		t.Fatalf("correcting %d at v%d: %v", dataID, expected, err)
	}
	return out
}

func (e *env) delete(t *testing.T, dataID, expected int64) resultstore.Outcome {
	t.Helper()
	out, err := e.store[e.owner(dataID)].Delete(t.Context(), resultstore.DeleteCommand{
		SchoolID: 7, DataID: dataID, ExpectedVersion: expected, Reason: "recorded for the wrong student"})
	if err != nil {
		t.Fatalf("deleting %d at v%d: %v", dataID, expected, err)
	}
	return out
}

// rows returns the outbox rows of dataID on its shard, by id.
func (e *env) rows(t *testing.T, dataID int64) []outbox.Row {
	t.Helper()
	all, err := e.repo[e.owner(dataID)].List(t.Context(), "", 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var out []outbox.Row
	for _, r := range all {
		if r.DataID == dataID {
			out = append(out, r)
		}
	}
	return out
}

// row returns the outbox row of eventID of dataID, or fails.
func (e *env) row(t *testing.T, dataID int64, eventID string) outbox.Row {
	t.Helper()
	for _, r := range e.rows(t, dataID) {
		if r.EventID == eventID {
			return r
		}
	}
	t.Fatalf("no outbox row %s", eventID)
	return outbox.Row{}
}

// deliverAll claims every eligible row of every shard and marks it SENT, as
// a relay whose publishes all succeeded; it returns the claimed rows.
func (e *env) deliverAll(t *testing.T) []outbox.Row {
	t.Helper()
	var got []outbox.Row
	for _, repo := range e.repo {
		for {
			c, err := repo.Claim(t.Context(), 500, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Rows) == 0 {
				break
			}
			ids := make([]int64, len(c.Rows))
			for i, r := range c.Rows {
				ids[i] = r.ID
			}
			if n, err := repo.MarkSent(t.Context(), c.Token, ids); err != nil || n != int64(len(ids)) {
				t.Fatalf("marking %d rows SENT: %d, %v", len(ids), n, err)
			}
			got = append(got, c.Rows...)
		}
	}
	return got
}

// purgeSent removes every SENT row, as the relay's retention does once they
// are older than --sent-retention.
func (e *env) purgeSent(t *testing.T) {
	t.Helper()
	for _, repo := range e.repo {
		for {
			n, err := repo.PurgeSent(t.Context(), time.Now().Add(time.Hour), 1000)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
	}
}

func (e *env) get(t *testing.T, dataID int64) *fitnessv1.FitnessResult {
	t.Helper()
	r, err := e.store[e.owner(dataID)].Get(t.Context(), 7, dataID)
	if err != nil {
		t.Fatalf("reading %d: %v", dataID, err)
	}
	return r
}

// lockWaits counts the transactions of the server waiting for a row lock.
func lockWaits(ctx context.Context, db *sql.DB) (int, error) {
	var n int
	err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'").Scan(&n)
	return n, err
}

// erCannotConvertString is MySQL's ER_CANNOT_CONVERT_STRING (3854).
const erCannotConvertString = 3854

// waitLockWaits polls until at least n transactions wait for a row lock.
// InnoDB refreshes INNODB_TRX only when it was not read for 0.1 s, so the
// poll is slower than that.
func waitLockWaits(t *testing.T, db *sql.DB, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := lockWaits(t.Context(), db)
		if mysqldb.IsErrorNumber(err, erCannotConvertString) && time.Now().Before(deadline) {
			// INNODB_TRX is filled with every transaction's query text; MySQL
			// refuses to convert one holding binary bytes (another test's
			// outbox payload, bound into its statement's text) to the
			// view's utf8mb3. That transaction is not ours: read again.
			time.Sleep(150 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d transactions wait for a lock, want %d", got, n)
		}
		time.Sleep(150 * time.Millisecond)
	}
}
