package canonical_test

import (
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/resultsync/resultsync/pkg/model/canonical"
)

// canonicalDecimal is the documented canonical form: optional '-', no
// leading zeros, at most MaxIntegerDigits integer and Scale fraction digits,
// no trailing fraction zero, zero as "0" (never "-0").
var canonicalDecimal = regexp.MustCompile(`^-?(0|[1-9][0-9]{0,8})(\.[0-9]{0,2}[1-9])?$`)

// FuzzDecimal: whatever the input, Decimal never panics; an accepted input
// gives a canonical string that parses to itself, holds the same value as
// the input (checked with math/big), and every other spelling of that value
// gives the same canonical string and the same digest.
func FuzzDecimal(f *testing.F) {
	for _, s := range []string{"2.31", "2.310", "+2.310", "002.31", " 2.31 ", "2.", ".5", "0", "-0.000", "-1.500",
		"999999999.999", "1000000000", "2.3101", "2.31000", "", ".", "-", "NaN", "Inf", "1e3", "1,5", "--1", "+-1",
		"-.5", "0x10", "٣", "2.31\u00a0", "\t-000000000999999999.9990000\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := canonical.Decimal(s)
		if err != nil {
			if c != "" {
				t.Fatalf("Decimal(%q) = %q with error %v", s, c, err)
			}
			if _, merr := canonical.Milli(s); merr == nil {
				t.Fatalf("Milli(%q) accepted what Decimal refused (%v)", s, err)
			}
			return
		}
		if !canonicalDecimal.MatchString(c) || c == "-0" {
			t.Fatalf("Decimal(%q) = %q: not canonical", s, c)
		}
		if again, err := canonical.Decimal(c); err != nil || again != c {
			t.Fatalf("Decimal(Decimal(%q)) = %q, %v; want %q", s, again, err, c)
		}
		m, err := canonical.Milli(s)
		if err != nil {
			t.Fatalf("Milli(%q): %v after Decimal accepted it", s, err)
		}
		if mc, _ := canonical.Milli(c); mc != m {
			t.Fatalf("Milli(%q) = %d but Milli(%q) = %d", s, m, c, mc)
		}
		// The value, independently of the parser under test.
		want, ok := new(big.Rat).SetString(strings.TrimSpace(s))
		if ok {
			got := new(big.Rat).SetFrac64(m, 1000)
			if got.Cmp(want) != 0 {
				t.Fatalf("Decimal(%q) = %q (%d thousandths) but the input is %s", s, c, m, want.FloatString(6))
			}
		}
		if back := milliString(m); back != c {
			t.Fatalf("Milli(%q) = %d prints as %q, not %q", c, m, back, c)
		}
		// Other spellings of the same value: one canonical string, one digest.
		r := canonical.Record{DataID: 900001, Version: 2, DetectID: 10001, ProjectID: 3, SchoolID: 7, Grade: 5, Result: c, Unit: "m"}
		d0, err := canonical.Digest(r)
		if err != nil {
			t.Fatalf("Digest of canonical %q: %v", c, err)
		}
		for _, alt := range spellings(c) {
			if ca, err := canonical.Decimal(alt); err != nil || ca != c {
				t.Fatalf("Decimal(%q) = %q, %v; want %q (another spelling of %q)", alt, ca, err, c, s)
			}
			r.Result = alt
			if d, err := canonical.Digest(r); err != nil || d != d0 {
				t.Fatalf("Digest with result %q = %d, %v; want %d as for %q", alt, d, err, d0, c)
			}
		}
		r.Result = s
		if d, err := canonical.Digest(r); err != nil || d != d0 {
			t.Fatalf("Digest with result %q = %d, %v; want %d as for %q", s, d, err, d0, c)
		}
	})
}

// milliString prints thousandths as a canonical decimal, independently of
// Decimal.
func milliString(m int64) string {
	neg := m < 0
	if neg {
		m = -m
	}
	s := strconv.FormatInt(m/1000, 10)
	if f := m % 1000; f != 0 {
		s += "." + strings.TrimRight(strconv.FormatInt(1000+f, 10)[1:], "0")
	}
	if neg {
		s = "-" + s
	}
	return s
}

