package benchkit

import (
	"fmt"
	"slices"
	"strings"
	"time"
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

// PacedVerdict judges a latency target at an offered rate: met when the
// p99 is within target, the phase committed at least 95% of the rate it
// offered (a phase that could not did not measure the latency at that
// rate) and problems are empty (every event applied...).
func PacedVerdict(p99, target time.Duration, committed, offered float64, problems ...string) string {
	ps := slices.Clone(problems)
	if committed < 0.95*offered {
		ps = append(ps, fmt.Sprintf("committed %.0f/s, %.0f%% of the %.0f/s offered", committed, 100*committed/offered, offered))
	}
	return Verdict(p99 <= target, ps...)
}

// WriteCost is what a feature costs the commits/s measured in rounds of
// four phases, A B B A (A with the feature, B without; a linear drift of
// the machine's load falls equally on both sides of a round): each round's
// (A1 + A2) / (B1 + B2), in order, and the cost, 1 - their median. with and
// without hold the A and B phases in the order they ran, two per round.
func WriteCost(with, without []float64) (rounds []float64, cost float64) {
	for r := 0; 2*r+1 < len(with) && 2*r+1 < len(without); r++ {
		rounds = append(rounds, (with[2*r]+with[2*r+1])/(without[2*r]+without[2*r+1]))
	}
	if len(rounds) == 0 {
		return nil, 0
	}
	s := slices.Clone(rounds)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return rounds, 1 - m
}

// EngineExcess is what a platform adds to the engines it uses: the sum over
// the engines of each one's CPU while the platform ran minus its CPU while
// the platform was stopped (both measured in the same run, in % of a core),
// a negative difference counting as 0 (the engines' other work moved, not
// the platform's).
func EngineExcess(running, stopped map[string]float64) float64 {
	var sum float64
	for name, v := range running {
		sum += max(0, v-stopped[name])
	}
	return sum
}
