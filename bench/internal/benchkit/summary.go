package benchkit

import (
	"fmt"
	"strings"
)

// Verdict is the last column of a SUMMARY line: "met" only when the target
// is met and the benchmark found nothing wrong with what it measured (every
// injected discrepancy found, every event applied, every row SENT, no
// worker error); otherwise "NOT met", with the problems after a colon.
// bench/run.sh exits non-zero on any NOT met.
func Verdict(targetMet bool, problems ...string) string {
	var ps []string
	for _, p := range problems {
		if p != "" {
			ps = append(ps, p)
		}
	}
	switch {
	case len(ps) > 0 && !targetMet:
		return "NOT met: target missed; " + strings.Join(ps, "; ")
	case len(ps) > 0:
		return "NOT met: " + strings.Join(ps, "; ")
	case !targetMet:
		return "NOT met"
	}
	return "met"
}

// Problem returns the problem "what: got N, want M" when got != want, ""
// otherwise (for Verdict).
func Problem(what string, got, want int64) string {
	if got == want {
		return ""
	}
	return fmt.Sprintf("%s: %d, want %d", what, got, want)
}

// Summary prints one SUMMARY|bench|figure|value|ceiling|ratio|target|verdict
// line for bench/run.sh (a "-" verdict is context, never judged).
func Summary(bench, figure, value, ceiling, ratio, target, verdict string) {
	fmt.Printf("SUMMARY|%s|%s|%s|%s|%s|%s|%s\n", bench, figure, value, ceiling, ratio, target, verdict)
}
