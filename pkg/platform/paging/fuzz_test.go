package paging_test

import (
	"bytes"
	"encoding/base64"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/resultsync/resultsync/pkg/platform/paging"
)

// FuzzPosition: a forged or truncated page token is INVALID_ARGUMENT, never
// a panic or a position that is not positive; the empty token is the first
// page, and every token Token makes decodes to its position.
func FuzzPosition(f *testing.F) {
	for _, s := range []string{"", paging.Token(1), paging.Token(42), paging.Token(1 << 62), "MTIz", "MTI", "M", "=", "LTE", "MA",
		"OTIyMzM3MjAzNjg1NDc3NTgwOA", "KzU", "MTIz==", "!!!", "MTIz\n"} {
		f.Add(s, int64(7))
	}
	f.Fuzz(func(t *testing.T, tok string, pos int64) {
		got, err := paging.Position(tok)
		switch {
		case err != nil:
			if st, ok := status.FromError(err); !ok || st.Code() != codes.InvalidArgument {
				t.Fatalf("Position(%q) error %v: want INVALID_ARGUMENT", tok, err)
			}
			if got != 0 {
				t.Fatalf("Position(%q) = %d with error %v", tok, got, err)
			}
		case tok == "":
			if got != 0 {
				t.Fatalf("Position(\"\") = %d; want 0 (first page)", got)
			}
		case got <= 0:
			t.Fatalf("Position(%q) = %d; a token's position is positive", tok, got)
		}
		if pos > 0 {
			if back, err := paging.Position(paging.Token(pos)); err != nil || back != pos {
				t.Fatalf("Position(Token(%d)) = %d, %v", pos, back, err)
			}
		}
	})
}

// FuzzSize: page_size never panics; a negative size is INVALID_ARGUMENT and
// every other size lands in 1..max.
func FuzzSize(f *testing.F) {
	for _, n := range []int32{0, 1, -1, 100, 1000, 1001, 1 << 30, -1 << 31} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int32) {
		const def, max = 100, 1000
		got, err := paging.Size(n, def, max)
		if n < 0 {
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("Size(%d) = %d, %v; want INVALID_ARGUMENT", n, got, err)
			}
			return
		}
		if err != nil || got < 1 || got > max || (n == 0 && got != def) || (n > 0 && n <= max && got != int(n)) {
			t.Fatalf("Size(%d) = %d, %v", n, got, err)
		}
	})
}

// FuzzDecode: a token issued for one query is accepted by that query only,
// at its position; a cut token is refused; any other token is refused or
// byte for byte a token Encode issued for the request's own query.
func FuzzDecode(f *testing.F) {
	f.Add("", "repairs|run-1|2", "repairs|run-1|2", int64(42), 0)
	f.Add(paging.Encode("a", 5), "repairs|run-1|2", "repairs|run-1|3", int64(42), 0)
	f.Add("MTIz", "", "", int64(123), 1)
	f.Add(paging.Token(7), "v1:1:2:3:false:", "v1:1:2:3:true:", int64(1<<62), 3)
	f.Add("AAAAAHw", "x|", "x", int64(-1), 0)
	f.Fuzz(func(t *testing.T, tok, scopeA, scopeB string, pos int64, cut int) {
		got, err := paging.Decode(tok, scopeB)
		switch {
		case err != nil:
			if st, ok := status.FromError(err); !ok || st.Code() != codes.InvalidArgument || got != 0 {
				t.Fatalf("Decode(%q, %q) = %d, %v: want INVALID_ARGUMENT", tok, scopeB, got, err)
			}
		case tok == "":
			if got != 0 {
				t.Fatalf("Decode(\"\") = %d; want 0 (first page)", got)
			}
		default:
			raw, _ := base64.RawURLEncoding.DecodeString(tok)
			want, _ := base64.RawURLEncoding.DecodeString(paging.Encode(scopeB, got))
			if got <= 0 || !bytes.Equal(raw, want) {
				t.Fatalf("Decode(%q, %q) = %d: not a token issued for that query", tok, scopeB, got)
			}
		}
		if pos <= 0 {
			return
		}
		issued := paging.Encode(scopeA, pos)
		got, err = paging.Decode(issued, scopeB)
		if (err == nil) != (scopeA == scopeB) || (err == nil && got != pos) {
			t.Fatalf("a token of %q at %d decoded for %q: %d, %v", scopeA, pos, scopeB, got, err)
		}
		if cut > 0 && cut < len(issued) {
			if got, err := paging.Decode(issued[:len(issued)-cut], scopeA); err == nil {
				t.Fatalf("a token of %q at %d cut by %d decoded to %d", scopeA, pos, cut, got)
			}
		}
	})
}
