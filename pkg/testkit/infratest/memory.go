package infratest

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Memory is what MemoryWatch saw of this process, in MiB (-1 where the
// platform has no /proc).
type Memory struct {
	Before   float64 // resident set when the watch started (after a GC)
	Peak     float64 // highest resident set while it ran
	After    float64 // resident set when it stopped
	HeapPeak float64 // highest Go heap in use sampled while it ran
}

// MemoryWatch measures the resident memory of this process over a span of
// work: Start collects garbage, returns memory to the OS and resets the
// kernel's peak (VmHWM, through /proc/self/clear_refs), Stop reads the peak;
// the Go heap is sampled every interval meanwhile (and the resident set
// too, where the peak cannot be reset).
type MemoryWatch struct {
	m     Memory
	reset bool
	mu    sync.Mutex
	stop  chan struct{}
	wg    sync.WaitGroup
}

// StartMemoryWatch starts a watch sampling every interval.
func StartMemoryWatch(interval time.Duration) *MemoryWatch {
	runtime.GC()
	debug.FreeOSMemory()
	w := &MemoryWatch{stop: make(chan struct{})}
	w.m.Before = ProcStatusMiB("VmRSS")
	w.reset = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			rss := ProcStatusMiB("VmRSS")
			w.mu.Lock()
			w.m.Peak, w.m.HeapPeak = max(w.m.Peak, rss), max(w.m.HeapPeak, float64(ms.HeapInuse)/(1<<20))
			w.mu.Unlock()
			select {
			case <-w.stop:
				return
			case <-time.After(interval):
			}
		}
	}()
	return w
}

// Stop ends the watch and returns what it saw.
func (w *MemoryWatch) Stop() Memory {
	close(w.stop)
	w.wg.Wait()
	if w.reset {
		w.m.Peak = max(w.m.Peak, ProcStatusMiB("VmHWM"))
	}
	w.m.After = ProcStatusMiB("VmRSS")
	return w.m
}

// ProcStatusMiB reads a "kB" line of /proc/self/status (VmRSS, VmHWM, ...)
// in MiB; -1 when there is none.
func ProcStatusMiB(field string) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				return -1
			}
			return kb / 1024
		}
	}
	return -1
}
