package replay_test

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/recovery/replay"
	"github.com/resultsync/resultsync/pkg/write/resultstore"
)

// replayed is what Replay returned.
type replayed struct {
	Shard   string
	Version int64
	EventID string
	Deleted bool
}

func (e *env) replay(t *testing.T, dataID int64) replayed {
	t.Helper()
	s, v, id, del, err := e.r.Replay(t.Context(), dataID)
	if err != nil {
		t.Fatalf("replaying %d: %v", dataID, err)
	}
	return replayed{s, v, id, del}
}

// decode parses an outbox payload, or fails.
func decode(t *testing.T, payload []byte) *fitnessv1.FitnessResultChanged {
	t.Helper()
	ev, err := outbox.Decode(payload)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestReplayMissingRecordDeliversExistingVersion is the canonical omission:
// a record recorded and corrected three times (version 4), every outbox row
// delivered and purged, and the projection lacks it. The replay writes one
// NEW row for fitness-result-<id>-v4 whose payload is byte for byte the one
// the write path committed for version 4, decodes to exactly the committed
// state, and is claimable by the relay. Both shards.
func TestReplayMissingRecordDeliversExistingVersion(t *testing.T) {
	e := newEnv(t)
	for _, id := range []int64{900001, 900002} { // one per shard
		t.Run(fmt.Sprint(id), func(t *testing.T) {
			e.record(t, id, "2.21")
			for v, res := range []string{"2.31", "2.41", "2.51"} {
				e.correct(t, id, int64(v+1), res)
			}
			want := fmt.Sprintf("fitness-result-%d-v4", id)
			original := e.row(t, id, want).Payload
			e.deliverAll(t)
			e.purgeSent(t)
			if rows := e.rows(t, id); len(rows) != 0 {
				t.Fatalf("outbox after the purge: %d rows", len(rows))
			}

			got := e.replay(t, id)
			shardID := e.m.Shards[e.owner(id)].ID
			if diff := cmp.Diff(replayed{shardID, 4, want, false}, got); diff != "" {
				t.Errorf("Replay (-want +got):\n%s", diff)
			}
			rows := e.rows(t, id)
			if len(rows) != 1 {
				t.Fatalf("outbox after the replay: %d rows, want 1", len(rows))
			}
			r := rows[0]
			if r.EventID != want || r.Version != 4 || r.Status != outbox.StatusNew || r.Attempts != 0 {
				t.Errorf("replayed row = %s v%d %s attempts %d; want %s v4 NEW attempts 0", r.EventID, r.Version, r.Status, r.Attempts, want)
			}
			if !bytes.Equal(r.Payload, original) {
				t.Errorf("replayed payload differs from the committed one:\n got %x\nwant %x", r.Payload, original)
			}
			// The payload is the committed state, field by field.
			cur := e.get(t, id)
			ev := decode(t, r.Payload)
			if diff := cmp.Diff(resultstore.Event(cur), ev, protocmp.Transform()); diff != "" {
				t.Errorf("payload vs the committed state (-committed +payload):\n%s", diff)
			}
			if ev.GetResult() != "2.51" || ev.GetVersion() != 4 || ev.GetIsDeleted() || ev.GetShardId() != shardID ||
				!ev.GetSourceCommitTime().AsTime().Equal(cur.GetUpdateTime().AsTime()) {
				t.Errorf("payload = %v; want 2.51 at v4, live, %s, committed at %v", ev, shardID, cur.GetUpdateTime().AsTime())
			}

			// The relay's claim takes it.
			claimed := e.deliverAll(t)
			if len(claimed) != 1 || claimed[0].EventID != want || !bytes.Equal(claimed[0].Payload, original) {
				t.Errorf("claimed %+v; want the replayed row", claimed)
			}
		})
	}
}

// TestReplayRearmsExistingRow: an outbox row of the current version that
// still exists is re-armed in place (same row, NEW, due now, attempts 0, no
// claim, not sent), whatever it went through; older versions' rows are left
// as they are. A row being delivered (PROCESSING) is left to its claimant,
// whose token still completes it.
func TestReplayRearmsExistingRow(t *testing.T) {
	tests := []struct {
		name  string
		state func(t *testing.T, e *env, repo *outbox.Repo, id int64) (token string)
	}{
		{"NEW", func(*testing.T, *env, *outbox.Repo, int64) string { return "" }},
		{"SENT", func(t *testing.T, e *env, _ *outbox.Repo, _ int64) string { e.deliverAll(t); return "" }},
		{"FAILED", func(t *testing.T, _ *env, repo *outbox.Repo, _ int64) string {
			fail(t, repo, 5, outbox.Backoff{Base: time.Hour, Max: time.Hour})
			return ""
		}},
		{"PARKED", func(t *testing.T, _ *env, repo *outbox.Repo, _ int64) string {
			fail(t, repo, 1, outbox.Backoff{Base: time.Hour, Max: time.Hour})
			return ""
		}},
		{"PROCESSING", func(t *testing.T, _ *env, repo *outbox.Repo, _ int64) string {
			c, err := repo.Claim(t.Context(), 100, time.Minute)
			if err != nil || len(c.Rows) != 2 {
				t.Fatalf("claim: %d rows, %v", len(c.Rows), err)
			}
			return c.Token
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			const id = 900003
			e.record(t, id, "2.21")
			e.correct(t, id, 1, "2.31")
			repo := e.repo[e.owner(id)]
			token := tc.state(t, e, repo, id)
			before := e.rows(t, id)

			if got := e.replay(t, id); got.Version != 2 || got.EventID != canonical.EventID(id, 2) {
				t.Fatalf("Replay = %+v; want version 2", got)
			}
			after := e.rows(t, id)
			if len(after) != 2 || !cmp.Equal(after[0], before[0]) || after[1].ID != before[1].ID {
				t.Fatalf("rows before %+v\nafter %+v; want the same two rows, v1 untouched", before, after)
			}
			r := after[1]
			if tc.name == "PROCESSING" {
				if diff := cmp.Diff(before[1], r); diff != "" {
					t.Errorf("a row being delivered was changed (-before +after):\n%s", diff)
				}
				if n, err := repo.MarkSent(t.Context(), token, []int64{before[0].ID, r.ID}); err != nil || n != 2 {
					t.Errorf("the claimant completing its rows: %d, %v; want 2", n, err)
				}
				return
			}
			if r.Status != outbox.StatusNew || r.Attempts != 0 || !r.Sent.IsZero() || r.DueTime.After(time.Now()) {
				t.Errorf("re-armed row = %s attempts %d sent %v due %v; want NEW, 0, not sent, due now", r.Status, r.Attempts, r.Sent, r.DueTime)
			}
			if !bytes.Equal(r.Payload, before[1].Payload) {
				t.Error("re-arming changed the payload")
			}
			var claimToken any
			if err := e.db(id).QueryRowContext(t.Context(), "SELECT claim_token FROM outbox_event WHERE id = ?", r.ID).Scan(&claimToken); err != nil || claimToken != nil {
				t.Errorf("claim token of the re-armed row = %v, %v; want NULL", claimToken, err)
			}
			claimed := e.deliverAll(t)
			var got []string
			for _, c := range claimed {
				got = append(got, c.EventID)
			}
			want := []string{canonical.EventID(id, 2)}
			if tc.name == "NEW" {
				want = []string{canonical.EventID(id, 1), canonical.EventID(id, 2)}
			}
			sort.Strings(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("claimed after the replay (-want +got):\n%s", diff)
			}
		})
	}
}

// fail claims every eligible row and records a failed publish of each with
// the given attempt limit (1 parks at once).
func fail(t *testing.T, repo *outbox.Repo, maxAttempts int, b outbox.Backoff) {
	t.Helper()
	c, err := repo.Claim(t.Context(), 100, time.Minute)
	if err != nil || len(c.Rows) == 0 {
		t.Fatalf("claim: %d rows, %v", len(c.Rows), err)
	}
	ids := make([]int64, len(c.Rows))
	for i, r := range c.Rows {
		ids[i] = r.ID
	}
	if _, _, err := repo.MarkFailed(t.Context(), c.Token, ids, "broker unreachable (injected)", maxAttempts, b); err != nil {
		t.Fatal(err)
	}
}

// TestReplayIsIdempotent: replaying again re-arms the row the first replay
// wrote; it never adds a row or changes the payload.
func TestReplayIsIdempotent(t *testing.T) {
	e := newEnv(t)
	const id = 900010
	e.record(t, id, "2.21")
	e.correct(t, id, 1, "2.31")
	e.deliverAll(t)
	e.purgeSent(t)
	first := e.replay(t, id)
	rows1 := e.rows(t, id)
	second := e.replay(t, id)
	rows2 := e.rows(t, id)
	if first != second {
		t.Errorf("second Replay = %+v, first %+v", second, first)
	}
	if len(rows1) != 1 || len(rows2) != 1 || rows1[0].ID != rows2[0].ID || !bytes.Equal(rows1[0].Payload, rows2[0].Payload) {
		t.Errorf("rows after the first replay %+v, after the second %+v; want the same single row", rows1, rows2)
	}
	// Also after the relay sent it.
	e.deliverAll(t)
	third := e.replay(t, id)
	rows3 := e.rows(t, id)
	if third != first || len(rows3) != 1 || rows3[0].ID != rows1[0].ID || rows3[0].Status != outbox.StatusNew {
		t.Errorf("replay after delivery = %+v, rows %+v; want the same row re-armed", third, rows3)
	}
}

// TestReplayWaitsForCorrection: a correction to version 5 holds the row lock
// (its transaction is open, just before COMMIT) when the replay starts. The
// replay waits for it and delivers version 5 — the correction's own row —
// never version 4 after version 5 committed, and no version the source did
// not commit. Replay, and ReplayBatch with another record of the shard in
// the same batch.
func TestReplayWaitsForCorrection(t *testing.T) {
	const id, other = 900011, 900013
	for _, tc := range []struct {
		name   string
		replay func(e *env) (version int64, eventID string, err error)
	}{
		{"Replay", func(e *env) (int64, string, error) {
			_, v, ev, _, err := e.r.Replay(t.Context(), id)
			return v, ev, err
		}},
		{"ReplayBatch", func(e *env) (int64, string, error) {
			outs, err := e.r.ReplayBatch(t.Context(), []int64{other, id})
			if err != nil {
				return 0, "", err
			}
			if o := outs[0]; o.Err != nil || o.Version != 1 {
				return 0, "", fmt.Errorf("the other record of the batch: %+v", o)
			}
			return outs[1].Version, outs[1].EventID, outs[1].Err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.record(t, id, "2.21")
			for v, res := range []string{"2.31", "2.41", "2.51"} {
				e.correct(t, id, int64(v+1), res)
			}
			e.record(t, other, "1.50")
			e.deliverAll(t)
			e.purgeSent(t)

			// A concurrent writer's transaction, open just before COMMIT: the
			// correction to version 5 is written and holds the row lock.
			tx, err := e.db(id).BeginTx(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck // committed below
			if res, err := tx.Exec(`UPDATE fitness_result SET result = 2.61, version = 5, update_time = UTC_TIMESTAMP(3)
				WHERE data_id = ? AND version = 4`, id); err != nil {
				t.Fatal(err)
			} else if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("correction to version 5 matched %d rows", n)
			}
			type result struct {
				version int64
				eventID string
				err     error
			}
			done := make(chan result, 1)
			go func() {
				v, ev, err := tc.replay(e)
				done <- result{v, ev, err}
			}()
			waitLockWaits(t, e.db(id), 1) // the replay waits for the correction's lock
			select {
			case r := <-done:
				t.Fatalf("the replay returned %+v while the correction held the row", r)
			default:
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.version != 5 || r.eventID != canonical.EventID(id, 5) {
				t.Fatalf("the replay delivered %+v; want version 5 (committed before it read)", r)
			}
			assertOutboxDelivers(t, e, id, 5)
		})
	}
}

// TestCorrectionWaitsForReplay: the replay holds the row lock (its outbox
// row is held by another session, so it stops between reading version 4
// and committing) when a correction to version 5 starts. The correction
// waits; the replay commits version 4 re-armed; the correction then commits
// version 5 with its own row. Both rows are deliverable and the newest is
// version 5: the projection ends on v5 whatever order they arrive in.
func TestCorrectionWaitsForReplay(t *testing.T) {
	e := newEnv(t)
	const id = 900001
	e.record(t, id, "2.21")
	for v, res := range []string{"2.31", "2.41", "2.51"} {
		e.correct(t, id, int64(v+1), res)
	}
	e.deliverAll(t)
	db := e.db(id)

	// Another session locks the v4 outbox row (a fault at the database
	// boundary: the replay's transaction cannot finish until it lets go).
	blocker, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback() //nolint:errcheck // no-op after Commit
	var rowID int64
	if err := blocker.QueryRowContext(t.Context(), "SELECT id FROM outbox_event WHERE event_id = ? FOR UPDATE", canonical.EventID(id, 4)).Scan(&rowID); err != nil {
		t.Fatal(err)
	}

	type result struct {
		got replayed
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, v, ev, del, err := e.r.Replay(t.Context(), id)
		done <- result{replayed{s, v, ev, del}, err}
	}()
	waitLockWaits(t, db, 1) // the replay holds the business row, waits for the outbox row

	corrected := make(chan resultstore.Outcome, 1)
	correctErr := make(chan error, 1)
	go func() {
		out, err := e.store[e.owner(id)].Correct(t.Context(), resultstore.CorrectCommand{SchoolID: 7, DataID: id, ExpectedVersion: 4, Result: "2.61", Unit: "m"})
		corrected <- out
		correctErr <- err
	}()
	waitLockWaits(t, db, 2) // the correction waits for the replay's row lock
	if err := blocker.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.got.Version != 4 {
		t.Fatalf("Replay = %+v, %v; want version 4 (read before the correction)", r.got, r.err)
	}
	out := <-corrected
	if err := <-correctErr; err != nil || out.Result.GetVersion() != 5 {
		t.Fatalf("correction = v%d, %v; want v5", out.Result.GetVersion(), err)
	}
	if row := e.row(t, id, canonical.EventID(id, 4)); row.ID != rowID || row.Status != outbox.StatusNew {
		t.Errorf("v4 row = %+v; want row %d re-armed", row, rowID)
	}
	assertOutboxDelivers(t, e, id, 5)
}

// assertOutboxDelivers checks that the relay's next claims deliver version
// want of id (the committed state) as the newest version, and that every
// outbox row of id is a version the source committed, carrying that
// version's event id.
func assertOutboxDelivers(t *testing.T, e *env, id, want int64) {
	t.Helper()
	cur := e.get(t, id)
	if cur.GetVersion() != want {
		t.Fatalf("committed version = %d, want %d", cur.GetVersion(), want)
	}
	for _, r := range e.rows(t, id) {
		ev := decode(t, r.Payload)
		if r.Version < 1 || r.Version > want || r.EventID != canonical.EventID(id, r.Version) || ev.GetVersion() != r.Version {
			t.Errorf("outbox row %s v%d (payload v%d): a version the source never committed", r.EventID, r.Version, ev.GetVersion())
		}
	}
	var newest *fitnessv1.FitnessResultChanged
	for _, r := range e.deliverAll(t) {
		if ev := decode(t, r.Payload); ev.GetDataId() == id && (newest == nil || ev.GetVersion() > newest.GetVersion()) {
			newest = ev
		}
	}
	if diff := cmp.Diff(resultstore.Event(cur), newest, protocmp.Transform()); diff != "" {
		t.Errorf("newest delivered event vs the committed state (-committed +delivered):\n%s", diff)
	}
}

// TestReplayTombstone: a deleted record (tombstone at version 3) is
// replayed as that tombstone, with the write path's bytes.
func TestReplayTombstone(t *testing.T) {
	e := newEnv(t)
	const id = 900002
	e.record(t, id, "2.21")
	e.correct(t, id, 1, "2.31")
	e.delete(t, id, 2)
	original := e.row(t, id, canonical.EventID(id, 3)).Payload
	e.deliverAll(t)
	e.purgeSent(t)

	got := e.replay(t, id)
	if diff := cmp.Diff(replayed{e.m.Shards[e.owner(id)].ID, 3, canonical.EventID(id, 3), true}, got); diff != "" {
		t.Errorf("Replay (-want +got):\n%s", diff)
	}
	r := e.row(t, id, canonical.EventID(id, 3))
	if !bytes.Equal(r.Payload, original) {
		t.Errorf("replayed tombstone payload differs from the committed one")
	}
	if ev := decode(t, r.Payload); !ev.GetIsDeleted() || ev.GetVersion() != 3 || ev.GetResult() != "2.31" {
		t.Errorf("replayed tombstone = %v", ev)
	}
}

// TestPurgeKeepsDeletionRecordAndReplayDeliversIt: the retention job removes
// the tombstone row (and no live row, and no tombstone younger than the
// cutoff); the deletion record it leaves lets Replay deliver the tombstone
// at its version with the write path's bytes, deleted = true.
func TestPurgeKeepsDeletionRecordAndReplayDeliversIt(t *testing.T) {
	e := newEnv(t)
	const id, live = 900001, 900003 // both on one shard
	if e.owner(id) != e.owner(live) {
		t.Fatal("test ids are meant to share a shard")
	}
	e.record(t, id, "2.21")
	e.correct(t, id, 1, "2.31")
	e.delete(t, id, 2)
	e.record(t, live, "1.90")
	original := e.row(t, id, canonical.EventID(id, 3)).Payload
	e.deliverAll(t)
	e.purgeSent(t)
	db := e.db(id)

	if n, err := replay.Purge(t.Context(), db, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("Purge of tombstones older than an hour = %d, %v; want 0 (the tombstone is younger)", n, err)
	}
	if n, err := replay.Purge(t.Context(), db, time.Now().Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("Purge = %d, %v; want the one tombstone", n, err)
	}
	if _, err := e.store[e.owner(id)].Get(t.Context(), 7, id); !errors.Is(err, resultstore.ErrNotFound) {
		t.Fatalf("the purged row is still there: %v", err)
	}
	if r := e.get(t, live); r.GetVersion() != 1 || r.GetIsDeleted() {
		t.Errorf("live record after the purge = %v", r)
	}

	got := e.replay(t, id)
	if diff := cmp.Diff(replayed{e.m.Shards[e.owner(id)].ID, 3, canonical.EventID(id, 3), true}, got); diff != "" {
		t.Errorf("Replay of the purged tombstone (-want +got):\n%s", diff)
	}
	rows := e.rows(t, id)
	if len(rows) != 1 || !bytes.Equal(rows[0].Payload, original) || rows[0].Status != outbox.StatusNew {
		t.Fatalf("outbox after replaying the purged tombstone = %+v; want one NEW row with the committed bytes", rows)
	}
	if again := e.replay(t, id); again != got || len(e.rows(t, id)) != 1 {
		t.Errorf("second replay of the purged tombstone = %+v, %d rows", again, len(e.rows(t, id)))
	}
	// The tombstone's bytes decode to the state that was deleted.
	ev := decode(t, rows[0].Payload)
	if ev.GetResult() != "2.31" || !ev.GetIsDeleted() || ev.GetVersion() != 3 || ev.GetDetectId() != campaign || ev.GetSchoolId() != 7 {
		t.Errorf("replayed tombstone = %v", ev)
	}
}

// TestPurgeInBatches: more tombstones than one batch are all purged, each
// leaving its deletion record; live rows stay.
func TestPurgeInBatches(t *testing.T) {
	e := newEnv(t)
	db := e.dbs[0].DB
	const n = 2345
	for start := 0; start < n; start += 500 {
		q := "INSERT INTO fitness_result (data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time) VALUES "
		var args []any
		for i := start; i < min(start+500, n); i++ {
			if i > start {
				q += ","
			}
			q += "(?, ?, 41, 3, 7, 5, 1.5, 'm', 2, ?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))"
			args = append(args, 100000+i, campaign, i%5 != 0) // every fifth is live
		}
		if _, err := db.ExecContext(t.Context(), q, args...); err != nil {
			t.Fatal(err)
		}
	}
	got, err := replay.Purge(t.Context(), db, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var left, logged, liveLeft int64
	if err := db.QueryRowContext(t.Context(), "SELECT COUNT(*), COALESCE(SUM(is_deleted = 0), 0) FROM fitness_result").Scan(&left, &liveLeft); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM deletion_log").Scan(&logged); err != nil {
		t.Fatal(err)
	}
	if wantPurged := int64(n - n/5); got != wantPurged || logged != wantPurged || left != n/5 || liveLeft != n/5 {
		t.Errorf("purged %d, deletion records %d, rows left %d (live %d); want %d, %d, %d, %d", got, logged, left, liveLeft, wantPurged, wantPurged, n/5, n/5)
	}
}

// TestReplayUnknownRecord: a data_id its shard has no trace of is
// ErrNotFound, and nothing is written anywhere.
func TestReplayUnknownRecord(t *testing.T) {
	e := newEnv(t)
	e.record(t, 900002, "2.21")
	_, _, _, _, err := e.r.Replay(t.Context(), 900001)
	if !errors.Is(err, replay.ErrNotFound) {
		t.Fatalf("Replay of an unknown record: %v; want ErrNotFound", err)
	}
	for i, repo := range e.repo {
		rows, err := repo.List(t.Context(), "", 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 1, false: 0}[i == e.owner(900002)]; len(rows) != want {
			t.Errorf("shard %d outbox: %d rows, want %d", i, len(rows), want)
		}
	}
}

// TestReplayRefusesDifferentPayload: an outbox row of the version that
// carries other content than the authoritative state (a defective event)
// is not re-armed: ErrPayloadMismatch, the row untouched.
func TestReplayRefusesDifferentPayload(t *testing.T) {
	e := newEnv(t)
	const id = 900002
	e.record(t, id, "2.21")
	e.deliverAll(t)
	before := e.row(t, id, canonical.EventID(id, 1))
	bad := decode(t, before.Payload)
	bad.SchoolId = 8 // a mapping defect: same id and version, other content
	payload, err := proto.MarshalOptions{Deterministic: true}.Marshal(bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db(id).ExecContext(t.Context(), "UPDATE outbox_event SET payload = ? WHERE id = ?", payload, before.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, _, _, err := e.r.Replay(t.Context(), id); !errors.Is(err, replay.ErrPayloadMismatch) {
		t.Fatalf("Replay over a defective row: %v; want ErrPayloadMismatch", err)
	}
	after := e.row(t, id, canonical.EventID(id, 1))
	if after.Status != outbox.StatusSent || !bytes.Equal(after.Payload, payload) {
		t.Errorf("defective row after the refused replay = %s; want it untouched (SENT)", after.Status)
	}
}

// TestReplayConcurrentWithCorrections: replays race a stream of corrections
// of one record. Every replay delivers a version the write path committed,
// with that version's exact event, and the outbox ends delivering the last
// committed version.
func TestReplayConcurrentWithCorrections(t *testing.T) {
	e := newEnv(t)
	const id, corrections = 900002, 20
	committed := map[int64]*fitnessv1.FitnessResultChanged{1: resultstore.Event(e.record(t, id, "1.5").Result)}
	stop := make(chan struct{})
	type result struct {
		got replayed
		err error
	}
	results := make(chan result, 1000)
	go func() {
		defer close(results)
		for {
			select {
			case <-stop:
				return
			default:
			}
			s, v, ev, del, err := e.r.Replay(t.Context(), id)
			results <- result{replayed{s, v, ev, del}, err}
		}
	}()
	for v := int64(1); v <= corrections; v++ {
		out := e.correct(t, id, v, fmt.Sprintf("1.%d1", v)) // canonical: no trailing zero
		committed[out.Result.GetVersion()] = resultstore.Event(out.Result)
	}
	close(stop)
	n := 0
	for r := range results {
		n++
		if r.err != nil {
			t.Fatalf("Replay: %v", r.err)
		}
		if committed[r.got.Version] == nil || r.got.EventID != canonical.EventID(id, r.got.Version) {
			t.Fatalf("Replay delivered %+v: not a committed version", r.got)
		}
	}
	for _, row := range e.rows(t, id) {
		if diff := cmp.Diff(committed[row.Version], decode(t, row.Payload), protocmp.Transform()); diff != "" {
			t.Errorf("outbox row %s vs the committed event (-committed +row):\n%s", row.EventID, diff)
		}
	}
	assertOutboxDelivers(t, e, id, corrections+1)
	t.Logf("%d replays raced %d corrections", n, corrections)
}
