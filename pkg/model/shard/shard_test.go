package shard

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// mapOf returns a map of n shards (the DSNs do not matter for routing).
func mapOf(n int) Map {
	var m Map
	for i := range n {
		m.Shards = append(m.Shards, Shard{ID: fmt.Sprintf("shard-%d", i), DSN: "dsn"})
	}
	return m
}

// TestOwnerVectors pins the routing of data ids to shards: it is part of the
// data layout, so a change here moves stored records to shards that no
// longer own them. These vectors must never change; a new routing needs a
// data migration, not a new table.
func TestOwnerVectors(t *testing.T) {
	vectors := []struct {
		dataID int64
		shards int
		want   int
	}{
		{1, 1, 0},
		{900001, 1, 0},
		{9223372036854775807, 1, 0},
		{1, 2, 1},
		{2, 2, 0},
		{3, 2, 0},
		{7, 2, 0},
		{1024, 2, 1},
		{2048, 2, 0},
		{900001, 2, 0},
		{900002, 2, 1},
		{900003, 2, 0},
		{900010, 2, 1},
		{900011, 2, 1},
		{1000000007, 2, 0},
		{1099511627776, 2, 0},
		{9223372036854775807, 2, 1},
		{1, 3, 1},
		{2, 3, 1},
		{3, 3, 2},
		{7, 3, 1},
		{1024, 3, 2},
		{2048, 3, 1},
		{900001, 3, 2},
		{900002, 3, 2},
		{900003, 3, 2},
		{900010, 3, 1},
		{900011, 3, 1},
		{1000000007, 3, 1},
		{1099511627776, 3, 0},
		{9223372036854775807, 3, 1},
		{1, 4, 1},
		{2, 4, 2},
		{3, 4, 0},
		{7, 4, 0},
		{1024, 4, 1},
		{2048, 4, 2},
		{900001, 4, 2},
		{900002, 4, 1},
		{900003, 4, 2},
		{900010, 4, 1},
		{900011, 4, 1},
		{1000000007, 4, 0},
		{1099511627776, 4, 0},
		{9223372036854775807, 4, 1},
		{1, 7, 6},
		{2, 7, 1},
		{3, 7, 4},
		{7, 7, 2},
		{1024, 7, 6},
		{2048, 7, 5},
		{900001, 7, 3},
		{900002, 7, 2},
		{900003, 7, 6},
		{900010, 7, 4},
		{900011, 7, 5},
		{1000000007, 7, 4},
		{1099511627776, 7, 1},
		{9223372036854775807, 7, 3},
	}
	for _, v := range vectors {
		t.Run(fmt.Sprintf("%d_of_%d", v.dataID, v.shards), func(t *testing.T) {
			if got := mapOf(v.shards).Owner(v.dataID); got != v.want {
				t.Errorf("Owner(%d) over %d shards = %d, want %d", v.dataID, v.shards, got, v.want)
			}
		})
	}
}

// TestMix64IsSplitmix64 checks the mixer against the published splitmix64
// generator (Vigna, prng.di.unimi.it/splitmix64.c): output = finalizer(seed +
// k*0x9e3779b97f4a7c15). The first outputs for seeds 0 and 1234567 are the
// reference values other implementations quote.
func TestMix64IsSplitmix64(t *testing.T) {
	const gamma = 0x9e3779b97f4a7c15
	tests := []struct {
		seed uint64
		want []uint64
	}{
		{0, []uint64{0xe220a8397b1dcdaf}},
		{1234567, []uint64{6457827717110365317, 3203168211198807973, 9817491932198370423, 4593380528125082431, 16408922859458223821}},
	}
	for _, tc := range tests {
		var got []uint64
		s := tc.seed
		for range tc.want {
			s += gamma
			got = append(got, mix64(s))
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("splitmix64 outputs from seed %d (-want +got):\n%s", tc.seed, diff)
		}
	}
	for _, v := range []struct{ in, want uint64 }{
		{1, 0x5692161d100b05e5},
		{900001, 0x6b5620d3e1c8aaae},
		{9223372036854775807, 0x5a682afe7965debd},
	} {
		if got := mix64(v.in); got != v.want {
			t.Errorf("mix64(%d) = %#x, want %#x", v.in, got, v.want)
		}
	}
}

// TestOwnerSpreadsRegularIDs: ids with a regular structure — consecutive,
// allocated in steps, or all in one reconciliation bucket (data_id % 1024) —
// spread evenly over the shards, where data_id mod N would put some of them
// all on one shard.
func TestOwnerSpreadsRegularIDs(t *testing.T) {
	const ids = 10000
	for _, step := range []int64{1, 2, 10, 1024} {
		for _, n := range []int{2, 3, 4} {
			t.Run(fmt.Sprintf("step_%d_over_%d", step, n), func(t *testing.T) {
				m := mapOf(n)
				counts := make([]int, n)
				for k := range int64(ids) {
					counts[m.Owner(900000+k*step)]++
				}
				// Within 5% of an even share (the binomial spread is ~1%).
				even := ids / n
				for i, c := range counts {
					if c < even*95/100 || c > even*105/100 {
						t.Errorf("shard %d of %d owns %d of %d ids in steps of %d, want about %d (counts %v)", i, n, c, ids, step, even, counts)
					}
				}
			})
		}
	}
}

func TestOwnerInRange(t *testing.T) {
	for n := 1; n <= 9; n++ {
		m := mapOf(n)
		for _, id := range []int64{-1 << 63, -900001, -1, 0, 1, 900001, 1<<63 - 1} {
			if got := m.Owner(id); got < 0 || got >= n {
				t.Errorf("Owner(%d) over %d shards = %d, out of range", id, n, got)
			}
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string // nil: an error
	}{
		{"two shards", "shard-0=u:p@tcp(h:1)/a,shard-1=u:p@tcp(h:1)/b", []string{"shard-0", "shard-1"}},
		{"other separators and spaces", " a = x ; b=y\nc=z ", []string{"a", "b", "c"}},
		{"empty", " , ", nil},
		{"missing dsn", "a=", nil},
		{"missing id", "=dsn", nil},
		{"duplicate id", "a=x,a=y", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse(tc.in)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("Parse(%q) = %v, want an error", tc.in, m.IDs())
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, m.IDs()); diff != "" {
				t.Errorf("Parse(%q) ids (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// TestParseErrorHidesDSN: a bad entry is named without its DSN (which may
// hold a password), also when the DSN was written without an id.
func TestParseErrorHidesDSN(t *testing.T) {
	for _, in := range []string{"=u:hunter2@tcp(h:1)/db", "u:hunter2@tcp(h:1)/db", "u:hunter2@tcp(h:1)/db?parseTime=true",
		"shard-0=x,u:hunter2@tcp(h:1)/db?a=b", "shard 0=u:hunter2@tcp(h:1)/db"} {
		_, err := Parse(in)
		if err == nil {
			t.Fatalf("Parse(%q) accepted an entry without a valid id", in)
		}
		if msg := err.Error(); strings.Contains(msg, "hunter2") {
			t.Errorf("Parse(%q) error %q shows the DSN", in, msg)
		}
	}
}
