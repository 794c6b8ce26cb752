package config_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/platform/config"
)

// marker stands for a secret value in the second parse of FuzzLoaderParse.
const marker = "SECRETMARKERqz7"

type fuzzCfg struct {
	dsn, addr, level string
	n                int
	d                time.Duration
	b                bool
}

// fuzzParse loads a configuration like a service does, from args and the
// environment values env (RS_PROFILE and four RS_FUZZ_* keys), and returns
// it with the error text and what the flag package printed.
func fuzzParse(t *testing.T, args []string, env [5]string) (fuzzCfg, *config.Loader, string, string) {
	t.Helper()
	keys := [5]string{"RS_PROFILE", "RS_FUZZ_CONTROL_DSN", "RS_FUZZ_GRACE", "RS_FUZZ_TIMEOUT", "RS_FUZZ_FLAG"}
	for i, k := range keys {
		old, had := os.LookupEnv(k)
		if err := os.Setenv(k, env[i]); err != nil {
			t.Skip("not an environment value:", err)
		}
		defer func() {
			if had {
				_ = os.Setenv(k, old)
			} else {
				_ = os.Unsetenv(k)
			}
		}()
	}
	var c fuzzCfg
	var out strings.Builder
	l := config.NewLoader("svc")
	l.FS.SetOutput(&out)
	l.Need(&c.dsn, "control-dsn", "RS_FUZZ_CONTROL_DSN", "local:pw@tcp(127.0.0.1:1)/c", "control DSN", true)
	l.Need(&c.addr, "clickhouse-addr", "RS_FUZZ_CH_ADDR", "127.0.0.1:19000", "ClickHouse", false)
	l.String(&c.level, "log-level", "RS_FUZZ_LOG_LEVEL", "info", "log level")
	l.Int(&c.n, "grace", "RS_FUZZ_GRACE", 10, "grace")
	l.Duration(&c.d, "timeout", "RS_FUZZ_TIMEOUT", time.Second, "timeout")
	l.Bool(&c.b, "flag", "RS_FUZZ_FLAG", false, "a switch")
	var msg string
	if err := l.Parse(args); err != nil {
		msg = err.Error()
	}
	return c, l, msg, out.String()
}

// FuzzLoaderParse: configuration from random flags and environment values
// never panics; an accepted one has a valid profile and every required
// setting; an error or the usage the flag package prints never shows a
// value written for a secret setting (checked by parsing again with every
// such value replaced by a marker), wherever it stands in the arguments.
func FuzzLoaderParse(f *testing.F) {
	add := func(args string, env ...string) {
		var e [5]string
		copy(e[:], env)
		f.Add(args, e[0], e[1], e[2], e[3], e[4])
	}
	add("--profile=local")
	add("", "local")
	add("--control-dsn=prod:s3cr3t-pw@tcp(db:3306)/c\n--clickhouse-addr=ch:9000")
	add("--control-dsn\nprod:s3cr3t-pw@tcp(db:3306)/c\n--clickhouse-addr=ch:9000")
	add("extra\n--control-dsn=prod:s3cr3t-pw@tcp(db:3306)/c")
	add("--grace\n--control-dsn=prod:s3cr3t-pw@tcp(db:3306)/c")
	add("---control-dsn=prod:s3cr3t-pw@tcp(db:3306)/c")
	add("--profile\n--control-dsn=prod:s3cr3t-pw@tcp(db:3306)/c")
	add("--clickhouse-addr=ch:9000", "", "prod:s3cr3t-pw@tcp(db:3306)/c", "ten", "1 hour", "maybe")
	add("--help")
	add("--timeout=-1s\n--flag=2\n--grace=99999999999999999999", "staging")
	f.Fuzz(func(t *testing.T, argText, profile, envDSN, envGrace, envTimeout, envFlag string) {
		var args []string
		if argText != "" {
			args = strings.Split(argText, "\n")
		}
		env := [5]string{profile, envDSN, envGrace, envTimeout, envFlag}
		c, l, msg, _ := fuzzParse(t, args, env)
		if msg == "" && !containsHelp(args) {
			if p := l.Profile(); p != config.ProfileProduction && p != config.ProfileLocal {
				t.Fatalf("accepted profile %q", p)
			}
			if c.dsn == "" || c.addr == "" {
				t.Fatalf("accepted without a required setting: %+v", c)
			}
		}
		if strings.Contains(argText+profile+envDSN+envGrace+envTimeout+envFlag, marker) {
			return
		}
		// Parse again with each secret replaced by the marker: the marker
		// must not come out.
		margs := append([]string(nil), args...)
		for i, a := range margs {
			if !strings.HasPrefix(a, "-") {
				continue
			}
			name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			switch {
			case name != "control-dsn":
			case hasValue:
				margs[i] = a[:strings.Index(a, "=")+1] + marker
			case i+1 < len(margs):
				margs[i+1] = marker
			}
		}
		menv := env
		if menv[1] != "" {
			menv[1] = marker
		}
		_, _, mmsg, mout := fuzzParse(t, margs, menv)
		if strings.Contains(mmsg, marker) || strings.Contains(mout, marker) {
			t.Fatalf("args %q, env %q: a secret setting's value is shown:\nerror: %s\noutput: %s", margs, menv, mmsg, mout)
		}
	})
}

func containsHelp(args []string) bool {
	for _, a := range args {
		if s := strings.TrimLeft(a, "-"); s == "help" || s == "h" {
			return true
		}
	}
	return false
}
