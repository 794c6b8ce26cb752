package reconcile_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/model/shard"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/recovery/replay"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/write/resultstore"
)

// purge runs the retention job on every shard of f, removing every tombstone.
func (f *fixture) purge(t *testing.T) int64 {
	t.Helper()
	var total int64
	for _, d := range f.shards {
		n, err := replay.Purge(t.Context(), d.DB, time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	return total
}

// compareAll compares the whole campaign at depth through the stored bucket
// aggregates and through scan-time buckets, and fails unless both agree;
// it returns their classification.
func (f *fixture) compareAll(t *testing.T, depth reconcile.Depth) map[int64]reconcile.Class {
	t.Helper()
	stored := f.compareWith(t, depth, reconcile.StoredBuckets)
	if diff := cmp.Diff(stored, f.compareWith(t, depth, 64)); diff != "" {
		t.Errorf("scan-time buckets disagree with the stored aggregates (-stored +scan-time):\n%s", diff)
	}
	return stored
}

// TestPurgedTombstoneNotDeliveredIsDeletionNotApplied: the projection has
// the live version 1, the source deleted it at version 2 and then purged the
// tombstone row. The deletion record keeps the source side a deleted record
// at version 2: DELETION_NOT_APPLIED, not UNEXPECTED_TARGET_RECORD — at
// every depth, through the stored aggregates and at scan time, and after the
// re-check.
func TestPurgedTombstoneNotDeliveredIsDeletionNotApplied(t *testing.T) {
	f := newFixture(t)
	f.seed(t, 200)
	const id = 900060
	f.both(t, rec{id: id, version: 1, school: 8, result: "2.21"})
	f.source(t, rec{id: id, version: 2, school: 8, result: "2.21", deleted: true})
	if n := f.purge(t); n < 2 {
		t.Fatalf("purged %d tombstones; want the seed's and %d", n, id)
	}
	want := map[int64]reconcile.Class{id: reconcile.DeletionNotApplied}
	for _, depth := range []reconcile.Depth{reconcile.DepthCounts, reconcile.DepthVersions, reconcile.DepthContent} {
		if diff := cmp.Diff(want, f.compareAll(t, depth)); diff != "" {
			t.Errorf("depth %d (-want +got):\n%s", depth, diff)
		}
	}
	scope := reconcile.Scope{DetectID: campaign}
	confirmed, err := reconcile.Recheck(t.Context(), f.src, f.dst, scope, reconcile.DepthContent,
		[]reconcile.Discrepancy{{Class: reconcile.DeletionNotApplied, DataID: id}})
	if err != nil {
		t.Fatal(err)
	}
	if len(confirmed) != 1 || confirmed[0].Class != reconcile.DeletionNotApplied || confirmed[0].Source == nil ||
		confirmed[0].Source.Version != 2 || !confirmed[0].Source.Deleted || confirmed[0].Source.Canonical != "900060|2|1|10001|4|3|8|5|2210|m" {
		t.Errorf("re-check = %+v; want the purged tombstone at version 2 as the source", confirmed)
	}
	// A scope narrowed by school aggregates at scan time too.
	res, err := reconcile.Compare(t.Context(), f.src, f.dst, reconcile.Scope{DetectID: campaign, SchoolID: 8}, reconcile.DepthContent, 64, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Discrepancies) != 1 || res.Discrepancies[0].DataID != id || res.Discrepancies[0].Class != reconcile.DeletionNotApplied {
		t.Errorf("school scope = %+v; want %d DELETION_NOT_APPLIED", res.Discrepancies, id)
	}
}

// TestPurgedTombstoneDeliveredIsConsistent: tombstones the projection has
// (the seed's, and one more) and a record deleted before it ever reached the
// projection stay consistent after their rows are purged, at every depth.
func TestPurgedTombstoneDeliveredIsConsistent(t *testing.T) {
	f := newFixture(t)
	f.seed(t, 300)
	f.both(t, rec{id: 900061, version: 1, school: 7, result: "2.21"})
	f.both(t, rec{id: 900061, version: 2, school: 7, result: "2.21", deleted: true})
	f.source(t, rec{id: 900062, version: 1, school: 8, result: "1.5"})
	f.source(t, rec{id: 900062, version: 2, school: 8, result: "1.5", deleted: true})
	if n := f.purge(t); n < 3 {
		t.Fatalf("purged %d tombstones", n)
	}
	for _, depth := range []reconcile.Depth{reconcile.DepthCounts, reconcile.DepthVersions, reconcile.DepthContent} {
		if got := f.compareAll(t, depth); len(got) != 0 {
			t.Errorf("depth %d after the purge: %v; want nothing", depth, got)
		}
	}
}

// TestPurgeLeavesSourceBucketsUnchanged: a purge changes no business state,
// so the source's bucket summaries — stored aggregates and scan-time
// aggregates alike — are the same before and after it, and the two agree.
func TestPurgeLeavesSourceBucketsUnchanged(t *testing.T) {
	f := newFixture(t)
	f.seed(t, 400)
	buckets := func(s reconcile.Scope, n int) map[int]reconcile.BucketSum {
		t.Helper()
		b, err := f.src.Buckets(t.Context(), s, n)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	whole := reconcile.Scope{DetectID: campaign}
	narrowed := reconcile.Scope{DetectID: campaign, ProjectID: 3} // every record: the same set, aggregated at scan time
	revision := func() int64 {
		t.Helper()
		var total int64
		for _, d := range f.shards {
			var r int64
			if err := d.DB.QueryRowContext(t.Context(), "SELECT COALESCE(SUM(revision), 0) FROM campaign_bucket WHERE detect_id = ?", campaign).Scan(&r); err != nil {
				t.Fatal(err)
			}
			total += r
		}
		return total
	}
	stored, scanned, by64, rev := buckets(whole, reconcile.StoredBuckets), buckets(narrowed, reconcile.StoredBuckets), buckets(whole, 64), revision()
	if diff := cmp.Diff(stored, scanned); diff != "" {
		t.Fatalf("before the purge, stored vs scan-time (-stored +scanned):\n%s", diff)
	}
	if n := f.purge(t); n == 0 {
		t.Fatal("nothing purged")
	}
	if diff := cmp.Diff(stored, buckets(whole, reconcile.StoredBuckets)); diff != "" {
		t.Errorf("stored aggregates moved with the purge (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(scanned, buckets(narrowed, reconcile.StoredBuckets)); diff != "" {
		t.Errorf("scan-time aggregates moved with the purge (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(by64, buckets(whole, 64)); diff != "" {
		t.Errorf("scan-time aggregates (64 buckets) moved with the purge (-before +after):\n%s", diff)
	}
	if after := revision(); after != rev {
		t.Errorf("campaign revision %d -> %d across a purge; a purge changes no business state", rev, after)
	}
}

// writePath is two shards written through the real write path, routed by
// data_id, delivered to a real ClickHouse projection through their outboxes
// (the relay's claim, the consumer's mapping), and compared.
type writePath struct {
	m      shard.Map
	dbs    []*infratest.MySQLDatabase
	stores []*resultstore.Store
	repos  []*outbox.Repo
	proj   *chstore.Projection
	src    reconcile.MySQLSource
	dst    reconcile.ClickHouseTarget
}

func newWritePath(t *testing.T) *writePath {
	t.Helper()
	w := &writePath{}
	for i := range 2 {
		d := infratest.NewMySQLDatabase(t, schema.Shard)
		pool, err := mysqldb.Open(t.Context(), d.DSN, resultstore.PoolOptions(8))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pool.Close() })
		id := fmt.Sprintf("shard-%d", i)
		w.m.Shards = append(w.m.Shards, shard.Shard{ID: id, DSN: d.DSN})
		w.dbs = append(w.dbs, d)
		w.stores = append(w.stores, resultstore.New(id, pool, resultstore.Options{}))
		w.repos = append(w.repos, outbox.NewRepo(id, d.DB))
		w.src.Shards = append(w.src.Shards, d.DB)
	}
	ch := infratest.NewClickHouseDatabase(t, true)
	w.proj = chstore.NewProjection(ch.Conn)
	w.dst = reconcile.ClickHouseTarget{Conn: ch.Conn}
	return w
}

func (w *writePath) store(id int64) *resultstore.Store { return w.stores[w.m.Owner(id)] }

// deliver claims every eligible outbox row, writes its event to the
// projection unless lost says the event never arrived, and marks it SENT
// (the broker acknowledged it either way). It returns the events written.
func (w *writePath) deliver(t *testing.T, lost func(eventID string) bool) int {
	t.Helper()
	written := 0
	for _, repo := range w.repos {
		for {
			c, err := repo.Claim(t.Context(), 500, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Rows) == 0 {
				break
			}
			var rows []chstore.Row
			ids := make([]int64, len(c.Rows))
			for i, r := range c.Rows {
				ids[i] = r.ID
				if lost != nil && lost(r.EventID) {
					continue
				}
				ev, err := consumer.Decode(r.Payload)
				if err != nil {
					t.Fatal(err)
				}
				if err := consumer.Validate(ev); err != nil {
					t.Fatal(err)
				}
				rows = append(rows, consumer.ToRow(ev, 0, time.Now().UnixMilli()))
			}
			if err := w.proj.Insert(t.Context(), rows); err != nil {
				t.Fatal(err)
			}
			written += len(rows)
			if _, err := repo.MarkSent(t.Context(), c.Token, ids); err != nil {
				t.Fatal(err)
			}
		}
	}
	return written
}

func (w *writePath) compare(t *testing.T, depth reconcile.Depth) map[int64]reconcile.Class {
	t.Helper()
	out := map[int64]reconcile.Class{}
	for _, n := range []int{reconcile.StoredBuckets, 64} {
		res, err := reconcile.Compare(t.Context(), w.src, w.dst, reconcile.Scope{DetectID: campaign}, depth, n, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]reconcile.Class{}
		for _, d := range res.Discrepancies {
			got[d.DataID] = d.Class
		}
		if n == reconcile.StoredBuckets {
			out = got
		} else if diff := cmp.Diff(out, got); diff != "" {
			t.Errorf("scan-time buckets disagree with the stored aggregates (-stored +scan-time):\n%s", diff)
		}
	}
	return out
}

// TestReplayRepairsPurgedTombstone is the deletion story end to end on the
// real write path: records recorded and corrected, delivered; two deleted,
// one tombstone delivered and the other lost on the way (the broker
// acknowledged, the projection never got it); the outbox's SENT rows and the
// tombstone rows purged by retention. Reconciliation reports exactly the lost
// one as DELETION_NOT_APPLIED; the replay delivers its tombstone at its
// version from the deletion record; after delivery the campaign is clean.
func TestReplayRepairsPurgedTombstone(t *testing.T) {
	w := newWritePath(t)
	for i := range int64(40) {
		id := 900100 + i
		out, err := w.store(id).Record(t.Context(), resultstore.RecordCommand{DataID: id, DetectID: campaign, UserID: 4, ProjectID: 3,
			SchoolID: 7 + i%3, Grade: 5, Result: "2.21", Unit: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if i%4 == 0 {
			if _, err := w.store(id).Correct(t.Context(), resultstore.CorrectCommand{SchoolID: out.Result.GetSchoolId(), DataID: id,
				ExpectedVersion: 1, Result: "2.31", Unit: "m"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.deliver(t, nil)
	const delivered, lost = 900104, 900105 // tombstones at versions 3 and 2
	var lostEvent string
	for _, id := range []int64{delivered, lost} {
		cur, err := w.store(id).Get(t.Context(), 7+(id-900100)%3, id)
		if err != nil {
			t.Fatal(err)
		}
		out, err := w.store(id).Delete(t.Context(), resultstore.DeleteCommand{SchoolID: cur.GetSchoolId(), DataID: id, ExpectedVersion: cur.GetVersion()})
		if err != nil {
			t.Fatal(err)
		}
		if id == lost {
			lostEvent = out.EventID
		}
	}
	w.deliver(t, func(ev string) bool { return ev == lostEvent })
	for i, repo := range w.repos {
		if _, err := repo.PurgeSent(t.Context(), time.Now().Add(time.Hour), 10000); err != nil {
			t.Fatal(err)
		}
		if _, err := replay.Purge(t.Context(), w.dbs[i].DB, time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.store(lost).Get(t.Context(), 7+(lost-900100)%3, lost); err == nil {
		t.Fatal("the lost tombstone's row was not purged")
	}

	want := map[int64]reconcile.Class{lost: reconcile.DeletionNotApplied}
	if diff := cmp.Diff(want, w.compare(t, reconcile.DepthContent)); diff != "" {
		t.Fatalf("before the repair (-want +got):\n%s", diff)
	}

	r := replay.New(w.m, w.src.Shards)
	shardID, version, eventID, deleted, err := r.Replay(t.Context(), lost)
	if err != nil {
		t.Fatal(err)
	}
	if shardID != w.m.Shards[w.m.Owner(lost)].ID || version != 2 || eventID != lostEvent || !deleted {
		t.Errorf("Replay = %s v%d %s deleted=%v; want the lost tombstone %s", shardID, version, eventID, deleted, lostEvent)
	}
	if n := w.deliver(t, nil); n != 1 {
		t.Errorf("delivered %d events after the replay, want the one tombstone", n)
	}
	if got := w.compare(t, reconcile.DepthContent); len(got) != 0 {
		t.Errorf("after the repair: %v; want a clean campaign", got)
	}
}
