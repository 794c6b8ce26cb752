// Package infratest connects tests to the real local servers started by
// deploy/local (MariaDB, ClickHouse, Pulsar) and gives each test a fresh,
// migrated database or a unique topic, removed in t.Cleanup.
//
// When a server is unreachable, the test FAILS with the tail of the server's
// log if CI or RS_REQUIRE_INFRA is set (as `make test` does); otherwise it is
// skipped with a message saying how to start the stack. A green CI run can
// therefore never hide a missing server.
package infratest

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resultsync/resultsync/pkg/testkit/chdb"
)

// Required reports whether a missing server must fail the test.
func Required() bool {
	return os.Getenv("CI") != "" || os.Getenv("RS_REQUIRE_INFRA") != ""
}

// Unavailable fails (Required) or skips the test, naming the server, the
// error, and the tail of the server's log file under $RS_STATE/logs.
func Unavailable(t testing.TB, server, logName string, err error) {
	t.Helper()
	msg := fmt.Sprintf("%s is not reachable: %v", server, err)
	if Required() {
		t.Fatalf("%s\n(start it with `make up`; CI requires every server)\n%s", msg, LogTail(logName, 40))
	}
	t.Skipf("%s; run `make up` to start the local stack (set RS_REQUIRE_INFRA=1 to fail instead)", msg)
}

// StateDir is the project-local state directory ($RS_STATE or <repo>/.local;
// see chdb.StateDir).
func StateDir() string { return chdb.StateDir() }

// RepoRoot is $RS_ROOT or the nearest directory above the working directory
// that holds go.mod: where tests find deploy/local's scripts (see
// chdb.RepoRoot).
func RepoRoot() (string, error) { return chdb.RepoRoot() }

// LogTail returns the last n lines of $RS_STATE/logs/<name>, or a note that
// there is none.
func LogTail(name string, n int) string {
	p := filepath.Join(StateDir(), "logs", name)
	f, err := os.Open(p)
	if err != nil {
		return fmt.Sprintf("(no log at %s: %v)", p, err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return fmt.Sprintf("--- last %d lines of %s ---\n%s", len(lines), p, strings.Join(lines, "\n"))
}

// Env returns the environment value of key or def.
func Env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// Suffix returns a short random lower-case hex string for unique names.
func Suffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
