package chcluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/shopspring/decimal"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/lagwatch"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/testkit/platformtest"
	"github.com/resultsync/resultsync/pkg/testkit/reconcileapitest"
)

// The canonical story on the cluster: 2.21 corrected to 2.31 reads as 2.31
// at version 2 through the Distributed table and the views; a deletion hides
// its record; every version of a record is on one ClickHouse shard, on both
// of its replicas.
func TestStoryOnTheCluster(t *testing.T) {
	c := newCluster(t)
	const jump, twice = 900001, 900002
	c.record(jump, "2.21")
	c.correct(jump, 1, "2.31")
	c.record(twice, "1.80")
	c.remove(twice, 1)
	c.waitCaughtUp(60 * time.Second)

	ctx := context.Background()
	cur, err := c.proj.CurrentState(ctx, campaign)
	if err != nil {
		t.Fatal(err)
	}
	want := []chstore.Current{{DataID: jump, Version: 2, SchoolID: school, ProjectID: 3, Grade: 5, Result: "2.31", Unit: "m"}}
	if diff := cmp.Diff(want, cur); diff != "" {
		t.Errorf("current state through the Distributed table (-want +got):\n%s", diff)
	}
	report, err := c.proj.CampaignReport(ctx, campaign)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]chstore.ProjectReport{{ProjectID: 3, Unit: "m", Results: 1, Mean: "2.31", Min: "2.31", Max: "2.31"}}, report); diff != "" {
		t.Errorf("campaign report (-want +got):\n%s", diff)
	}

	// The lag through the Distributed projection_applied: each MySQL shard's
	// applied position is merged across the ClickHouse shards; nothing pending.
	var shards []lagwatch.Shard
	for i, s := range c.shards.Shards {
		shards = append(shards, lagwatch.Shard{ID: s.ID, DB: c.shardDBs[i].DB})
	}
	// The projection matching the shards does not mean the relay has marked
	// its rows SENT, nor that the consumer's applied positions are written:
	// poll until they are (bounded).
	watch := lagwatch.New(c.nodes[0], shards)
	var bad []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		lags, err := watch.Lags(ctx)
		if err != nil {
			t.Fatal(err)
		}
		bad = nil
		for _, l := range lags {
			owns := l.ShardID == c.shards.Shards[c.shards.Owner(jump)].ID || l.ShardID == c.shards.Shards[c.shards.Owner(twice)].ID
			if l.Pending != 0 || (owns && l.Applied.IsZero()) {
				bad = append(bad, fmt.Sprintf("lag of %s = %+v", l.ShardID, l))
			}
		}
		if len(bad) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, b := range bad {
		t.Errorf("%s; want nothing pending and an applied position where the records live", b)
	}

	// Where the versions are: all of a record's versions on one shard's two
	// replicas, none on the other shard.
	for n := range c.nodes {
		c.syncReplica(n)
	}
	for _, id := range []int64{jump, twice} {
		var perNode []uint64
		for n, conn := range c.nodes {
			var k uint64
			if err := conn.QueryRow(ctx, "SELECT count() FROM fitness_result_versions_local WHERE data_id = ?", id).Scan(&k); err != nil {
				t.Fatalf("node %d: %v", n+1, err)
			}
			perNode = append(perNode, k)
		}
		if !cmp.Equal(perNode, []uint64{2, 2, 0, 0}) && !cmp.Equal(perNode, []uint64{0, 0, 2, 2}) {
			t.Errorf("record %d: rows per node %v; want its 2 versions on both replicas of one shard only", id, perNode)
		}
	}
}

