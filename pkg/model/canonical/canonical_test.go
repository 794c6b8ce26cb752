package canonical_test

import (
	"errors"
	"math"
	"testing"

	"github.com/resultsync/resultsync/pkg/model/canonical"
)

func TestDecimal(t *testing.T) {
	tests := []struct {
		in, want string
		err      error
	}{
		{"2.31", "2.31", nil},
		{"2.310", "2.31", nil},
		{"+2.310", "2.31", nil},
		{"002.31", "2.31", nil},
		{" 2.31 ", "2.31", nil},
		{"2.", "2", nil},
		{".5", "0.5", nil},
		{"0", "0", nil},
		{"-0.000", "0", nil},
		{"-1.500", "-1.5", nil},
		{"999999999.999", "999999999.999", nil},
		{"1000000000", "", canonical.ErrOutOfPrecision},
		{"2.3101", "", canonical.ErrTooManyDigits},
		{"2.31000", "2.31", nil},
		{"", "", canonical.ErrNotDecimal},
		{".", "", canonical.ErrNotDecimal},
		{"-", "", canonical.ErrNotDecimal},
		{"NaN", "", canonical.ErrNotDecimal},
		{"Inf", "", canonical.ErrNotDecimal},
		{"1e3", "", canonical.ErrNotDecimal},
		{"1,5", "", canonical.ErrNotDecimal},
		{"--1", "", canonical.ErrNotDecimal},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := canonical.Decimal(tc.in)
			if !errors.Is(err, tc.err) {
				t.Fatalf("Decimal(%q) error = %v, want %v", tc.in, err, tc.err)
			}
			if got != tc.want {
				t.Errorf("Decimal(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestMilli(t *testing.T) {
	for in, want := range map[string]int64{"2.31": 2310, "2.310": 2310, "-1.5": -1500, "0": 0, "7": 7000, "0.001": 1} {
		got, err := canonical.Milli(in)
		if err != nil || got != want {
			t.Errorf("Milli(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

func TestUnit(t *testing.T) {
	for in, want := range map[string]string{"m": "m", " M ": "m", "Meters": "m", "sec": "s", "reps": "count"} {
		if got, ok := canonical.Unit(in); !ok || got != want {
			t.Errorf("Unit(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if _, ok := canonical.Unit("furlong"); ok {
		t.Error("Unit(furlong) accepted")
	}
}

func TestEventID(t *testing.T) {
	if got := canonical.EventID(900001, 2); got != "fitness-result-900001-v2" {
		t.Errorf("EventID = %q", got)
	}
}

func FuzzDecimalIsIdempotent(f *testing.F) {
	for _, s := range []string{"2.31", "2.310", "-0", "+001.100", "9.999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := canonical.Decimal(s)
		if err != nil {
			return
		}
		again, err := canonical.Decimal(c)
		if err != nil || again != c {
			t.Fatalf("Decimal(%q) = %q, but Decimal(%q) = %q, %v", s, c, c, again, err)
		}
	})
}

func TestEventIDSpelling(t *testing.T) {
	for _, c := range []struct {
		dataID, version int64
		want            string
	}{
		{1, 1, "fitness-result-1-v1"},
		{900003, 12, "fitness-result-900003-v12"},
		{math.MaxInt64, math.MaxInt64, "fitness-result-9223372036854775807-v9223372036854775807"},
	} {
		if got := canonical.EventID(c.dataID, c.version); got != c.want {
			t.Errorf("EventID(%d, %d) = %q, want %q", c.dataID, c.version, got, c.want)
		}
		if got := string(canonical.AppendEventID([]byte("x"), c.dataID, c.version)); got != "x"+c.want {
			t.Errorf("AppendEventID = %q", got)
		}
	}
}