// spellings lists other accepted spellings of the canonical decimal c.
func spellings(c string) []string {
	abs := strings.TrimPrefix(c, "-")
	sign := c[:len(c)-len(abs)]
	frac := abs + "."
	if strings.Contains(abs, ".") {
		frac = abs
	}
	out := []string{" " + c + "\t", sign + "00" + abs, sign + frac + "0", sign + frac + "000"}
	if sign == "" {
		out = append(out, "+"+c)
	}
	if strings.HasPrefix(abs, "0.") {
		out = append(out, sign+abs[1:])
	}
	return out
}

// FuzzUnit: Unit never panics, accepts only spellings of the canonical
// units, and maps a canonical unit to itself; case and surrounding space do
// not change the answer.
func FuzzUnit(f *testing.F) {
	for _, u := range []string{"m", "M", " meters ", "metre", "cm", "s", "Seconds", "count", "reps", "kg", "ml",
		"millilitres", "", "furlong", "m\x00", "\u212Ag", "ſ", "KG"} {
		f.Add(u)
	}
	canonicalUnits := map[string]bool{"m": true, "cm": true, "s": true, "count": true, "kg": true, "ml": true}
	f.Fuzz(func(t *testing.T, u string) {
		c, ok := canonical.Unit(u)
		if !ok {
			if c != "" {
				t.Fatalf("Unit(%q) = %q, false", u, c)
			}
			return
		}
		if !canonicalUnits[c] {
			t.Fatalf("Unit(%q) = %q: not a canonical unit", u, c)
		}
		if again, ok := canonical.Unit(c); !ok || again != c {
			t.Fatalf("Unit(%q) = %q, %t; a canonical unit maps to itself", c, again, ok)
		}
		if lc, ok := canonical.Unit(" " + strings.ToLower(u) + "\n"); !ok || lc != c {
			t.Fatalf("Unit of %q in lower case = %q, %t; want %q", u, lc, ok, c)
		}
	})
}

// FuzzCheckResult: the write path's check of (project, result, unit) never
// panics, and what it accepts is canonical, in the project's unit and in the
// project's range.
func FuzzCheckResult(f *testing.F) {
	f.Add(int64(3), "2.31", "m")
	f.Add(int64(3), "2.310", "meters")
	f.Add(int64(3), "4.501", "m")
	f.Add(int64(2), "-50", "cm")
	f.Add(int64(2), "-50.001", "centimetres")
	f.Add(int64(7), "10000", "ml")
	f.Add(int64(9), "1", "m")
	f.Add(int64(-1), "1", "m")
	f.Add(int64(1), "4", "cm")
	f.Fuzz(func(t *testing.T, project int64, result, unit string) {
		r, u, err := canonical.CheckResult(project, result, unit)
		if err != nil {
			if !utf8.ValidString(err.Error()) {
				t.Fatalf("CheckResult(%d, %q, %q) error is not valid UTF-8 (no error detail can carry it): %q", project, result, unit, err)
			}
			if r != "" || u != "" {
				t.Fatalf("CheckResult refused with values %q %q: %v", r, u, err)
			}
			return
		}
		p, ok := canonical.Projects[project]
		if !ok {
			t.Fatalf("CheckResult accepted unknown project %d", project)
		}
		if c, err := canonical.Decimal(result); err != nil || c != r {
			t.Fatalf("CheckResult(%q) = %q; want the canonical %q (%v)", result, r, c, err)
		}
		if u != p.Unit {
			t.Fatalf("CheckResult(%d, %q, %q) unit %q; project unit %q", project, result, unit, u, p.Unit)
		}
		m, err := canonical.Milli(r)
		if err != nil || m < p.MinMilli || m > p.MaxMilli {
			t.Fatalf("CheckResult(%d, %q) = %q outside [%d, %d] thousandths", project, result, r, p.MinMilli, p.MaxMilli)
		}
	})
}
