package infratest

import (
	"testing"
	"time"
)

// WaitFor polls cond every 20 ms until it holds, failing the test with what
// when timeout passes first: a condition waited for under a deadline, never
// a sleep followed by an assertion.
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
