package benchkit

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

func TestProcessCPU(t *testing.T) {
	if _, ok := ProcessCPU(1 << 30); ok {
		t.Error("ProcessCPU of a pid that does not exist: ok")
	}
	// /proc/<pid>/stat of another process (init is always there).
	if _, ok := ProcessCPU(1); !ok {
		t.Error("ProcessCPU(1): not read")
	}
	m := CPUMeter{"self": os.Getpid(), "gone": 1 << 30}
	before := m.Read()
	if _, ok := before["gone"]; ok {
		t.Error("a process that does not exist has a reading")
	}
	end := time.Now().Add(100 * time.Millisecond)
	for time.Now().Before(end) { //nolint:revive // burn CPU on purpose
	}
	used := m.Since(before)
	if used["self"] < 50*time.Millisecond || used["self"] > 5*time.Second {
		t.Errorf("self used %s in a 100 ms busy loop", used["self"])
	}
}

func TestSettleStopsWhenQuiet(t *testing.T) {
	// This test's process is idle while Settle watches it: one window.
	start := time.Now()
	if waited := (CPUMeter{"self": os.Getpid()}).Settle(context.Background(), 10*time.Second); waited > 5*time.Second {
		t.Errorf("Settle waited %s (elapsed %s) on an idle process", waited, time.Since(start))
	}
	// A busy process: Settle gives up at its limit.
	var stop atomic.Bool
	defer stop.Store(true)
	go func() {
		for !stop.Load() { //nolint:revive // burn CPU on purpose
		}
	}()
	if waited := (CPUMeter{"self": os.Getpid()}).Settle(context.Background(), 1200*time.Millisecond); waited < time.Second {
		t.Errorf("Settle returned after %s while the process stayed busy", waited)
	}
}
