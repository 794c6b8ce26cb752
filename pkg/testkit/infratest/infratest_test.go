package infratest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// TestHelperUnreachableMySQL is run as a subprocess by
// TestMissingServerFailsUnderCI; on its own it does nothing.
func TestHelperUnreachableMySQL(t *testing.T) {
	if os.Getenv("RS_INFRATEST_HELPER") == "" {
		return
	}
	infratest.NewMySQLDatabase(t, schema.Shard)
	t.Log("UNREACHED: the database was created")
}

// TestMissingServerFailsUnderCI: with CI set, a server that cannot be reached
// fails the test and prints the tail of its log; without CI it is skipped with
// a message saying how to start it.
func TestMissingServerFailsUnderCI(t *testing.T) {
	state := t.TempDir()
	if err := os.MkdirAll(filepath.Join(state, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mysql.log", "mariadb.log"} {
		if err := os.WriteFile(filepath.Join(state, "logs", name), []byte("line 1\n[ERROR] marker: InnoDB could not start\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(ci bool) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperUnreachableMySQL$", "-test.v")
		var env []string
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, "CI=") && !strings.HasPrefix(e, "RS_REQUIRE_INFRA=") {
				env = append(env, e)
			}
		}
		// Last, so they win over the environment's values.
		env = append(env, "RS_INFRATEST_HELPER=1", "RS_STATE="+state, "RS_MYSQL_PORT=1")
		if ci {
			env = append(env, "CI=true")
		}
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := run(true)
	if err == nil {
		t.Fatalf("with CI set, an unreachable MySQL server did not fail the test:\n%s", out)
	}
	for _, want := range []string{"--- FAIL", infratest.MySQLEngine() + " is not reachable", "marker: InnoDB could not start"} {
		if !strings.Contains(out, want) {
			t.Errorf("CI output lacks %q:\n%s", want, out)
		}
	}

	out, err = run(false)
	if err != nil {
		t.Fatalf("without CI, an unreachable MySQL server failed instead of skipping: %v\n%s", err, out)
	}
	if !strings.Contains(out, "--- SKIP") || !strings.Contains(out, "make up") {
		t.Errorf("without CI, want a skip that says how to start the stack:\n%s", out)
	}
}
