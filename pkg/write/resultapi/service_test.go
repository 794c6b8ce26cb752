package resultapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/write/resultstore"
)

// TestCanonicalStory: record 2.21 m, correct to 2.31 m; version 2, event
// fitness-result-<id>-v2 with result 2.31, one outbox row per version whose
// event equals the committed state.
func TestCanonicalStory(t *testing.T) {
	h := newHarness(t, resultstore.Options{}, nil)
	ctx := context.Background()
	rec, err := h.client.RecordResult(ctx, recordReq("r-1", 900001, 7, "2.21"))
	if err != nil {
		t.Fatal(err)
	}
	cor, err := h.client.CorrectResult(ctx, &fitnessv1.CorrectResultRequest{
		RequestId: "c-1", SchoolId: 7, DataId: 900001, ExpectedVersion: 1, Result: "2.310", Unit: "m", Reason: "teacher correction",
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := cor.GetResult(); got.GetVersion() != 2 || got.GetResult() != "2.31" || cor.GetEventId() != "fitness-result-900001-v2" {
		t.Fatalf("correction = version %d result %q event %q; want 2, 2.31, fitness-result-900001-v2", got.GetVersion(), got.GetResult(), cor.GetEventId())
	}
	get, err := h.client.GetResult(ctx, &fitnessv1.GetResultRequest{SchoolId: 7, DataId: 900001})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cor.GetResult(), get.GetResult(), protocmp.Transform()); diff != "" {
		t.Errorf("GetResult differs from the committed correction (-want +got):\n%s", diff)
	}

	rows := h.outbox(t, 900001)
	if len(rows) != 2 {
		t.Fatalf("outbox has %d rows for 900001, want 2 (one per version)", len(rows))
	}
	for i, want := range []*fitnessv1.FitnessResult{rec.GetResult(), cor.GetResult()} {
		if diff := cmp.Diff(resultstore.Event(want), rows[i].Event, protocmp.Transform()); diff != "" {
			t.Errorf("outbox event of version %d differs from the committed state (-want +got):\n%s", i+1, diff)
		}
		if rows[i].Status != "NEW" {
			t.Errorf("outbox row %d status %q, want NEW", i+1, rows[i].Status)
		}
	}
	if rows[1].Event.GetResult() != "2.31" || rows[1].Event.GetEventId() != "fitness-result-900001-v2" || rows[1].Event.GetSchemaVersion() != 1 {
		t.Errorf("v2 event = %v", rows[1].Event)
	}
}

// TestFailureBeforeCommitLeavesNothing: failure point "crash before
// COMMIT". The fault is injected at the database boundary, on the statement
// sequence production sends: a trigger makes the last statement before
// COMMIT (the request_log insert, after the business update and the outbox
// insert) fail, so the shard rolls the whole change back.
func TestFailureBeforeCommitLeavesNothing(t *testing.T) {
	h := newHarness(t, resultstore.Options{}, nil)
	setFault := func(on bool) {
		t.Helper()
		for _, db := range h.shards {
			stmt := "DROP TRIGGER IF EXISTS inject_failure_before_commit"
			if on {
				stmt = `CREATE TRIGGER inject_failure_before_commit BEFORE INSERT ON request_log FOR EACH ROW
					SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'injected failure before COMMIT'`
			}
			if _, err := db.DB.Exec(stmt); err != nil {
				t.Fatal(err)
			}
		}
	}
	ctx := context.Background()
	if _, err := h.client.RecordResult(ctx, recordReq("r-1", 900001, 7, "2.21")); err != nil {
		t.Fatal(err)
	}
	setFault(true)
	_, err := h.client.CorrectResult(ctx, &fitnessv1.CorrectResultRequest{RequestId: "c-1", SchoolId: 7, DataId: 900001, ExpectedVersion: 1, Result: "2.31", Unit: "m"})
	if status.Code(err) != codes.Internal {
		t.Fatalf("CorrectResult with injected failure: %v, want Internal", err)
	}
	_, err = h.client.RecordResult(ctx, recordReq("r-2", 900002, 7, "1.90"))
	if status.Code(err) != codes.Internal {
		t.Fatalf("RecordResult with injected failure: %v, want Internal", err)
	}
	setFault(false)

	get, err := h.client.GetResult(ctx, &fitnessv1.GetResultRequest{SchoolId: 7, DataId: 900001})
	if err != nil {
		t.Fatal(err)
	}
	if get.GetResult().GetVersion() != 1 || get.GetResult().GetResult() != "2.21" {
		t.Errorf("after failed correction: version %d result %s, want 1 and 2.21", get.GetResult().GetVersion(), get.GetResult().GetResult())
	}
	for _, c := range []struct {
		q    string
		want int
	}{
		{"SELECT COUNT(*) FROM outbox_event WHERE data_id = 900001", 1},
		{"SELECT COUNT(*) FROM outbox_event WHERE data_id = 900002", 0},
		{"SELECT COUNT(*) FROM fitness_result WHERE data_id = 900002", 0},
		{"SELECT COUNT(*) FROM request_log", 1},
		{"SELECT COALESCE(SUM(revision), 0) FROM campaign_bucket", 1},
	} {
		if got := h.countAll(t, c.q); got != c.want {
			t.Errorf("%s over every shard = %d, want %d", c.q, got, c.want)
		}
	}
	// The same request succeeds once the fault is gone: nothing was half-written.
	cor, err := h.client.CorrectResult(ctx, &fitnessv1.CorrectResultRequest{RequestId: "c-1", SchoolId: 7, DataId: 900001, ExpectedVersion: 1, Result: "2.31", Unit: "m"})
	if err != nil || cor.GetResult().GetVersion() != 2 {
		t.Fatalf("retry after the fault: %v, %v", cor, err)
	}
}

// TestConcurrentCorrections: 50 corrections with the same expected version
// commit exactly once; 50 writers that re-read and retry produce versions
// 1..N with no gaps or repeats and one outbox row per version.
func TestConcurrentCorrections(t *testing.T) {
	h := newHarness(t, resultstore.Options{}, nil)
	ctx := context.Background()
	if _, err := h.client.RecordResult(ctx, recordReq("r-1", 900001, 7, "2.21")); err != nil {
		t.Fatal(err)
	}
	const n = 50
	var ok, conflicts atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := h.client.CorrectResult(ctx, &fitnessv1.CorrectResultRequest{
				RequestId: fmt.Sprintf("same-%d", i), SchoolId: 7, DataId: 900001, ExpectedVersion: 1,
				Result: fmt.Sprintf("2.%02d", i), Unit: "m",
			})
			switch st := status.Convert(err); st.Code() {
			case codes.OK:
				ok.Add(1)
			case codes.Aborted:
				var vc *fitnessv1.VersionConflict
				for _, d := range st.Details() {
					if c, isVC := d.(*fitnessv1.VersionConflict); isVC {
						vc = c
					}
				}
				if vc == nil || vc.GetCurrentVersion() != 2 || vc.GetExpectedVersion() != 1 {
					t.Errorf("conflict details = %v, want current 2 expected 1", st.Details())
				}
				conflicts.Add(1)
			default:
				t.Errorf("CorrectResult: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || conflicts.Load() != n-1 {
		t.Fatalf("same expected version: %d succeeded, %d conflicted; want 1 and %d", ok.Load(), conflicts.Load(), n-1)
	}

	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for attempt := 0; ; attempt++ {
				if attempt > 500 {
					t.Errorf("writer %d gave up", i)
					return
				}
				cur, err := h.client.GetResult(ctx, &fitnessv1.GetResultRequest{SchoolId: 7, DataId: 900001})
				if err != nil {
					t.Error(err)
					return
				}
				_, err = h.client.CorrectResult(ctx, &fitnessv1.CorrectResultRequest{
					RequestId: fmt.Sprintf("retry-%d-%d", i, attempt), SchoolId: 7, DataId: 900001,
					ExpectedVersion: cur.GetResult().GetVersion(), Result: fmt.Sprintf("3.%02d", i), Unit: "m",
				})
				if err == nil {
					return
				}
				if status.Code(err) != codes.Aborted {
					t.Errorf("writer %d: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	want := int64(2 + n)
	rows := h.outbox(t, 900001)
	if int64(len(rows)) != want {
		t.Fatalf("outbox rows = %d, want %d", len(rows), want)
	}
	for i, r := range rows {
		if r.Version != int64(i+1) || r.Event.GetVersion() != r.Version {
			t.Fatalf("outbox versions have a gap or repeat at %d: row version %d, event version %d", i, r.Version, r.Event.GetVersion())
		}
	}
	get, err := h.client.GetResult(ctx, &fitnessv1.GetResultRequest{SchoolId: 7, DataId: 900001})
	if err != nil || get.GetResult().GetVersion() != want {
		t.Fatalf("final version = %v, %v; want %d", get.GetResult().GetVersion(), err, want)
	}
	if !proto.Equal(resultstore.Event(get.GetResult()), rows[len(rows)-1].Event) {
		t.Errorf("latest outbox event %v differs from the current state %v", rows[len(rows)-1].Event, get.GetResult())
	}
}

// TestRoutingAndShardDown: every record lands on the shard its data_id
// routes to, whatever its school (each school here has records on both
// shards); a shard that is down fails only the requests of the data ids it
// owns, with UNAVAILABLE, and every list — a school's results span every
// shard — fails rather than return a partial list.
func TestRoutingAndShardDown(t *testing.T) {
	h := newHarness(t, resultstore.Options{}, nil)
	ctx := context.Background()
	records := []struct{ id, school int64 }{
		{h.idOwnedBy(0, 900010), 10}, {h.idOwnedBy(1, 900010), 10},
		{h.idOwnedBy(0, 900020), 11}, {h.idOwnedBy(1, 900020), 11},
	}
	for _, r := range records {
		if _, err := h.client.RecordResult(ctx, recordReq(fmt.Sprint("r-", r.id), r.id, r.school, "2.00")); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range records {
		own, other := h.owner(r.id), h.other(r.id)
		if h.count(t, own, "SELECT COUNT(*) FROM fitness_result WHERE data_id = ? AND school_id = ?", r.id, r.school) != 1 ||
			h.count(t, own, "SELECT COUNT(*) FROM outbox_event WHERE data_id = ?", r.id) != 1 ||
			h.count(t, own, "SELECT COUNT(*) FROM request_log WHERE data_id = ?", r.id) != 1 {
			t.Errorf("data id %d (school %d): result, outbox row or request log missing on its shard %s", r.id, r.school, own.Name)
		}
		if h.count(t, other, "SELECT COUNT(*) FROM fitness_result WHERE data_id = ?", r.id) != 0 ||
			h.count(t, other, "SELECT COUNT(*) FROM outbox_event WHERE data_id = ?", r.id) != 0 {
			t.Errorf("data id %d (school %d): found on the other shard %s", r.id, r.school, other.Name)
		}
		get, err := h.client.GetResult(ctx, &fitnessv1.GetResultRequest{SchoolId: r.school, DataId: r.id})
		if err != nil || get.GetResult().GetShardId() != h.m.Shards[h.m.Owner(r.id)].ID {
			t.Errorf("GetResult(%d) = %v, %v; want it from %s", r.id, get, err, h.m.Shards[h.m.Owner(r.id)].ID)
		}
	}

	down := newHarness(t, resultstore.Options{}, map[int]string{1: "resultsync:resultsync@tcp(127.0.0.1:1)/nowhere?timeout=1s"})
	// One school, one record on each shard: the data id decides, not the school.
	const school = 10
	upID, downID := down.idOwnedBy(0, 900100), down.idOwnedBy(1, 900100) // shard-0 up, shard-1 down
	if _, err := down.client.RecordResult(ctx, recordReq("up", upID, school, "2.00")); err != nil {
		t.Errorf("write to the healthy shard failed: %v", err)
	}
	if _, err := down.client.GetResult(ctx, &fitnessv1.GetResultRequest{SchoolId: school, DataId: upID}); err != nil {
		t.Errorf("read from the healthy shard failed: %v", err)
	}
	if _, err := down.client.CorrectResult(ctx, &fitnessv1.CorrectResultRequest{RequestId: "up-c", SchoolId: school, DataId: upID,
		ExpectedVersion: 1, Result: "2.10", Unit: "m"}); err != nil {
		t.Errorf("correction on the healthy shard failed: %v", err)
	}
	_, err := down.client.RecordResult(ctx, recordReq("down", downID, school, "2.00"))
	if status.Code(err) != codes.Unavailable {
		t.Errorf("write to the down shard: %v, want Unavailable", err)
	}
	_, err = down.client.GetResult(ctx, &fitnessv1.GetResultRequest{SchoolId: school, DataId: downID})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("read from the down shard: %v, want Unavailable", err)
	}
	_, err = down.client.ListResults(ctx, &fitnessv1.ListResultsRequest{DetectId: 10001})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("campaign list with a shard down: %v, want Unavailable (a partial list would look complete)", err)
	}
	_, err = down.client.ListResults(ctx, &fitnessv1.ListResultsRequest{DetectId: 10001, SchoolId: school})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("school list with a shard down: %v, want Unavailable (the school has results on every shard)", err)
	}
}

// TestSameDataIDUnderTwoSchoolsIsRefused reproduces a silent loss of a
// result: routed by school, data_id X under school 7 and X under school 8
// went to two shards and both were accepted, and downstream (event id, the
// ClickHouse key, reconciliation: all keyed by data_id) collapsed them into
// one row. Routed by data_id, the second is refused with ALREADY_EXISTS,
// writes nothing on any shard, and the first stays intact.
func TestSameDataIDUnderTwoSchoolsIsRefused(t *testing.T) {
	h := newHarness(t, resultstore.Options{}, nil)
	ctx := context.Background()
	const id = 900001
	if n := int64(len(h.shards)); 7%n == 8%n {
		t.Fatal("schools 7 and 8 shared a shard under routing by school; the test needs them apart")
	}
	first, err := h.client.RecordResult(ctx, recordReq("r-7", id, 7, "2.21"))
	if err != nil {
		t.Fatal(err)
	}
	before := h.tables(t)

	second := recordReq("r-8", id, 8, "1.95")
	second.UserId = 5
	for attempt := range 2 { // a retry of the refused request is refused again, never replayed
		st := status.Convert(func() error { _, err := h.client.RecordResult(ctx, second); return err }())
		if st.Code() != codes.AlreadyExists {
			t.Fatalf("attempt %d: data id %d under school 8 after school 7: %s %q, want AlreadyExists", attempt, id, st.Code(), st.Message())
		}
		if want := fmt.Sprintf("data_id %d is already taken", id); !strings.Contains(st.Message(), want) {
			t.Errorf("attempt %d: message %q does not say %q", attempt, st.Message(), want)
		}
	}
	// The first request's id reused for the other school's record is refused too.
	reused := proto.Clone(second).(*fitnessv1.RecordResultRequest)
	reused.RequestId = "r-7"
	if _, err := h.client.RecordResult(ctx, reused); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("request id r-7 reused for school 8: %v, want FailedPrecondition", err)
	}

	if diff := cmp.Diff(before, h.tables(t)); diff != "" {
		t.Errorf("the refused records wrote something (-before +after):\n%s", diff)
	}
	for _, c := range []string{
		"SELECT COUNT(*) FROM fitness_result WHERE school_id = 8",
		"SELECT COUNT(*) FROM request_log WHERE request_id = 'r-8'",
		"SELECT COUNT(*) FROM outbox_event WHERE data_id = 900001 AND version > 1",
	} {
		if n := h.countAll(t, c); n != 0 {
			t.Errorf("%s over every shard = %d, want 0", c, n)
		}
	}
	if n := h.count(t, h.other(id), "SELECT COUNT(*) FROM outbox_event WHERE data_id = ?", id); n != 0 {
		t.Errorf("outbox rows of %d on the shard not owning it = %d, want 0", id, n)
	}

	get, err := h.client.GetResult(ctx, &fitnessv1.GetResultRequest{SchoolId: 7, DataId: id})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first.GetResult(), get.GetResult(), protocmp.Transform()); diff != "" {
		t.Errorf("school 7's record changed (-recorded +now):\n%s", diff)
	}
	rows := h.outbox(t, id)
	if len(rows) != 1 {
		t.Fatalf("outbox rows of %d = %d, want 1 (school 7's version 1)", id, len(rows))
	}
	if diff := cmp.Diff(resultstore.Event(first.GetResult()), rows[0].Event, protocmp.Transform()); diff != "" {
		t.Errorf("outbox event differs from school 7's record (-want +got):\n%s", diff)
	}
	if _, err := h.client.GetResult(ctx, &fitnessv1.GetResultRequest{SchoolId: 8, DataId: id}); status.Code(err) != codes.NotFound {
		t.Errorf("GetResult for school 8: %v, want NotFound", err)
	}
	list, err := h.client.ListResults(ctx, &fitnessv1.ListResultsRequest{DetectId: 10001, SchoolId: 8})
	if err != nil || len(list.GetResults()) != 0 {
		t.Errorf("school 8's list = %v, %v; want empty", list.GetResults(), err)
	}
}

// TestWrongSchoolCannotTouchRecord: a correction, deletion or read naming
// another school than the record's is NOT_FOUND and changes nothing, on a
// server that knows the record's identity (cached) and on a cold one; the
// record's own school still can.
func TestWrongSchoolCannotTouchRecord(t *testing.T) {
	h := newHarness(t, resultstore.Options{}, nil)
	ctx := context.Background()
	const id = 900001
	rec, err := h.client.RecordResult(ctx, recordReq("r-1", id, 7, "2.21"))
	if err != nil {
		t.Fatal(err)
	}
	before := h.tables(t)
	servers := []struct {
		name   string
		client fitnessv1.ResultServiceClient
	}{
		{"warm", h.client},
		{"cold", serve(t, h.m, resultstore.Options{})},
	}
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			_, err := srv.client.CorrectResult(ctx, &fitnessv1.CorrectResultRequest{RequestId: srv.name + "-c", SchoolId: 8, DataId: id,
				ExpectedVersion: 1, Result: "2.31", Unit: "m"})
			if status.Code(err) != codes.NotFound {
				t.Errorf("correction by school 8: %v, want NotFound", err)
			}
			_, err = srv.client.DeleteResult(ctx, &fitnessv1.DeleteResultRequest{RequestId: srv.name + "-d", SchoolId: 8, DataId: id, ExpectedVersion: 1})
			if status.Code(err) != codes.NotFound {
				t.Errorf("deletion by school 8: %v, want NotFound", err)
			}
			if _, err := srv.client.GetResult(ctx, &fitnessv1.GetResultRequest{SchoolId: 8, DataId: id}); status.Code(err) != codes.NotFound {
				t.Errorf("read by school 8: %v, want NotFound", err)
			}
		})
	}
	if diff := cmp.Diff(before, h.tables(t)); diff != "" {
		t.Errorf("requests of the wrong school wrote something (-before +after):\n%s", diff)
	}
	get, err := h.client.GetResult(ctx, &fitnessv1.GetResultRequest{SchoolId: 7, DataId: id})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rec.GetResult(), get.GetResult(), protocmp.Transform()); diff != "" {
		t.Errorf("record changed by another school's requests (-recorded +now):\n%s", diff)
	}
	cor, err := h.client.CorrectResult(ctx, &fitnessv1.CorrectResultRequest{RequestId: "c-7", SchoolId: 7, DataId: id, ExpectedVersion: 1, Result: "2.31", Unit: "m"})
	if err != nil || cor.GetResult().GetVersion() != 2 {
		t.Fatalf("correction by the record's school: %v, %v", cor, err)
	}
}

