package replay_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/recovery/replay"
)

// batchCase is one record of the batch scenario: what was done to it, and
// the outcome its replay must have.
type batchCase struct {
	name    string
	id      int64
	wantErr error // nil: replayed
}

// batchScenario puts, on both shards, a record in every state a replay
// meets: its outbox row purged (written anew), SENT (re-armed), PROCESSING
// (left to its claimant), a purged tombstone (from the deletion record), a
// defective outbox row (refused), and a data id the shard never had.
func batchScenario(t *testing.T, e *env) []batchCase {
	t.Helper()
	kinds := []string{"purged", "sent", "processing", "tombstone", "defective", "unknown"}
	ids := [2]map[string]int64{{}, {}} // per shard
	next := int64(910000)
	for s := range 2 {
		for _, k := range kinds {
			for e.owner(next) != s {
				next++
			}
			ids[s][k] = next
			next++
		}
	}
	for s := range 2 {
		e.record(t, ids[s]["purged"], "2.21")
		e.correct(t, ids[s]["purged"], 1, "2.31")
		e.record(t, ids[s]["tombstone"], "1.70")
		e.delete(t, ids[s]["tombstone"], 1)
	}
	e.deliverAll(t)
	e.purgeSent(t)
	for s := range 2 {
		if n, err := replay.Purge(t.Context(), e.dbs[s].DB, time.Now().Add(time.Minute)); err != nil || n != 1 {
			t.Fatalf("purging the tombstone of shard %d: %d, %v", s, n, err)
		}
		e.record(t, ids[s]["sent"], "1.80")
		e.record(t, ids[s]["defective"], "1.90")
	}
	e.deliverAll(t)
	for s := range 2 {
		row := e.row(t, ids[s]["defective"], canonical.EventID(ids[s]["defective"], 1))
		bad := decode(t, row.Payload)
		bad.SchoolId = 8
		payload, err := proto.MarshalOptions{Deterministic: true}.Marshal(bad)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.dbs[s].DB.ExecContext(t.Context(), "UPDATE outbox_event SET payload = ? WHERE id = ?", payload, row.ID); err != nil {
			t.Fatal(err)
		}
		e.record(t, ids[s]["processing"], "2.05")
		if c, err := e.repo[s].Claim(t.Context(), 100, time.Minute); err != nil || len(c.Rows) != 1 {
			t.Fatalf("claiming the PROCESSING row: %d rows, %v", len(c.Rows), err)
		}
	}
	var cases []batchCase
	for s := range 2 {
		cases = append(cases,
			batchCase{fmt.Sprintf("shard %d purged outbox row", s), ids[s]["purged"], nil},
			batchCase{fmt.Sprintf("shard %d SENT", s), ids[s]["sent"], nil},
			batchCase{fmt.Sprintf("shard %d PROCESSING", s), ids[s]["processing"], nil},
			batchCase{fmt.Sprintf("shard %d purged tombstone", s), ids[s]["tombstone"], nil},
			batchCase{fmt.Sprintf("shard %d defective outbox row", s), ids[s]["defective"], replay.ErrPayloadMismatch},
			batchCase{fmt.Sprintf("shard %d unknown", s), ids[s]["unknown"], replay.ErrNotFound},
		)
	}
	return cases
}

// outboxState is what a replay leaves in the outbox of a record, without
// the times and row ids that differ between two environments (the event's
// commit time is the row's own; TestReplay* prove the bytes are the write
// path's).
type outboxState struct {
	EventID  string
	Status   string
	Attempts int
	Event    string // the payload decoded, without its commit time
}

func (e *env) outboxState(t *testing.T, id int64) []outboxState {
	t.Helper()
	var out []outboxState
	for _, r := range e.rows(t, id) {
		ev, err := outbox.Decode(r.Payload)
		if err != nil {
			t.Fatal(err)
		}
		ev.SourceCommitTime = nil
		out = append(out, outboxState{r.EventID, r.Status, r.Attempts, prototext.Format(ev)})
	}
	return out
}

