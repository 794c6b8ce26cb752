package paging_test

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/resultsync/resultsync/pkg/platform/paging"
)

func TestSize(t *testing.T) {
	for _, tc := range []struct {
		n    int32
		want int
		code codes.Code
	}{{0, 100, codes.OK}, {5, 5, codes.OK}, {5000, 1000, codes.OK}, {-1, 0, codes.InvalidArgument}} {
		got, err := paging.Size(tc.n, 100, 1000)
		if got != tc.want || status.Code(err) != tc.code {
			t.Errorf("Size(%d) = %d, %v; want %d, %s", tc.n, got, err, tc.want, tc.code)
		}
	}
}

func TestTokenRoundTrip(t *testing.T) {
	if p, err := paging.Position(paging.Token(42)); p != 42 || err != nil {
		t.Errorf("round trip = %d, %v", p, err)
	}
	if p, err := paging.Position(""); p != 0 || err != nil {
		t.Errorf("empty token = %d, %v", p, err)
	}
	for _, bad := range []string{"!!", "YWJj", "LTE"} {
		if _, err := paging.Position(bad); status.Code(err) != codes.InvalidArgument {
			t.Errorf("Position(%q) = %v, want InvalidArgument", bad, err)
		}
	}
}