// TestRecordsSpreadOverBothShards: 300 records of two schools, with ids in
// steps of 1024 — all in one reconciliation bucket, and all even, so data_id
// mod 2 would put every one on shard-0 — land on both shards, each exactly on
// the shard its data_id routes to; a school's list, which reads every shard,
// pages through its own records once each, in data_id order.
func TestRecordsSpreadOverBothShards(t *testing.T) {
	h := newHarness(t, resultstore.Options{}, nil)
	ctx := context.Background()
	const n = 300
	type record struct{ id, school int64 }
	var records []record
	want := make([][]int64, len(h.shards)) // ids per owning shard
	bySchool := map[int64][]int64{}
	for k := range int64(n) {
		r := record{id: 1_024_000 + k*1024, school: 7 + k%2}
		records = append(records, r)
		want[h.m.Owner(r.id)] = append(want[h.m.Owner(r.id)], r.id)
		bySchool[r.school] = append(bySchool[r.school], r.id)
	}
	var wg sync.WaitGroup
	next := make(chan record)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range next {
				if _, err := h.client.RecordResult(ctx, recordReq(fmt.Sprint("r-", r.id), r.id, r.school, "2.00")); err != nil {
					t.Errorf("RecordResult(%d): %v", r.id, err)
				}
			}
		}()
	}
	for _, r := range records {
		next <- r
	}
	close(next)
	wg.Wait()

	for i, db := range h.shards {
		if len(want[i]) < n/3 {
			t.Errorf("shard %d owns %d of %d ids, want about half", i, len(want[i]), n)
		}
		for _, table := range []string{"fitness_result", "outbox_event", "request_log"} {
			var got []int64
			rows, err := db.DB.QueryContext(ctx, "SELECT data_id FROM "+table+" ORDER BY data_id")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					t.Fatal(err)
				}
				got = append(got, id)
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want[i], got); diff != "" {
				t.Errorf("%s ids on shard %d (-owned +stored):\n%s", table, i, diff)
			}
		}
		for _, school := range []int64{7, 8} {
			if h.count(t, db, "SELECT COUNT(*) FROM fitness_result WHERE school_id = ?", school) == 0 {
				t.Errorf("shard %d has no record of school %d; the list test below needs both shards", i, school)
			}
		}
	}

	for _, school := range []int64{7, 8} {
		var got []int64
		token := ""
		for pages := 0; ; pages++ {
			if pages > n {
				t.Fatal("too many pages")
			}
			resp, err := h.client.ListResults(ctx, &fitnessv1.ListResultsRequest{DetectId: 10001, SchoolId: school, PageSize: 37, PageToken: token})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range resp.GetResults() {
				if r.GetSchoolId() != school {
					t.Errorf("school %d's list holds %d of school %d", school, r.GetDataId(), r.GetSchoolId())
				}
				got = append(got, r.GetDataId())
			}
			if token = resp.GetNextPageToken(); token == "" {
				break
			}
		}
		if diff := cmp.Diff(bySchool[school], got); diff != "" {
			t.Errorf("school %d's paged ids (-want +got):\n%s", school, diff)
		}
	}
}