// TestReplayBatchDoesWhatReplayDoes: the same scenario in two pairs of
// shards, replayed record by record with Replay in one and with one
// ReplayBatch in the other (the ids in mixed order, one twice): every
// outcome is the one Replay returned (version, event id, tombstone, shard,
// or the same error for that record alone), and every record's outbox rows
// end the same (status, attempts, bytes).
func TestReplayBatchDoesWhatReplayDoes(t *testing.T) {
	single, batch := newEnv(t), newEnv(t)
	cases := batchScenario(t, single)
	if diff := cmp.Diff(cases, batchScenario(t, batch), cmp.AllowUnexported(batchCase{}), cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
		t.Fatalf("the scenarios differ:\n%s", diff)
	}
	var ids []int64
	for i := len(cases) - 1; i >= 0; i-- { // not in data_id or shard order
		ids = append(ids, cases[i].id)
	}
	ids = append(ids, cases[0].id)

	outs, err := batch.r.ReplayBatch(t.Context(), ids)
	if err != nil {
		t.Fatalf("ReplayBatch: %v", err)
	}
	if len(outs) != len(ids) {
		t.Fatalf("%d outcomes for %d ids", len(outs), len(ids))
	}
	byID := map[int64]replay.Outcome{}
	for i, o := range outs {
		if o.DataID != ids[i] {
			t.Fatalf("outcome %d is of %d, want %d (the order given)", i, o.DataID, ids[i])
		}
		byID[o.DataID] = o
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shardID, v, ev, deleted, err := single.r.Replay(t.Context(), c.id)
			got := byID[c.id]
			if !errors.Is(err, c.wantErr) || !errors.Is(got.Err, c.wantErr) || (c.wantErr == nil) != (got.Err == nil) {
				t.Fatalf("errors: Replay %v, ReplayBatch %v; want %v", err, got.Err, c.wantErr)
			}
			if c.wantErr == nil {
				want := replay.Outcome{DataID: c.id, ShardID: shardID, Version: v, EventID: ev, Deleted: deleted}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("ReplayBatch outcome (-Replay +ReplayBatch):\n%s", diff)
				}
			}
			if diff := cmp.Diff(single.outboxState(t, c.id), batch.outboxState(t, c.id)); diff != "" {
				t.Errorf("outbox rows (-after Replay +after ReplayBatch):\n%s", diff)
			}
		})
	}
	// Again: idempotent, the same rows re-armed, none added.
	before := map[int64]int{}
	for _, c := range cases {
		before[c.id] = len(batch.rows(t, c.id))
	}
	if _, err := batch.r.ReplayBatch(t.Context(), ids); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if n := len(batch.rows(t, c.id)); n != before[c.id] {
			t.Errorf("%s: %d outbox rows after a second batch, %d before", c.name, n, before[c.id])
		}
	}
}

// TestReplayOfAResultRecordedWithTrailingZeros: a result recorded as "1.80"
// through the store is published as its canonical "1.8", so the event of
// version 1 is what a replay builds from the row: the replay re-arms it
// instead of refusing it as a defective payload (it did, before Record
// canonicalized).
func TestReplayOfAResultRecordedWithTrailingZeros(t *testing.T) {
	e := newEnv(t)
	const id = 900021
	if out := e.record(t, id, "1.80"); out.Result.GetResult() != "1.8" {
		t.Errorf("Record returned result %q, want the canonical 1.8", out.Result.GetResult())
	}
	e.deliverAll(t)
	if ev := decode(t, e.row(t, id, canonical.EventID(id, 1)).Payload); ev.GetResult() != "1.8" {
		t.Errorf("published result %q, want 1.8", ev.GetResult())
	}
	if got := e.replay(t, id); got.Version != 1 {
		t.Errorf("Replay = %+v, want version 1", got)
	}
	outs, err := e.r.ReplayBatch(t.Context(), []int64{id})
	if err != nil || outs[0].Err != nil || outs[0].Version != 1 {
		t.Errorf("ReplayBatch = %+v, %v; want version 1", outs, err)
	}
}
