package mysqldb

import "testing"

func TestPlaceholders(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{-1, ""}, {0, ""}, {1, "?"}, {3, "?,?,?"}} {
		if got := Placeholders(tc.n); got != tc.want {
			t.Errorf("Placeholders(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	for _, tc := range []struct {
		n, width int
		want     string
	}{{0, 3, ""}, {1, 1, "(?)"}, {1, 3, "(?,?,?)"}, {2, 2, "(?,?),(?,?)"}} {
		if got := Rows(tc.n, tc.width); got != tc.want {
			t.Errorf("Rows(%d, %d) = %q, want %q", tc.n, tc.width, got, tc.want)
		}
	}
}