// TestValidation: every bad request is INVALID_ARGUMENT naming the field,
// and nothing is written.
func TestValidation(t *testing.T) {
	h := newHarness(t, resultstore.Options{}, nil)
	ctx := context.Background()
	if _, err := h.client.RecordResult(ctx, recordReq("seed", 900001, 7, "2.21")); err != nil {
		t.Fatal(err)
	}
	long := string(make([]byte, 65))
	rec := func(mod func(r *fitnessv1.RecordResultRequest)) func() error {
		return func() error {
			r := recordReq("v", 900002, 7, "2.21")
			mod(r)
			_, err := h.client.RecordResult(ctx, r)
			return err
		}
	}
	cor := func(mod func(r *fitnessv1.CorrectResultRequest)) func() error {
		return func() error {
			r := &fitnessv1.CorrectResultRequest{RequestId: "v", SchoolId: 7, DataId: 900001, ExpectedVersion: 1, Result: "2.31", Unit: "m"}
			mod(r)
			_, err := h.client.CorrectResult(ctx, r)
			return err
		}
	}
	tests := []struct {
		name  string
		call  func() error
		field string
	}{
		{"missing request id", rec(func(r *fitnessv1.RecordResultRequest) { r.RequestId = "" }), "request_id"},
		{"oversize request id", rec(func(r *fitnessv1.RecordResultRequest) { r.RequestId = long }), "request_id"},
		{"missing data id", rec(func(r *fitnessv1.RecordResultRequest) { r.DataId = 0 }), "data_id"},
		{"missing campaign", rec(func(r *fitnessv1.RecordResultRequest) { r.DetectId = 0 }), "detect_id"},
		{"missing school", rec(func(r *fitnessv1.RecordResultRequest) { r.SchoolId = -1 }), "school_id"},
		{"bad grade", rec(func(r *fitnessv1.RecordResultRequest) { r.Grade = 13 }), "grade"},
		{"unknown project", rec(func(r *fitnessv1.RecordResultRequest) { r.ProjectId = 99 }), "project_id"},
		{"unknown unit", rec(func(r *fitnessv1.RecordResultRequest) { r.Unit = "furlong" }), "unit"},
		{"unit of another project", rec(func(r *fitnessv1.RecordResultRequest) { r.Unit = "s" }), "unit"},
		{"oversize unit", rec(func(r *fitnessv1.RecordResultRequest) { r.Unit = "mmmmmmmmmmmmmmmmmmmmmmmmmmmmmm" }), "unit"},
		{"not a number", rec(func(r *fitnessv1.RecordResultRequest) { r.Result = "NaN" }), "result"},
		{"infinite", rec(func(r *fitnessv1.RecordResultRequest) { r.Result = "Inf" }), "result"},
		{"exponent", rec(func(r *fitnessv1.RecordResultRequest) { r.Result = "2e0" }), "result"},
		{"too many decimals", rec(func(r *fitnessv1.RecordResultRequest) { r.Result = "2.2101" }), "result"},
		{"out of range", rec(func(r *fitnessv1.RecordResultRequest) { r.Result = "31.00" }), "result"},
		{"negative jump", rec(func(r *fitnessv1.RecordResultRequest) { r.Result = "-0.5" }), "result"},
		{"correct: no expected version", cor(func(r *fitnessv1.CorrectResultRequest) { r.ExpectedVersion = 0 }), "expected_version"},
		{"correct: bad decimal", cor(func(r *fitnessv1.CorrectResultRequest) { r.Result = "2.3.1" }), "result"},
		{"correct: unit of another project", cor(func(r *fitnessv1.CorrectResultRequest) { r.Unit = "kg" }), "unit"},
		{"correct: out of range", cor(func(r *fitnessv1.CorrectResultRequest) { r.Result = "9" }), "result"},
		{"correct: oversize reason", cor(func(r *fitnessv1.CorrectResultRequest) { r.Reason = string(make([]byte, 600)) }), "reason"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := status.Convert(tc.call())
			if st.Code() != codes.InvalidArgument {
				t.Fatalf("code = %s (%s), want InvalidArgument", st.Code(), st.Message())
			}
			var fields []string
			for _, d := range st.Details() {
				if br, ok := d.(*errdetails.BadRequest); ok {
					for _, v := range br.GetFieldViolations() {
						fields = append(fields, v.GetField())
					}
				}
			}
			found := false
			for _, f := range fields {
				found = found || f == tc.field
			}
			if !found {
				t.Errorf("violations %v do not name %q", fields, tc.field)
			}
		})
	}
	if n := h.countAll(t, "SELECT COUNT(*) FROM outbox_event"); n != 1 {
		t.Errorf("outbox rows after invalid requests = %d, want 1 (the seed)", n)
	}
	if n := h.countAll(t, "SELECT COUNT(*) FROM fitness_result"); n != 1 {
		t.Errorf("results after invalid records = %d, want 1 (the seed)", n)
	}
	if n := h.countAll(t, "SELECT COUNT(*) FROM fitness_result WHERE version <> 1"); n != 0 {
		t.Errorf("results not at version 1 after invalid corrections = %d, want 0", n)
	}
}

