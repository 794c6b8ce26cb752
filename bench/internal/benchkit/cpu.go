package benchkit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ProcessCPU is the user + system CPU time process pid has used so far:
// this process's from getrusage, another's from /proc/<pid>/stat.
func ProcessCPU(pid int) (time.Duration, bool) {
	if pid == os.Getpid() {
		var ru syscall.Rusage
		if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
			return 0, false
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0, false
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+st) * time.Second / 100, true // USER_HZ
}

// StackPID is the pid of one of the local stack's servers, read from its
// pid file under $RS_STATE (.local from the repository root by default):
// server is "mysql", "mariadb", "clickhouse" or "pulsar".
func StackPID(server string) (int, bool) {
	state := os.Getenv("RS_STATE")
	if state == "" {
		state = ".local"
	}
	var f string
	switch server {
	case "mysql", "mariadb":
		f = filepath.Join(state, server, server+".pid")
	case "clickhouse":
		f = filepath.Join(state, "clickhouse", "clickhouse-server.pid")
	case "pulsar":
		f = filepath.Join(state, "pulsar.pid")
	default:
		return 0, false
	}
	b, err := os.ReadFile(f) //nolint:gosec // the local stack's own pid file, under the operator's $RS_STATE
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil
}

// CPUMeter reads the CPU time of named processes, to tell what a phase
// cost each of them.
type CPUMeter map[string]int // name -> pid

// Read returns each process's CPU time so far (a process it cannot read is
// left out).
func (m CPUMeter) Read() map[string]time.Duration {
	out := make(map[string]time.Duration, len(m))
	for name, pid := range m {
		if c, ok := ProcessCPU(pid); ok {
			out[name] = c
		}
	}
	return out
}

// Since returns, per process, the CPU used since the reading before (both
// from Read); a process missing from either reading is left out.
func (m CPUMeter) Since(before map[string]time.Duration) map[string]time.Duration {
	now := m.Read()
	out := make(map[string]time.Duration, len(now))
	for name, c := range now {
		if b, ok := before[name]; ok {
			out[name] = c - b
		}
	}
	return out
}

// Settle waits until every process of m is quiet — each under 10% of a core
// over half a second — or at most limit, and returns how long it waited. A
// phase that starts while the servers still purge, flush and merge what the
// last phase (or the last benchmark) wrote pays for that work, and its
// figures then measure the aftermath, not the phase.
func (m CPUMeter) Settle(ctx context.Context, limit time.Duration) time.Duration {
	const window = 500 * time.Millisecond
	start := time.Now()
	for time.Since(start) < limit && ctx.Err() == nil {
		before := m.Read()
		select {
		case <-ctx.Done():
			return time.Since(start)
		case <-time.After(window):
		}
		quiet := true
		for _, used := range m.Since(before) {
			if used > window/10 {
				quiet = false
			}
		}
		if quiet {
			break
		}
	}
	return time.Since(start)
}

// StackMeter is a CPUMeter of the local stack's servers that are running:
// "engine" names the MySQL-family server of $RS_MYSQL_ENGINE (mysql unless
// it is mariadb), the others are StackPID's names.
func StackMeter(servers ...string) CPUMeter {
	m := CPUMeter{}
	for _, s := range servers {
		if s == "engine" {
			s = "mysql"
			if os.Getenv("RS_MYSQL_ENGINE") == "mariadb" {
				s = "mariadb"
			}
		}
		if pid, ok := StackPID(s); ok {
			m[s] = pid
		}
	}
	return m
}
