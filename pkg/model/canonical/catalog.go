package canonical

import (
	"strconv"
	"unicode/utf8"

	"github.com/resultsync/resultsync/pkg/platform/apierr"
)

// Project describes a test item: the unit its results are recorded in and
// the plausible range of a result.
type Project struct {
	ID   int64
	Name string
	Unit string
	// Min and Max bound a result, in thousandths of Unit (inclusive).
	MinMilli, MaxMilli int64
}

// Projects is the catalog of test items the write path accepts. A result of
// a project must use the project's unit (any accepted spelling) and lie in its
// range.
var Projects = map[int64]Project{
	1: {ID: 1, Name: "50 m sprint", Unit: "s", MinMilli: 4_000, MaxMilli: 30_000},
	2: {ID: 2, Name: "sit and reach", Unit: "cm", MinMilli: -50_000, MaxMilli: 60_000},
	3: {ID: 3, Name: "standing long jump", Unit: "m", MinMilli: 0, MaxMilli: 4_500},
	4: {ID: 4, Name: "1000 m run", Unit: "s", MinMilli: 120_000, MaxMilli: 1_200_000},
	5: {ID: 5, Name: "pull-ups", Unit: "count", MinMilli: 0, MaxMilli: 100_000},
	6: {ID: 6, Name: "one-minute sit-ups", Unit: "count", MinMilli: 0, MaxMilli: 120_000},
	7: {ID: 7, Name: "vital capacity", Unit: "ml", MinMilli: 100_000, MaxMilli: 10_000_000},
	8: {ID: 8, Name: "body weight", Unit: "kg", MinMilli: 10_000, MaxMilli: 250_000},
}

// CheckResult validates a result of projectID: the unit must be the project's
// (any accepted spelling) and the decimal must be canonicalizable and within
// the project's range. It returns the canonical result and unit; an invalid
// field is an *apierr.FieldError.
func CheckResult(projectID int64, result, unit string) (string, string, error) {
	p, ok := Projects[projectID]
	if !ok {
		return "", "", &apierr.FieldError{Field: "project_id", Description: "unknown project"}
	}
	u, ok := Unit(unit)
	if !ok {
		return "", "", &apierr.FieldError{Field: "unit", Description: "unknown unit " + quote(unit)}
	}
	if u != p.Unit {
		return "", "", &apierr.FieldError{Field: "unit", Description: "project " + p.Name + " is recorded in " + p.Unit + ", not " + u}
	}
	d, err := Decimal(result)
	if err != nil {
		return "", "", &apierr.FieldError{Field: "result", Description: err.Error()}
	}
	m, _ := Milli(d)
	if m < p.MinMilli || m > p.MaxMilli {
		return "", "", &apierr.FieldError{Field: "result", Description: d + " " + u + " is outside the range of " + p.Name}
	}
	return d, u, nil
}

// quote prints a caller's value in a message: at most 32 bytes (cut on a
// character boundary) and quoted with Go escapes, so the message stays valid
// UTF-8 whatever the value (a field violation that is not valid UTF-8 cannot
// be sent as an error detail).
func quote(s string) string {
	if len(s) > 32 {
		n := 32
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return strconv.Quote(s[:n]) + "..."
	}
	return strconv.Quote(s)
}
