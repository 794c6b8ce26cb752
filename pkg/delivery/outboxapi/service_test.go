package outboxapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/delivery/outboxapi"
	"github.com/resultsync/resultsync/pkg/platform/audit"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/idempotency"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/outboxtest"
)

type fixture struct {
	svc     *outboxapi.Service
	repos   []*outbox.Repo
	control *infratest.MySQLDatabase
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	var repos []*outbox.Repo
	for _, id := range []string{"shard-0", "shard-1"} {
		db := infratest.NewMySQLDatabase(t, schema.Shard)
		repos = append(repos, outbox.NewRepo(id, db.DB))
		if _, err := outboxtest.Fill(context.Background(), db.DB, id, 900000, 25); err != nil {
			t.Fatal(err)
		}
	}
	control := infratest.NewMySQLDatabase(t, schema.Control)
	return fixture{svc: outboxapi.New(repos, audit.New(control.DB), outboxapi.WithIdempotency(idempotency.New(control.DB, idempotency.Options{}))), repos: repos, control: control}
}

func operator() context.Context {
	return auth.WithPrincipal(context.Background(), auth.Principal{Subject: "ops-alice", Role: auth.RoleOperator, Platform: true})
}

func TestListPaginatesAndFilters(t *testing.T) {
	f := newFixture(t)
	ctx := operator()
	if _, err := f.repos[0].Claim(ctx, 5, time.Minute); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	tok := ""
	for page := 0; page < 10; page++ {
		resp, err := f.svc.ListOutboxEvents(ctx, &fitnessv1.ListOutboxEventsRequest{ShardId: "shard-0", PageSize: 7, PageToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.GetEvents() {
			ids = append(ids, e.GetId())
		}
		if tok = resp.GetNextPageToken(); tok == "" {
			break
		}
	}
	if len(ids) != 25 || ids[0] != 1 || ids[24] != 25 {
		t.Errorf("paged ids = %v, want 1..25", ids)
	}
	resp, err := f.svc.ListOutboxEvents(ctx, &fitnessv1.ListOutboxEventsRequest{ShardId: "shard-0", Status: fitnessv1.OutboxStatus_OUTBOX_STATUS_PROCESSING})
	if err != nil || len(resp.GetEvents()) != 5 || resp.GetEvents()[0].GetLeaseExpireTime() == nil {
		t.Errorf("PROCESSING filter = %d events (%v), want 5 with lease times", len(resp.GetEvents()), err)
	}
	for _, tc := range []struct {
		req  *fitnessv1.ListOutboxEventsRequest
		code codes.Code
	}{
		{&fitnessv1.ListOutboxEventsRequest{}, codes.InvalidArgument},
		{&fitnessv1.ListOutboxEventsRequest{ShardId: "shard-9"}, codes.NotFound},
		{&fitnessv1.ListOutboxEventsRequest{ShardId: "shard-0", PageToken: "bogus"}, codes.InvalidArgument},
		{&fitnessv1.ListOutboxEventsRequest{ShardId: "shard-0", PageSize: -1}, codes.InvalidArgument},
		{&fitnessv1.ListOutboxEventsRequest{ShardId: "shard-0", Status: 42}, codes.InvalidArgument},
	} {
		if _, err := f.svc.ListOutboxEvents(ctx, tc.req); status.Code(err) != tc.code {
			t.Errorf("ListOutboxEvents(%v) = %v, want %s", tc.req, err, tc.code)
		}
	}
}

func TestStatsShowBacklogAgeAndExpiredClaims(t *testing.T) {
	f := newFixture(t)
	ctx := operator()
	if _, err := f.repos[1].Claim(ctx, 3, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	resp, err := f.svc.GetOutboxStats(ctx, &fitnessv1.GetOutboxStatsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetShards()) != 2 {
		t.Fatalf("stats for %d shards, want 2", len(resp.GetShards()))
	}
	s1 := resp.GetShards()[1]
	if s1.GetShardId() != "shard-1" || s1.GetNewCount() != 22 || s1.GetProcessingCount() != 3 || s1.GetExpiredClaims() != 3 {
		t.Errorf("shard-1 stats = %v; want 22 NEW, 3 PROCESSING, 3 expired claims", s1)
	}
	if s1.GetOldestUnsentAge().AsDuration() < 50*time.Millisecond {
		t.Errorf("oldest unsent age = %s, want >= 50ms", s1.GetOldestUnsentAge().AsDuration())
	}
}

func TestReplayIsExplicitAndAudited(t *testing.T) {
	f := newFixture(t)
	ctx := operator()
	c, err := f.repos[0].Claim(ctx, 4, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ids := []int64{c.Rows[0].ID, c.Rows[1].ID, c.Rows[2].ID, c.Rows[3].ID}
	if _, p, err := f.repos[0].MarkFailed(ctx, c.Token, ids, "broker down", 1, outbox.Backoff{Base: time.Millisecond, Max: time.Millisecond}); err != nil || p != 4 {
		t.Fatalf("parking: %d, %v", p, err)
	}
	if _, err := f.svc.ReplayParkedEvents(ctx, &fitnessv1.ReplayParkedEventsRequest{ShardId: "shard-0"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("replay without a reason: %v, want InvalidArgument", err)
	}
	resp, err := f.svc.ReplayParkedEvents(ctx, &fitnessv1.ReplayParkedEventsRequest{ShardId: "shard-0", Ids: ids[:2], Reason: "broker fixed, INC-42"})
	if err != nil || resp.GetReplayedCount() != 2 || resp.GetAuditId() == "" {
		t.Fatalf("replay = %v, %v; want 2 rows and an audit id", resp, err)
	}
	st, err := f.svc.GetOutboxStats(ctx, &fitnessv1.GetOutboxStatsRequest{ShardId: "shard-0"})
	if err != nil || st.GetShards()[0].GetParkedCount() != 2 || st.GetShards()[0].GetNewCount() != 23 {
		t.Errorf("after replaying 2 of 4: %v, %v; want 2 PARKED, 23 NEW", st, err)
	}
	entries, err := audit.New(f.control.DB).List(ctx, "outbox.replay_parked", 10)
	if err != nil || len(entries) != 1 {
		t.Fatalf("audit entries = %v, %v", entries, err)
	}
	e := entries[0]
	if e.Caller != "ops-alice" || e.Reason != "broker fixed, INC-42" || !strings.Contains(e.Scope, "shard=shard-0") ||
		!strings.HasPrefix(e.Outcome, "replayed 2 rows") || e.ID != resp.GetAuditId() {
		t.Errorf("audit entry = %+v", e)
	}
}
