package apierr_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/resultsync/resultsync/pkg/platform/apierr"
)

func retryDelay(err error) time.Duration {
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration()
		}
	}
	return 0
}

// TestReasons: a marked error keeps its reason and metadata through
// wrapping, an unmarked one gets its code's generic reason, RetryInfo comes
// with the reasons a wait helps, and contention and a version conflict (both
// ABORTED) are told apart by reason.
func TestReasons(t *testing.T) {
	errGone := apierr.NewReason(apierr.NotFound, apierr.RunNotFound, "reconciliation run not found")
	tests := []struct {
		name   string
		err    error
		code   codes.Code
		reason apierr.Reason
		meta   map[string]string
		retry  time.Duration
	}{
		{"sentinel", fmt.Errorf("run r1: %w", errGone), codes.NotFound, apierr.RunNotFound, nil, 0},
		{"marked", apierr.WithReason(apierr.FailedPrecondition.Errorf("repair is CANCELLED"), apierr.InvalidState, "state", "CANCELLED"),
			codes.FailedPrecondition, apierr.InvalidState, map[string]string{"state": "CANCELLED"}, 0},
		{"outermost reason wins", apierr.WithReason(fmt.Errorf("x: %w", errGone), apierr.RepairNotFound), codes.NotFound, apierr.RepairNotFound, nil, 0},
		{"contention", fmt.Errorf("committing: %w", &mysql.MySQLError{Number: 1213}), codes.Aborted, apierr.Contention, nil, 50 * time.Millisecond},
		{"version conflict", apierr.WithReason(apierr.New(apierr.Aborted, "at version 3"), apierr.VersionConflict), codes.Aborted, apierr.VersionConflict, nil, 0},
		{"queue full", apierr.NewReason(apierr.ResourceExhausted, apierr.RunQueueFull, "full"), codes.ResourceExhausted, apierr.RunQueueFull, nil, 5 * time.Second},
		{"dependency", apierr.New(apierr.Unavailable, "down"), codes.Unavailable, apierr.DependencyUnavailable, nil, time.Second},
		{"bare status", status.Error(codes.Unauthenticated, "no token"), codes.Unauthenticated, apierr.Unauthenticated, nil, 0},
		{"bare unavailable status", status.Error(codes.Unavailable, "draining"), codes.Unavailable, apierr.UnavailableReason, nil, time.Second},
		{"status with a reason", apierr.ReasonError(codes.NotFound, apierr.ShardNotFound, "unknown shard", "shard_id", "s9"), codes.NotFound,
			apierr.ShardNotFound, map[string]string{"shard_id": "s9"}, 0},
		{"cancelled wins over a marked kind", apierr.WithReason(fmt.Errorf("x: %w", context.Canceled), apierr.RunNotFound), codes.Canceled, apierr.Cancelled, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := apierr.Status(tc.err)
			r, meta := apierr.ReasonOf(err)
			if status.Code(err) != tc.code || r != tc.reason || fmt.Sprint(meta) != fmt.Sprint(tc.meta) {
				t.Errorf("Status(%v) = %v %s %v, want %v %s %v", tc.err, status.Code(err), r, meta, tc.code, tc.reason, tc.meta)
			}
			if d := retryDelay(err); d != tc.retry {
				t.Errorf("RetryInfo delay %v, want %v", d, tc.retry)
			}
			again := apierr.Status(err)
			if n := len(status.Convert(again).Details()); n != len(status.Convert(err).Details()) {
				t.Errorf("Status of a status added details: %d, was %d", n, len(status.Convert(err).Details()))
			}
		})
	}
	if !errors.Is(fmt.Errorf("x: %w", errGone), errGone) || !errors.Is(errGone, apierr.NotFound) {
		t.Error("a NewReason sentinel is not found by identity and kind")
	}
}

// TestCatalogue: every reason once, the generic reason of each code in it
// with that code, and each named in docs/calling.md with its code.
func TestCatalogue(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/calling.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[apierr.Reason]codes.Code{}
	for _, e := range apierr.Catalogue {
		if _, dup := seen[e.Reason]; dup {
			t.Errorf("%s twice in the catalogue", e.Reason)
		}
		seen[e.Reason] = e.Code
		row := fmt.Sprintf("| `%s` | `%s` |", e.Reason, codeName(e.Code))
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/calling.md has no row starting %q", row)
		}
		if (apierr.RetryDelay(e.Reason) > 0) != (e.Retry == "back off" || e.Reason == apierr.Contention) {
			t.Errorf("%s: retry %q but RetryInfo delay %v", e.Reason, e.Retry, apierr.RetryDelay(e.Reason))
		}
	}
	for c := codes.Canceled; c <= codes.Unauthenticated; c++ {
		r := apierr.GenericReason(c)
		if got, ok := seen[r]; !ok || got != c {
			t.Errorf("generic reason %s of %v: in the catalogue %v with %v", r, c, ok, got)
		}
	}
}

// codeName is a code as docs name it (CANCELLED, NOT_FOUND).
func codeName(c codes.Code) string {
	if c == codes.Canceled {
		return "CANCELLED"
	}
	var b strings.Builder
	for i, r := range c.String() {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

// TestInterceptors: an error a handler returns leaves with its ErrorInfo.
func TestInterceptors(t *testing.T) {
	_, err := apierr.UnaryServerInterceptor()(context.Background(), nil, &grpc.UnaryServerInfo{},
		func(context.Context, any) (any, error) { return nil, status.Error(codes.PermissionDenied, "no") })
	if r, _ := apierr.ReasonOf(err); r != apierr.Denied || len(status.Convert(err).Details()) != 1 {
		t.Errorf("unary: %v %v", r, status.Convert(err).Details())
	}
	err = apierr.StreamServerInterceptor()(nil, nil, &grpc.StreamServerInfo{},
		func(any, grpc.ServerStream) error {
			return fmt.Errorf("watching: %w", apierr.NewReason(apierr.NotFound, apierr.RepairNotFound, "repair not found"))
		})
	if r, _ := apierr.ReasonOf(err); r != apierr.RepairNotFound || status.Code(err) != codes.NotFound {
		t.Errorf("stream: %v %v", status.Code(err), r)
	}
	if _, err := apierr.UnaryServerInterceptor()(context.Background(), nil, &grpc.UnaryServerInfo{},
		func(context.Context, any) (any, error) { return 1, nil }); err != nil {
		t.Errorf("success: %v", err)
	}
}
