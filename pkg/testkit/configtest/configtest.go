// Package configtest holds what the servers' configuration tests share: an
// environment cleared of resultsync settings, and the table test of a
// server's Load.
package configtest

import (
	"os"
	"strings"
	"testing"
)

// ClearEnv hides every resultsync setting (RS_*) of the process's
// environment from the test, so that a loader sees only what the test sets.
// It uses t.Setenv: the test must not be parallel.
func ClearEnv(t testing.TB) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "RS_") {
			t.Setenv(k, "")
		}
	}
}

// Case is one row of a Load table.
type Case struct {
	Name string
	Args []string
	// WantErr are substrings every one of which the error names; none: Load
	// succeeds.
	WantErr []string
}

// Validating is a loaded configuration: a pointer to it validates it.
type Validating[C any] interface {
	*C
	Validate() error
}

// Load runs each case as a subtest, the environment cleared (ClearEnv).
// A case with no WantErr must load, its configuration must pass Validate,
// then check (when not nil). Any other must fail to load with an error that
// names every WantErr and contains none of secrets (passwords in the
// arguments a loader must never print).
func Load[C any, PC Validating[C]](t *testing.T, load func(args []string) (C, error), cases []Case, check func(t *testing.T, cfg C), secrets ...string) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			ClearEnv(t)
			cfg, err := load(tc.Args)
			if len(tc.WantErr) == 0 {
				if err != nil {
					t.Fatalf("Load = %v", err)
				}
				if err := PC(&cfg).Validate(); err != nil {
					t.Errorf("Validate of a loaded config = %v", err)
				}
				if check != nil {
					check(t, cfg)
				}
				return
			}
			if err == nil {
				t.Fatalf("Load(%q) succeeded; want an error naming %q", tc.Args, tc.WantErr)
			}
			for _, want := range tc.WantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not name %q:\n%v", want, err)
				}
			}
			for _, s := range secrets {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error prints a secret (%q):\n%v", s, err)
				}
			}
		})
	}
}
