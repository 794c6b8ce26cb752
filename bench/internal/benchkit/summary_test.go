package benchkit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestVerdict(t *testing.T) {
	tests := []struct {
		name     string
		met      bool
		problems []string
		want     string
	}{
		{"target met, result correct", true, nil, "met"},
		{"target met, empty problems", true, []string{"", Problem("events applied", 5, 5)}, "met"},
		{"target missed", false, nil, "NOT met"},
		{"target met, a discrepancy missed", true, []string{Problem("injected discrepancies missed", 1, 0)}, "NOT met: injected discrepancies missed: 1, want 0"},
		{"both", false, []string{Problem("events applied", 4, 5), "claimer error: boom"}, "NOT met: target missed; events applied: 4, want 5; claimer error: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Verdict(tt.met, tt.problems...); got != tt.want {
				t.Errorf("Verdict = %q, want %q", got, tt.want)
			}
		})
	}
}

// The paced phases of bench/e2e: the latency target at an offered rate
// fails on a slow p99, on a rate the phase could not commit, and on an
// event not applied, each alone.
func TestPacedVerdict(t *testing.T) {
	notApplied := Problem("acknowledged versions never visible", 3, 0)
	tests := []struct {
		name               string
		p99                time.Duration
		committed, offered float64
		problems           []string
		want               string
	}{
		{"within target at the rate", 120 * time.Millisecond, 990, 1000, nil, "met"},
		{"p99 over the target", 173 * time.Millisecond, 998, 1000, nil, "NOT met"},
		{"rate not reached", 120 * time.Millisecond, 656, 899, nil, "NOT met: committed 656/s, 73% of the 899/s offered"},
		{"an event not applied", 120 * time.Millisecond, 1000, 1000, []string{notApplied, ""}, "NOT met: acknowledged versions never visible: 3, want 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PacedVerdict(tt.p99, 150*time.Millisecond, tt.committed, tt.offered, tt.problems...); got != tt.want {
				t.Errorf("PacedVerdict = %q, want %q", got, tt.want)
			}
		})
	}
}

// bench/reconcile's write cost of the bucket triggers: rounds of A B B A,
// and a verdict that fails when the triggers cost more than the target.
func TestWriteCost(t *testing.T) {
	// Two rounds: A 900, 1000 against B 1000, 1000 (95%); A 800, 800
	// against B 1000, 1000 (80%).
	rounds, cost := WriteCost([]float64{900, 1000, 800, 800}, []float64{1000, 1000, 1000, 1000})
	if len(rounds) != 2 || math.Abs(rounds[0]-0.95) > 1e-9 || math.Abs(rounds[1]-0.8) > 1e-9 {
		t.Errorf("rounds = %v, want [0.95 0.8]", rounds)
	}
	if math.Abs(cost-(1-0.875)) > 1e-9 {
		t.Errorf("cost = %v, want 0.125 (1 - the median round)", cost)
	}
	if got := Verdict(cost <= 0.15); got != "met" {
		t.Errorf("a 12.5%% cost against a 15%% target: %q, want met", got)
	}
	// A deliberately wrong result: triggers that take 30% of the commits.
	_, cost = WriteCost([]float64{700, 700, 700, 700, 700, 700}, []float64{1000, 1000, 1000, 1000, 1000, 1000})
	if got := Verdict(cost <= 0.15); got != "NOT met" {
		t.Errorf("a %.0f%% cost against a 15%% target: %q, want NOT met", 100*cost, got)
	}
	if rounds, cost := WriteCost(nil, []float64{1}); rounds != nil || cost != 0 {
		t.Errorf("no complete round: %v, %v", rounds, cost)
	}
}

// bench/idle's platform figure: the servers plus what each engine used
// above its own idle measured with the servers stopped; a negative
// difference (the engine's other work moved) counts as nothing, and a
// deliberately costly platform turns the verdict NOT met.
func TestEngineExcess(t *testing.T) {
	running := map[string]float64{"mariadbd": 0.47, "clickhouse": 0.40, "pulsar": 1.80}
	stopped := map[string]float64{"mariadbd": 0, "clickhouse": 0.53, "pulsar": 2.67}
	if got := EngineExcess(running, stopped); math.Abs(got-0.47) > 1e-9 {
		t.Errorf("EngineExcess = %v, want 0.47 (only mariadbd used more with the servers running)", got)
	}
	if got := Verdict(0.90+EngineExcess(running, stopped) < 2); got != "met" {
		t.Errorf("servers 0.90%% + 0.47%%: %q, want met", got)
	}
	// Polls that cost the shard server 1.2% of a core on top of 0.9%.
	running["mariadbd"] = 1.2
	if got := Verdict(0.90+EngineExcess(running, stopped) < 2); got != "NOT met" {
		t.Errorf("servers 0.90%% + 1.2%%: %q, want NOT met", got)
	}
}

