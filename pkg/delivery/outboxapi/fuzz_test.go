package outboxapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/platform/audit"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

// stopAuditor records the audit entry of a call that passed validation and
// refuses it, so the call stops before any shard is touched.
type stopAuditor struct{ begun *audit.Entry }

func (a stopAuditor) Begin(_ context.Context, e audit.Entry) (string, error) {
	*a.begun = e
	return "", errors.New("fuzz: stop here")
}

func (stopAuditor) Finish(context.Context, string, string) error { return nil }

// FuzzReplayParkedEvents: the only mutating RPC of the relay never panics on
// its fields; a request outside the documented ranges is INVALID_ARGUMENT
// (an unknown shard NOT_FOUND) and is never audited or run; an accepted one
// reaches the audit log with a limit in 1..10000.
func FuzzReplayParkedEvents(f *testing.F) {
	f.Add("shard-1", "broker fixed, INC-42", uint16(0), int64(0), int64(0), int32(0))
	f.Add("shard-0", " ", uint16(3), int64(7), int64(900001), int32(-1))
	f.Add("", "r", uint16(0), int64(0), int64(0), int32(1))
	f.Add("shard-9", "r", uint16(0), int64(0), int64(0), int32(1))
	f.Add("shard-1", strings.Repeat("r", 513), uint16(10001), int64(-1), int64(-1), int32(1<<30))
	f.Add("shard-1", " "+strings.Repeat("r", 512)+" ", uint16(10000), int64(1), int64(1), int32(10001))
	f.Fuzz(func(t *testing.T, shard, reason string, nIDs uint16, id, dataID int64, limit int32) {
		var begun audit.Entry
		s := New([]*outbox.Repo{outbox.NewRepo("shard-0", nil), outbox.NewRepo("shard-1", nil)}, stopAuditor{&begun})
		req := &fitnessv1.ReplayParkedEventsRequest{ShardId: shard, Reason: reason, DataId: dataID, Limit: limit}
		for i := range int(nIDs) {
			req.Ids = append(req.Ids, id+int64(i))
		}
		_, err := s.ReplayParkedEvents(auth.WithPrincipal(context.Background(), servertest.Admin), req)
		code := status.Code(err)
		valid := (shard == "shard-0" || shard == "shard-1") && strings.TrimSpace(reason) != "" && len(strings.TrimSpace(reason)) <= 512 &&
			nIDs <= 10000 && limit >= 0
		switch code {
		case codes.Unavailable: // validated, stopped by the auditor
			if !valid {
				t.Fatalf("accepted shard %q reason %q ids %d limit %d", shard, reason, nIDs, limit)
			}
			want := min(max(int(limit), 0), 10000)
			if limit == 0 {
				want = 1000
			}
			if !strings.Contains(begun.Scope, fmt.Sprintf(" limit=%d", want)) || begun.Reason != strings.TrimSpace(reason) {
				t.Fatalf("audited %+v; want limit %d and the trimmed reason", begun, want)
			}
		case codes.InvalidArgument, codes.NotFound:
			if valid || begun != (audit.Entry{}) {
				t.Fatalf("refused a valid request (shard %q reason %q ids %d limit %d): %v; audited %+v", shard, reason, nIDs, limit, err, begun)
			}
		default:
			t.Fatalf("shard %q reason %q ids %d limit %d: %v", shard, reason, nIDs, limit, err)
		}
	})
}

// FuzzListPageToken: a page token of one (shard, status) never continues
// another, and a forged or truncated one is INVALID_ARGUMENT or a positive
// position issued for the request's own shard and status.
func FuzzListPageToken(f *testing.F) {
	f.Add("shard-1", int32(5), "shard-1", int32(5), int64(42), "", 0)
	f.Add("shard-1", int32(5), "shard-0", int32(5), int64(42), "", 0)
	f.Add("shard-1", int32(5), "shard-1", int32(3), int64(42), "", 2)
	f.Add("shard-1|5", int32(5), "shard-1", int32(5), int64(-1), "c2hhcmQtMXw1fC0x", 0)
	f.Fuzz(func(t *testing.T, shardA string, stA int32, shardB string, stB int32, after int64, forged string, cut int) {
		tok := pageToken(shardA, fitnessv1.OutboxStatus(stA), after)
		truncated := cut > 0 && cut < len(tok)
		if truncated {
			tok = tok[:len(tok)-cut]
		}
		for _, pt := range []string{tok, forged} {
			pos, err := pagePosition(pt, shardB, fitnessv1.OutboxStatus(stB))
			if err != nil {
				if status.Code(err) != codes.InvalidArgument {
					t.Fatalf("token %q: %v; want INVALID_ARGUMENT", pt, err)
				}
				continue
			}
			if pt == "" {
				if pos != 0 {
					t.Fatalf("empty token: position %d", pos)
				}
				continue
			}
			if pos <= 0 || (pt == tok && truncated) {
				t.Fatalf("token %q (cut by %d) continues shard %q status %d at %d", pt, cut, shardB, stB, pos)
			}
			if pt == tok && (shardA != shardB || stA != stB || pos != after) {
				t.Fatalf("a token of %q/%d after %d continues %q/%d at %d", shardA, stA, after, shardB, stB, pos)
			}
		}
	})
}