// A CONTENT reconciliation against the real MySQL shards and the cluster
// finds exactly the damage done directly to the shards' local tables: a row
// no MySQL shard has (inserted into one ClickHouse shard), a record whose
// rows were deleted (a replicated mutation), a wrong value at the right
// version; the healthy records are not reported.
func TestReconciliationFindsInjectedDiscrepancies(t *testing.T) {
	c := newCluster(t)
	const (
		missing    = 910001
		content    = 910002
		unexpected = 910003
	)
	for id := int64(910001); id <= 910002; id++ {
		c.record(id, "2.21")
	}
	for id := int64(910100); id < 910120; id++ {
		c.record(id, "1.50")
	}
	c.waitCaughtUp(60 * time.Second)
	ctx := context.Background()

	// A clean run first.
	if _, found := c.reconcile(); len(found) != 0 {
		t.Fatalf("reconciliation before any damage found %d discrepancies: %v", len(found), classes(found))
	}

	// The damage, on the shards' local tables.
	owner := c.shardOf(missing)
	if err := c.nodes[owner*2].Exec(ctx, "ALTER TABLE fitness_result_versions_local DELETE WHERE data_id = ?", int64(missing)); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the deletion mutation on both replicas", 60*time.Second, func() bool {
		return c.countLocal(owner*2, missing) == 0 && c.countLocal(owner*2+1, missing) == 0
	})
	// The wrong value on one replica of its record's shard, the ghost on
	// shard 2's second replica.
	c.damage(content, c.shardOf(content)*2+1, unexpected)

	_, found := c.reconcile()
	want := map[int64]fitnessv1.DiscrepancyClass{
		missing:    fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_MISSING_IN_TARGET,
		content:    fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_CONTENT_MISMATCH,
		unexpected: fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_UNEXPECTED_TARGET_RECORD,
	}
	if diff := cmp.Diff(want, classes(found)); diff != "" {
		t.Errorf("discrepancies (-want +got):\n%s", diff)
	}
}

// The repair's removal primitive on the cluster: RemoveAbove mutates the
// local table of the record's shard ON CLUSTER and returns once every
// replica applied it; the removed version is gone from both replicas and
// the current state falls back to the version below.
func TestRemovalOnTheCluster(t *testing.T) {
	c := newCluster(t)
	const id = 940001
	c.record(id, "2.21")
	c.correct(id, 1, "2.31")
	c.waitCaughtUp(60 * time.Second)
	ctx := context.Background()
	removed, err := chstore.NewClusterProjection(c.nodes[0], c.name).RemoveAbove(ctx, campaign, id, 1)
	if err != nil {
		t.Fatal(err)
	}
	if removed != 1 {
		t.Errorf("RemoveAbove removed %d rows; want 1 (version 2)", removed)
	}
	s := c.shardOf(id)
	for _, n := range []int{s * 2, s*2 + 1} {
		if k := c.countLocal(n, id); k != 1 {
			t.Errorf("node %d holds %d rows of %d after the removal; want 1", n+1, k, id)
		}
	}
	if got := c.projected()[id]; got != (state{Version: 1, Milli: 2210}) {
		t.Errorf("current state after the removal = %+v; want version 1 at 2.21", got)
	}
}

// A replica is killed (SIGKILL) while events flow and started again: the
// inserts fail over to its peer, every record reaches the projection at its
// current version and value (record by record against the MySQL shards),
// and the restarted replica catches up to the same rows as its peer.
func TestReplicaKilledAndRestartedMidStream(t *testing.T) {
	c := newCluster(t)
	const n = 240
	const first = int64(930000)
	killed := 2 // node 3: shard 2's first replica, the one inserts go to while it is up (load_balancing in_order)

	var wg sync.WaitGroup
	progress := make(chan int, n)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < n; i++ {
			id := first + int64(i)
			c.record(id, fmt.Sprintf("1.%03d", i%1000))
			if i%3 == 0 {
				c.correct(id, 1, fmt.Sprintf("2.%03d", i%1000))
			}
			if i%10 == 0 && i%3 != 0 {
				c.remove(id, 1)
			}
			progress <- i
		}
	}()
	waitProgress := func(upTo int) {
		for i := range progress {
			if i >= upTo {
				return
			}
		}
	}
	waitProgress(n / 4)
	chcluster(t, "kill", fmt.Sprint(killed+1))
	// Events keep flowing while the replica is down; wait until some of them
	// reached its shard through the other replica.
	before := len(c.localRows(killed + 1))
	waitProgress(3 * n / 4)
	c.waitFor("rows written to shard 2 while node 3 is down", 60*time.Second, func() bool {
		return len(c.localRows(killed+1)) > before
	})
	t.Logf("node 4 took %d rows while node 3 was down", len(c.localRows(killed+1))-before)
	chcluster(t, "start-node", fmt.Sprint(killed+1))
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	c.waitCaughtUp(90 * time.Second)
	truth := c.truth()
	if len(truth) != n {
		t.Fatalf("the shards hold %d records; want %d", len(truth), n)
	}

	// The restarted replica holds what its peer holds.
	c.syncReplica(killed)
	c.syncReplica(killed + 1)
	if diff := cmp.Diff(c.localRows(killed+1), c.localRows(killed)); diff != "" {
		t.Errorf("node %d after its restart differs from its peer node %d (-peer +restarted):\n%s", killed+1, killed+2, diff)
	}
	if len(c.localRows(killed)) == 0 {
		t.Error("shard 2 holds no rows: the test did not exercise it")
	}
}