// bench/run.sh's table: printed either way, exit 0 only when every verdict
// is met; a deliberately wrong result (a verdict turned NOT met by a missed
// discrepancy) or a program without a SUMMARY line makes it fail.
func TestRunShExitsNonZeroOnAnyNotMet(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	met := "SUMMARY|reconcile|CONTENT pushed down, 100 results|9000 records/s|900 records/s streamed|10.0x|>= 5x|" + Verdict(true) + "\n"
	wrong := "SUMMARY|reconcile|CONTENT pushed down, 100 results|9000 records/s|900 records/s streamed|10.0x|>= 5x|" +
		Verdict(true, Problem("injected discrepancies missed", 2, 0)) + "\n"
	triggers := func(cost float64) string {
		return "SUMMARY|reconcile|write cost of the bucket triggers, 16 clients, A B B A x 3|" + fmt.Sprintf("%.1f%% fewer commits/s", 100*cost) +
			"|4203 commits/s without|-|<= 15% fewer|" + Verdict(cost <= 0.15) + "\n"
	}
	paced := func(p99 time.Duration, committed float64, problems ...string) string {
		return "SUMMARY|e2e|commit->visible p99, paced 1000 events/s|" + p99.String() + "|-|-|<= 150ms at >= 95% of 1000/s, every event applied|" +
			PacedVerdict(p99, 150*time.Millisecond, committed, 1000, problems...) + "\n"
	}
	parts := "SUMMARY|e2e|ClickHouse inserts/s per table, paced 1000 events/s|fitness_result_versions 19.6|-|-|-|-\n"
	okE2E := paced(120*time.Millisecond, 1000) + parts
	idle := func(platform float64) string {
		return fmt.Sprintf("SUMMARY|idle|idle platform CPU, six servers + engines' share|%.2f%%|-|-|< 2%% of a core|%s\n", platform, Verdict(platform < 2))
	}
	tests := []struct {
		name    string
		outputs map[string]string // file -> content
		fail    bool
	}{
		{"every verdict met", map[string]string{"reconcile-mysql.txt": met + triggers(0.09), "e2e-mysql.txt": okE2E, "idle-mysql.txt": idle(1.37)}, false},
		{"an idle platform over its target", map[string]string{"reconcile-mysql.txt": met + triggers(0.09), "e2e-mysql.txt": okE2E, "idle-mysql.txt": idle(2.10)}, true},
		{"a wrong result", map[string]string{"reconcile-mysql.txt": wrong + triggers(0.09), "e2e-mysql.txt": okE2E, "idle-mysql.txt": idle(1.37)}, true},
		{"triggers over their write cost", map[string]string{"reconcile-mysql.txt": met + triggers(0.3), "e2e-mysql.txt": okE2E, "idle-mysql.txt": idle(1.37)}, true},
		{"p99 over its target", map[string]string{"reconcile-mysql.txt": met + triggers(0.09), "e2e-mysql.txt": paced(173*time.Millisecond, 1000) + parts, "idle-mysql.txt": idle(1.37)}, true},
		{"rate not reached", map[string]string{"reconcile-mysql.txt": met + triggers(0.09), "e2e-mysql.txt": paced(120*time.Millisecond, 600) + parts, "idle-mysql.txt": idle(1.37)}, true},
		{"an event not applied", map[string]string{"reconcile-mysql.txt": met + triggers(0.09),
			"e2e-mysql.txt": paced(120*time.Millisecond, 1000, Problem("acknowledged versions never visible", 1, 0)) + parts, "idle-mysql.txt": idle(1.37)}, true},
		{"no SUMMARY line", map[string]string{"reconcile-mysql.txt": "panic: boom\n", "e2e-mysql.txt": okE2E, "idle-mysql.txt": idle(1.37)}, true},
		{"no output at all", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for f, c := range tt.outputs {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "bench", "run.sh"), "--table", dir, "reconcile", "e2e", "idle")
			cmd.Env = append(os.Environ(), "RS_BENCH_ENGINES=mysql")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				t.Fatalf("bench/run.sh --table: %v\n%s", err, out.String())
			}
			if failed := err != nil; failed != tt.fail {
				t.Errorf("bench/run.sh --table failed = %v, want %v\n%s", failed, tt.fail, out.String())
			}
			if !strings.Contains(out.String(), "bench") || !strings.Contains(out.String(), "verdict") {
				t.Errorf("no summary table printed:\n%s", out.String())
			}
		})
	}
}
