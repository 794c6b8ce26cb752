package chcluster

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/service/repairsvc"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/platformtest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

// The repair loop on the cluster, through the repair server as
// services/repair builds it with --clickhouse-cluster: the projection is
// damaged on the shards' local tables (a record deleted, a record's newest
// version deleted, a row no MySQL shard has, a wrong value at the right
// version and epoch), a real reconciliation run finds it, the replay and the
// approved removal repair the first three, and a controlled rebuild at epoch
// 1 (the fixed consumer deployed at 1, approved by another admin) repairs
// the wrong value: staging replicated and sharded like the projection,
// switched shard by shard, verified, the epoch floor raised. Every repair
// ends VERIFIED, the follow-up run is clean, every discrepancy is resolved,
// the projection matches the shards record by record, both replicas of each
// shard hold the same rows, and no staging table is left on any node.
func TestRepairAndRebuildOnTheCluster(t *testing.T) {
	c := newCluster(t)
	const (
		missing    = 950001 // MISSING_IN_TARGET: replayed
		stale      = 950002 // STALE_TARGET_VERSION: its v2 removed, replayed
		content    = 950003 // CONTENT_MISMATCH: rebuilt
		unexpected = 950004 // UNEXPECTED_TARGET_RECORD: removed after approval
	)
	for _, id := range []int64{missing, stale, content} {
		c.record(id, "2.21")
	}
	c.correct(stale, 1, "2.41")
	for id := int64(950100); id < 950130; id++ {
		c.record(id, "1.50")
	}
	c.waitCaughtUp(60 * time.Second)
	ctx := context.Background()

	// The damage.
	cp := chstore.NewClusterProjection(c.nodes[0], c.name)
	if _, err := cp.RemoveAbove(ctx, campaign, missing, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.RemoveAbove(ctx, campaign, stale, 1); err != nil {
		t.Fatal(err)
	}
	c.damage(content, c.shardOf(content)*2, unexpected)

	run, found := c.reconcile()
	want := map[int64]fitnessv1.DiscrepancyClass{
		missing:    fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_MISSING_IN_TARGET,
		stale:      fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_STALE_TARGET_VERSION,
		content:    fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_CONTENT_MISMATCH,
		unexpected: fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_UNEXPECTED_TARGET_RECORD,
	}
	if diff := cmp.Diff(want, classes(found)); diff != "" {
		t.Fatalf("discrepancies (-want +got):\n%s", diff)
	}
	idsOf := func(ids ...int64) []string {
		var out []string
		for _, d := range found {
			for _, id := range ids {
				if d.GetDataId() == id {
					out = append(out, d.GetDiscrepancyId())
				}
			}
		}
		return out
	}

	repairs := c.startRepair()

	// The replays and the removal.
	created, err := repairs.CreateRepair(platformtest.Operator(), &fitnessv1.CreateRepairRequest{RunId: run, Reason: "damaged shards",
		RequestId: "repair-" + run, DiscrepancyIds: idsOf(missing, stale, unexpected)})
	if err != nil {
		t.Fatal(err)
	}
	actions := map[fitnessv1.RepairAction]string{}
	for _, r := range created.GetRepairs() {
		actions[r.GetAction()] = r.GetRepairId()
	}
	if len(actions) != 2 || actions[fitnessv1.RepairAction_REPAIR_ACTION_REPLAY] == "" || actions[fitnessv1.RepairAction_REPAIR_ACTION_REMOVE] == "" {
		t.Fatalf("repairs created: %v; want a replay and a removal", created.GetRepairs())
	}
	if _, err := repairs.ApproveRepair(platformtest.Alice(), &fitnessv1.ApproveRepairRequest{RepairId: actions[fitnessv1.RepairAction_REPAIR_ACTION_REMOVE],
		Reason: "origins checked: no shard has it"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range actions {
		c.waitRepair(repairs, id)
	}

	// The content defect: the fixed consumer at epoch 1, then the rebuild.
	c.stopConsumer()
	c.startConsumer(1)
	rb, err := repairs.CreateRepair(platformtest.Operator(), &fitnessv1.CreateRepairRequest{RunId: run, Reason: "mapping defect fixed in epoch 1",
		RequestId: "rebuild-" + run, DiscrepancyIds: idsOf(content), RebuildEpoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rb.GetRepairs()) != 1 || rb.GetRepairs()[0].GetAction() != fitnessv1.RepairAction_REPAIR_ACTION_REBUILD {
		t.Fatalf("rebuild repair = %v", rb.GetRepairs())
	}
	rebuildID := rb.GetRepairs()[0].GetRepairId()
	if _, err := repairs.ApproveRepair(platformtest.Bob(), &fitnessv1.ApproveRepairRequest{RepairId: rebuildID, Reason: "scope checked"}); err != nil {
		t.Fatal(err)
	}
	c.waitRepair(repairs, rebuildID)

	// Afterwards.
	if _, again := c.reconcile(); len(again) != 0 {
		t.Errorf("after the repairs: %d discrepancies: %v", len(again), classes(again))
	}
	page, err := c.recon.ListDiscrepancies(platformtest.Operator(), &fitnessv1.ListDiscrepanciesRequest{RunId: run, PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range page.GetDiscrepancies() {
		if !d.GetResolved() {
			t.Errorf("discrepancy %s of %d not resolved", d.GetClass(), d.GetDataId())
		}
	}
	c.waitCaughtUp(30 * time.Second) // record by record, the ghost gone
	if got := c.projected()[content]; got != (state{Version: 1, Milli: 2210}) {
		t.Errorf("record %d = %+v; want version 1 at 2.21", content, got)
	}
	// Every record of the campaign now reads at epoch 1 (the rebuild covered
	// the scope), on both replicas of its shard.
	for n := range c.nodes {
		c.syncReplica(n)
	}
	truth := c.truth()
	var atEpoch1 uint64
	if err := c.nodes[0].QueryRow(ctx, "SELECT count() FROM fitness_result_versions FINAL WHERE detect_id = ? AND epoch = 1",
		int64(campaign)).Scan(&atEpoch1); err != nil {
		t.Fatal(err)
	}
	if atEpoch1 != uint64(len(truth)) {
		t.Errorf("%d records read at epoch 1 after the rebuild; want all %d", atEpoch1, len(truth))
	}
	for s := 0; s < 2; s++ {
		if a, b := c.localRows(s*2), c.localRows(s*2+1); !cmp.Equal(a, b) {
			t.Errorf("ClickHouse shard %d: the replicas differ (-node %d +node %d):\n%s", s+1, s*2+1, s*2+2, cmp.Diff(a, b))
		}
	}
	floor, err := c.proj.EpochFloor(ctx)
	if err != nil || floor != 1 {
		t.Errorf("epoch floor = %d, %v; want 1", floor, err)
	}
	for n, conn := range c.nodes {
		var left []string
		rows, err := conn.Query(ctx, "SELECT name FROM system.tables WHERE database = ? AND name LIKE '%rebuild%'", c.db)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				t.Fatal(err)
			}
			left = append(left, name)
		}
		rows.Close()
		if len(left) > 0 {
			t.Errorf("node %d keeps the rebuild's tables %v", n+1, left)
		}
	}
}

// startRepair starts the repair server on the cluster and returns its
// client.
func (c *cluster) startRepair() fitnessv1.RepairServiceClient {
	c.t.Helper()
	addr := platformtest.Serve(c.t, "repair", func(ctx context.Context) (servertest.Runner, error) {
		cfg, err := repairsvc.Load(append(append(append([]string{}, c.args...), "--control-dsn="+c.control, "--poll=100ms", "--lease=1s",
			"--verify-poll=200ms", "--verify-timeout=60s", "--retry-backoff=50ms", "--pulsar-url="+infratest.PulsarURL(), "--topic="+c.topic),
			c.chArgs...))
		if err != nil {
			return nil, err
		}
		return repairsvc.New(ctx, c.log, cfg)
	})
	return fitnessv1.NewRepairServiceClient(dial(c.t, addr))
}

// waitRepair waits until repair id is VERIFIED with its verification
// passed; any other end fails the test.
func (c *cluster) waitRepair(client fitnessv1.RepairServiceClient, id string) {
	c.t.Helper()
	var r *fitnessv1.Repair
	c.waitFor("repair "+id+" VERIFIED", 3*time.Minute, func() bool {
		got, err := client.GetRepair(platformtest.Operator(), &fitnessv1.GetRepairRequest{RepairId: id})
		if err != nil {
			c.t.Fatal(err)
		}
		r = got.GetRepair()
		switch r.GetState() {
		case fitnessv1.RepairState_REPAIR_STATE_VERIFIED:
			return true
		case fitnessv1.RepairState_REPAIR_STATE_FAILED, fitnessv1.RepairState_REPAIR_STATE_CANCELLED:
			c.t.Fatalf("repair %s (%s) ended %s: %s", id, r.GetAction(), r.GetState(), r.GetMessage())
		}
		return false
	})
	if r.GetVerification() != fitnessv1.VerificationResult_VERIFICATION_RESULT_PASSED {
		c.t.Errorf("repair %s (%s): verification %s", id, r.GetAction(), r.GetVerification())
	}
}