// TestIdempotentRetries: a retried command returns the original outcome and
// writes nothing new; a reused request id with other content is refused.
func TestIdempotentRetries(t *testing.T) {
	h := newHarness(t, resultstore.Options{}, nil)
	ctx := context.Background()
	first, err := h.client.RecordResult(ctx, recordReq("r-1", 900001, 7, "2.21"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := h.client.RecordResult(ctx, recordReq("r-1", 900001, 7, "2.21"))
	if err != nil {
		t.Fatalf("retried RecordResult: %v", err)
	}
	if diff := cmp.Diff(first, again, protocmp.Transform()); diff != "" {
		t.Errorf("retried RecordResult outcome differs (-first +retry):\n%s", diff)
	}
	c := &fitnessv1.CorrectResultRequest{RequestId: "c-1", SchoolId: 7, DataId: 900001, ExpectedVersion: 1, Result: "2.31", Unit: "m"}
	c1, err := h.client.CorrectResult(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := h.client.CorrectResult(ctx, c)
	if err != nil {
		t.Fatalf("retried CorrectResult: %v", err)
	}
	if diff := cmp.Diff(c1, c2, protocmp.Transform()); diff != "" {
		t.Errorf("retried CorrectResult outcome differs (-first +retry):\n%s", diff)
	}
	if rows := h.outbox(t, 900001); len(rows) != 2 {
		t.Errorf("outbox rows = %d, want 2", len(rows))
	}
	// Request ids are scoped to the shard owning the record: a reuse is
	// detected for another record of the same shard.
	sameShard := h.idOwnedBy(h.m.Owner(900001), 900002)
	_, err = h.client.RecordResult(ctx, recordReq("r-1", sameShard, 7, "2.50"))
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("request id reused for another record (%d, same shard): %v, want FailedPrecondition", sameShard, err)
	}
	_, err = h.client.RecordResult(ctx, recordReq("r-2", 900001, 7, "2.21"))
	if status.Code(err) != codes.AlreadyExists {
		t.Errorf("second record of the same data id: %v, want AlreadyExists", err)
	}
}

// TestDeleteWritesTombstone: deletion is a new version with is_deleted, the
// row is kept, lists hide it unless asked, and it cannot be corrected.
func TestDeleteWritesTombstone(t *testing.T) {
	h := newHarness(t, resultstore.Options{}, nil)
	ctx := context.Background()
	if _, err := h.client.RecordResult(ctx, recordReq("r-1", 900001, 7, "2.21")); err != nil {
		t.Fatal(err)
	}
	del, err := h.client.DeleteResult(ctx, &fitnessv1.DeleteResultRequest{RequestId: "d-1", SchoolId: 7, DataId: 900001, ExpectedVersion: 1, Reason: "wrong student"})
	if err != nil {
		t.Fatal(err)
	}
	if !del.GetResult().GetIsDeleted() || del.GetResult().GetVersion() != 2 || del.GetEventId() != "fitness-result-900001-v2" {
		t.Errorf("delete outcome = %v", del)
	}
	rows := h.outbox(t, 900001)
	if len(rows) != 2 || !rows[1].Event.GetIsDeleted() || rows[1].Event.GetResult() != "2.21" {
		t.Errorf("tombstone event = %v, want is_deleted with the last business fields", rows)
	}
	_, err = h.client.CorrectResult(ctx, &fitnessv1.CorrectResultRequest{RequestId: "c-1", SchoolId: 7, DataId: 900001, ExpectedVersion: 2, Result: "2.31", Unit: "m"})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("correcting a deleted result: %v, want FailedPrecondition", err)
	}
	list, err := h.client.ListResults(ctx, &fitnessv1.ListResultsRequest{DetectId: 10001})
	if err != nil || len(list.GetResults()) != 0 {
		t.Errorf("list without deleted = %v, %v; want empty", list.GetResults(), err)
	}
	list, err = h.client.ListResults(ctx, &fitnessv1.ListResultsRequest{DetectId: 10001, ShowDeleted: true})
	if err != nil || len(list.GetResults()) != 1 {
		t.Errorf("list with deleted = %v, %v; want the tombstone", list.GetResults(), err)
	}
	if _, err := h.client.GetResult(ctx, &fitnessv1.GetResultRequest{SchoolId: 8, DataId: 900001}); status.Code(err) != codes.NotFound {
		t.Errorf("get with the wrong school: %v, want NotFound", err)
	}
}

// A data_id whose tombstone was purged (its deletion kept in deletion_log)
// cannot be recorded again: at version 1 it would rank below the purged
// tombstone's version downstream and never be seen. The refusal is the
// ALREADY_EXISTS of a taken id, and nothing is written.
func TestPurgedDataIDIsNeverRecordedAgain(t *testing.T) {
	h := newHarness(t, resultstore.Options{}, nil)
	ctx := context.Background()
	const id = 900001
	if _, err := h.client.RecordResult(ctx, recordReq("r-1", id, 7, "2.21")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.DeleteResult(ctx, &fitnessv1.DeleteResultRequest{RequestId: "d-1", SchoolId: 7, DataId: id, ExpectedVersion: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.owner(id).DB.Exec("DELETE FROM fitness_result WHERE data_id = ?", id); err != nil { // the retention purge
		t.Fatal(err)
	}
	before := h.tables(t)
	for _, school := range []int64{7, 8} {
		_, err := h.client.RecordResult(ctx, recordReq(fmt.Sprintf("r-again-%d", school), id, school, "2.50"))
		st := status.Convert(err)
		if st.Code() != codes.AlreadyExists || !strings.Contains(st.Message(), fmt.Sprintf("data_id %d is already taken", id)) {
			t.Errorf("recording purged %d again under school %d: %s %q, want AlreadyExists", id, school, st.Code(), st.Message())
		}
	}
	if diff := cmp.Diff(before, h.tables(t)); diff != "" {
		t.Errorf("the refused records wrote something (-before +after):\n%s", diff)
	}
	if n := h.countAll(t, "SELECT COUNT(*) FROM deletion_log WHERE data_id = 900001 AND version = 2"); n != 1 {
		t.Errorf("deletion records of %d at v2 = %d, want 1", id, n)
	}
}

// TestListPaginatesAcrossShards walks a campaign spread over both shards in
// pages and gets every result once, in data_id order.
func TestListPaginatesAcrossShards(t *testing.T) {
	h := newHarness(t, resultstore.Options{}, nil)
	ctx := context.Background()
	var want []int64
	for i := range int64(23) {
		id := 900100 + i
		if _, err := h.client.RecordResult(ctx, recordReq(fmt.Sprint("r-", id), id, 10+i%5, "2.00")); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	var got []int64
	token := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("too many pages")
		}
		resp, err := h.client.ListResults(ctx, &fitnessv1.ListResultsRequest{DetectId: 10001, PageSize: 5, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range resp.GetResults() {
			got = append(got, r.GetDataId())
		}
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paged ids (-want +got):\n%s", diff)
	}
	_, err := h.client.ListResults(ctx, &fitnessv1.ListResultsRequest{DetectId: 10002, PageToken: "garbage!"})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("garbage page token: %v, want InvalidArgument", err)
	}
	resp, _ := h.client.ListResults(ctx, &fitnessv1.ListResultsRequest{DetectId: 10001, PageSize: 5})
	_, err = h.client.ListResults(ctx, &fitnessv1.ListResultsRequest{DetectId: 10001, SchoolId: 10, PageSize: 5, PageToken: resp.GetNextPageToken()})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("page token of another query: %v, want InvalidArgument", err)
	}
}

// TestColdAndWarmCorrectionPaths: a server that never saw a record (after a
// restart) corrects it through the locking path, then through the one-round-
// trip path; both leave one outbox row per version equal to the committed state.
func TestColdAndWarmCorrectionPaths(t *testing.T) {
	h := newHarness(t, resultstore.Options{}, nil)
	ctx := context.Background()
	if _, err := h.client.RecordResult(ctx, recordReq("r-1", 900001, 7, "2.21")); err != nil {
		t.Fatal(err)
	}
	stores, closeAll, err := OpenStores(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), h.m, 4, resultstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	restarted := NewService(h.m, stores) // cold identity cache
	ctx = platformWide(ctx)
	for v := int64(1); v <= 3; v++ {
		out, err := restarted.CorrectResult(ctx, &fitnessv1.CorrectResultRequest{RequestId: fmt.Sprint("c-", v), SchoolId: 7, DataId: 900001,
			ExpectedVersion: v, Result: fmt.Sprintf("2.%d1", v+2), Unit: "m"})
		if err != nil || out.GetResult().GetVersion() != v+1 {
			t.Fatalf("correction %d: %v, %v", v, out, err)
		}
	}
	_, err = restarted.CorrectResult(ctx, &fitnessv1.CorrectResultRequest{RequestId: "stale", SchoolId: 7, DataId: 900001, ExpectedVersion: 2, Result: "2.99", Unit: "m"})
	if status.Code(err) != codes.Aborted {
		t.Errorf("stale correction on the warm path: %v, want Aborted", err)
	}
	rows := h.outbox(t, 900001)
	if len(rows) != 4 {
		t.Fatalf("outbox rows = %d, want 4", len(rows))
	}
	get, err := h.client.GetResult(ctx, &fitnessv1.GetResultRequest{SchoolId: 7, DataId: 900001})
	if err != nil || get.GetResult().GetResult() != "2.51" {
		t.Fatalf("current = %v, %v", get, err)
	}
	if diff := cmp.Diff(resultstore.Event(get.GetResult()), rows[3].Event, protocmp.Transform()); diff != "" {
		t.Errorf("latest outbox event differs from the committed state (-want +got):\n%s", diff)
	}
}

// TestRefusedRecordDoesNotPoisonTheEvent: a RecordResult refused because the
// data id exists (with other fields) must not change what later events say
// about the record: the outbox event still equals the committed state.
func TestRefusedRecordDoesNotPoisonTheEvent(t *testing.T) {
	h := newHarness(t, resultstore.Options{}, nil)
	ctx := context.Background()
	if _, err := h.client.RecordResult(ctx, recordReq("r-1", 900001, 7, "2.21")); err != nil {
		t.Fatal(err)
	}
	other := recordReq("r-2", 900001, 7, "2.50")
	other.UserId, other.Grade, other.DetectId = 99, 11, 77777
	if _, err := h.client.RecordResult(ctx, other); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("second record of 900001: %v, want AlreadyExists", err)
	}
	cor, err := h.client.CorrectResult(ctx, &fitnessv1.CorrectResultRequest{RequestId: "c-1", SchoolId: 7, DataId: 900001, ExpectedVersion: 1, Result: "2.31", Unit: "m"})
	if err != nil {
		t.Fatal(err)
	}
	get, err := h.client.GetResult(ctx, &fitnessv1.GetResultRequest{SchoolId: 7, DataId: 900001})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(get.GetResult(), cor.GetResult(), protocmp.Transform()); diff != "" {
		t.Errorf("correction outcome differs from the committed state (-committed +outcome):\n%s", diff)
	}
	rows := h.outbox(t, 900001)
	if diff := cmp.Diff(resultstore.Event(get.GetResult()), rows[len(rows)-1].Event, protocmp.Transform()); diff != "" {
		t.Errorf("v2 event differs from the committed state (-want +got):\n%s", diff)
	}
}
