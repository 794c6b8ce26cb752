package reconcileapi_test

import (
	"context"
	"math"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcileapi"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

// noCampaigns answers that no campaign exists, so a request that passed
// validation stops at NOT_FOUND before any run is stored; it records the
// campaign it was asked about.
type noCampaigns struct{ asked *int64 }

func (c noCampaigns) CampaignExists(_ context.Context, detectID int64) (bool, error) {
	*c.asked = detectID
	return false, nil
}

// FuzzStartReconciliationRun: the validation of the one mutating
// ReconcileService RPC never panics; a request outside the documented ranges
// (positive campaign, project and school positive or 0, a known depth, a
// sample rate in [0, 1]) is INVALID_ARGUMENT and goes no further; an
// accepted one goes on to the campaign check.
func FuzzStartReconciliationRun(f *testing.F) {
	f.Add(true, int64(10001), int64(0), int64(0), int32(3), 0.0)
	f.Add(true, int64(10001), int64(3), int64(8), int32(1), 1.0)
	f.Add(false, int64(0), int64(0), int64(0), int32(0), 0.0)
	f.Add(true, int64(-1), int64(-1), int64(-1), int32(4), -0.1)
	f.Add(true, int64(1), int64(0), int64(0), int32(2), math.Inf(1))
	f.Add(true, int64(1), int64(0), int64(0), int32(2), 1.0000001)
	f.Fuzz(func(t *testing.T, hasScope bool, detect, project, school int64, depth int32, rate float64) {
		var asked int64
		s := reconcileapi.New(nil, nil, noCampaigns{&asked})
		req := &fitnessv1.StartReconciliationRunRequest{Depth: fitnessv1.ReconcileDepth(depth), SampleRate: rate}
		if hasScope {
			req.Scope = &fitnessv1.ReconcileScope{DetectId: detect, ProjectId: project, SchoolId: school}
		}
		_, err := s.StartReconciliationRun(auth.WithPrincipal(context.Background(), servertest.Admin), req)
		valid := hasScope && detect > 0 && project >= 0 && school >= 0 && depth >= 1 && depth <= 3 && rate >= 0 && rate <= 1
		switch code := status.Code(err); {
		case code == codes.InvalidArgument:
			if valid || asked != 0 {
				t.Fatalf("refused a valid request %v (asked %d): %v", req, asked, err)
			}
		case !valid:
			t.Fatalf("accepted %v: %v", req, err)
		case code != codes.NotFound || asked != detect:
			t.Fatalf("%v: %v (asked %d); want the campaign check next", req, err, asked)
		}
	})
}
