package benchkit

import (
	"bytes"
	"context"
	"errors"
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
	contextLine := "SUMMARY|reconcile|bucket triggers, write cost|3.1%|-|-|-|-\n"
	tests := []struct {
		name    string
		outputs map[string]string // file -> content
		fail    bool
	}{
		{"every verdict met", map[string]string{"reconcile-mysql.txt": met + contextLine}, false},
		{"a wrong result", map[string]string{"reconcile-mysql.txt": wrong + contextLine}, true},
		{"no SUMMARY line", map[string]string{"reconcile-mysql.txt": "panic: boom\n"}, true},
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
			cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "bench", "run.sh"), "--table", dir, "reconcile")
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
