package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// cpuShot is the CPU time used so far by the machine and by the processes
// of the local stack, read from /proc (Linux only; empty elsewhere), so the
// report can say which of them the 2 cores went to in each phase.
type cpuShot struct {
	at    time.Time
	total uint64            // jiffies over every core, idle included
	idle  uint64            // idle + iowait jiffies
	procs map[string]uint64 // utime+stime jiffies per group
}

// groups, in print order; "other" is every process not listed.
var groups = []string{"bench", "mysqld", "mariadbd", "clickhouse", "pulsar", "other"}

func groupOf(pid int, comm string) string {
	switch {
	case pid == os.Getpid():
		return "bench"
	case comm == "mariadbd":
		return "mariadbd"
	case comm == "mysqld":
		return "mysqld"
	case strings.HasPrefix(comm, "clickhouse"):
		return "clickhouse"
	}
	cmd, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	switch {
	case comm == "java" && strings.Contains(string(cmd), "pulsar"):
		return "pulsar"
	case strings.HasPrefix(comm, "ld-linux") && strings.Contains(string(cmd), "mysqld"):
		return "mysqld" // MySQL 9.7 runs through its root's loader
	}
	return "other"
}

func readCPU() cpuShot {
	s := cpuShot{at: time.Now(), procs: map[string]uint64{}}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	for i, v := range f[1:] {
		n, _ := strconv.ParseUint(v, 10, 64)
		if i >= 8 { // guest time is already counted in user
			break
		}
		s.total += n
		if i == 3 || i == 4 {
			s.idle += n
		}
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime(14) stime(15): comm may hold spaces.
		open, closing := strings.IndexByte(string(st), '('), strings.LastIndexByte(string(st), ')')
		if open < 0 || closing < open {
			continue
		}
		rest := strings.Fields(string(st[closing+1:]))
		if len(rest) < 13 {
			continue
		}
		ut, _ := strconv.ParseUint(rest[11], 10, 64)
		stime, _ := strconv.ParseUint(rest[12], 10, 64)
		s.procs[groupOf(pid, string(st[open+1:closing]))] += ut + stime
	}
	return s
}

// cpuReport describes where the CPU went between a and b, in percent of
// one core (the machine has 100% per core; every process of the machine is
// counted, other engineers' included).
func cpuReport(a, b cpuShot) string {
	if b.total <= a.total {
		return "CPU: not measured"
	}
	cores := runtime.NumCPU()
	per := func(j uint64) float64 { return 100 * float64(cores) * float64(j) / float64(b.total-a.total) }
	var parts []string
	for _, g := range groups {
		d := b.procs[g] - a.procs[g]
		if b.procs[g] < a.procs[g] || (d == 0 && g != "bench") {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.0f%%", g, per(d)))
	}
	parts = append(parts, fmt.Sprintf("idle %.0f%%", per(b.idle-a.idle)))
	return fmt.Sprintf("CPU (%% of one core, %d cores): %s", cores, strings.Join(parts, ", "))
}