// ---- helpers ----

// shardOf is the ClickHouse shard (0 or 1) holding the data_id's rows, read
// from the local tables.
func (c *cluster) shardOf(id int64) int {
	c.t.Helper()
	for s := 0; s < 2; s++ {
		if c.countLocal(s*2, id) > 0 {
			return s
		}
	}
	c.t.Fatalf("record %d is on no ClickHouse shard", id)
	return -1
}

func (c *cluster) countLocal(n int, id int64) uint64 {
	c.t.Helper()
	var k uint64
	if err := c.nodes[n].QueryRow(context.Background(), "SELECT count() FROM fitness_result_versions_local WHERE data_id = ?", id).Scan(&k); err != nil {
		c.t.Fatalf("node %d: %v", n+1, err)
	}
	return k
}

func (c *cluster) origins(id int64) []chstore.Row {
	c.t.Helper()
	rows, err := c.proj.Origins(context.Background(), campaign, id)
	if err != nil || len(rows) == 0 {
		c.t.Fatalf("origins of %d: %v %v", id, rows, err)
	}
	return rows
}

// reconcile runs a CONTENT reconciliation of the campaign through the
// reconcile server and returns its id and discrepancies.
func (c *cluster) reconcile() (string, []*fitnessv1.Discrepancy) {
	c.t.Helper()
	run := reconcileapitest.Run(c.t, c.recon, platformtest.Operator, &fitnessv1.ReconcileScope{DetectId: campaign},
		fitnessv1.ReconcileDepth_RECONCILE_DEPTH_CONTENT, 90*time.Second)
	if run.GetState() != fitnessv1.RunState_RUN_STATE_SUCCEEDED {
		c.t.Fatalf("reconciliation: %s %s", run.GetState(), run.GetErrorMessage())
	}
	return run.GetRunId(), reconcileapitest.Discrepancies(c.t, c.recon, platformtest.Operator, run.GetRunId())
}

func classes(ds []*fitnessv1.Discrepancy) map[int64]fitnessv1.DiscrepancyClass {
	m := map[int64]fitnessv1.DiscrepancyClass{}
	for _, d := range ds {
		m[d.GetDataId()] = d.GetClass()
	}
	return m
}

// damage writes straight into local tables (no Distributed routing) a wrong
// value at the right version and epoch of record content, on node n
// (0-based), and a row of record unexpected that no MySQL shard has, on
// node 4; then it waits until both replicas of each shard hold the damage: a
// read through the Distributed table goes to one replica of each shard (the
// first that is up), and a run must see it whichever replica answers.
func (c *cluster) damage(content int64, n int, unexpected int64) {
	c.t.Helper()
	wrong := c.origins(content)[0]
	wrong.Result = "1.11" // same version and epoch: a defective mapping
	c.insertLocal(n, wrong)
	c.insertLocal(3, chstore.Row{DetectID: campaign, DataID: unexpected, UserID: 5, ProjectID: 3, SchoolID: school, Grade: 5, Version: 1,
		Result: "9.99", Unit: "m", EventID: fmt.Sprintf("fitness-result-%d-v1", unexpected), ShardID: "shard-0",
		SourceCommitMs: time.Now().UnixMilli(), IngestMs: time.Now().UnixMilli()})
	for n := range c.nodes {
		c.syncReplica(n)
	}
}

// insertLocal writes r straight into node n's (0-based) local replicated
// table, bypassing the Distributed table's routing.
func (c *cluster) insertLocal(n int, r chstore.Row) {
	c.t.Helper()
	dec, err := decimal.NewFromString(r.Result)
	if err != nil {
		c.t.Fatal(err)
	}
	var del uint8
	if r.IsDeleted {
		del = 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := c.nodes[n].PrepareBatch(ctx, `INSERT INTO fitness_result_versions_local
		(detect_id, data_id, user_id, project_id, school_id, grade, version, epoch, result, unit,
		 is_deleted, event_id, shard_id, source_commit_unix_ms, ingest_unix_ms)`)
	if err == nil {
		err = b.Append(r.DetectID, r.DataID, r.UserID, r.ProjectID, r.SchoolID, r.Grade, r.Version, r.Epoch, dec, r.Unit, del,
			r.EventID, r.ShardID, r.SourceCommitMs, r.IngestMs)
	}
	if err == nil {
		err = b.Send()
	}
	if err != nil {
		c.t.Fatalf("inserting into node %d's local table: %v", n+1, err)
	}
}
