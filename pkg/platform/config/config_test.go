package config_test

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/resultsync/resultsync/pkg/platform/config"
)

type cfg struct {
	dsn, addr, level string
	grace            int
}

func load(t *testing.T, args []string) (cfg, *config.Loader, error) {
	t.Helper()
	var c cfg
	l := config.NewLoader("svc")
	l.FS.SetOutput(io.Discard)
	l.Need(&c.dsn, "control-dsn", "RS_TEST_CONTROL_DSN", "dev:devpass@tcp(127.0.0.1:13306)/rs_control", "control DSN", true)
	l.Need(&c.addr, "clickhouse-addr", "RS_TEST_CH_ADDR", "127.0.0.1:19000", "ClickHouse", false)
	l.String(&c.level, "log-level", "RS_TEST_LOG_LEVEL", "info", "log level")
	l.Int(&c.grace, "grace", "RS_TEST_GRACE", 10, "grace")
	return c, l, l.Parse(args)
}

func TestProductionNamesEveryMissingSetting(t *testing.T) {
	t.Setenv("RS_PROFILE", "")
	_, _, err := load(t, nil)
	if err == nil {
		t.Fatal("started without required settings")
	}
	for _, want := range []string{"--control-dsn (env RS_TEST_CONTROL_DSN)", "--clickhouse-addr (env RS_TEST_CH_ADDR)", "--profile=local"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestEveryErrorAtOnce(t *testing.T) {
	t.Setenv("RS_PROFILE", "")
	t.Setenv("RS_TEST_GRACE", "ten")
	_, _, err := load(t, []string{"--profile=staging", "extra"})
	for _, want := range []string{`RS_TEST_GRACE="ten"`, "unexpected arguments", `profile "staging"`, "missing required settings"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not report %q", err, want)
		}
	}
}

func TestLocalProfileAppliesDevelopmentDefaults(t *testing.T) {
	for _, args := range [][]string{{"--profile=local"}, nil} {
		if args == nil {
			t.Setenv("RS_PROFILE", "local")
		}
		c, l, err := load(t, args)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if l.Profile() != config.ProfileLocal || c.dsn == "" || c.addr != "127.0.0.1:19000" {
			t.Errorf("%v: profile %q, dsn %q, addr %q", args, l.Profile(), c.dsn, c.addr)
		}
	}
}

func TestExplicitSettingsWin(t *testing.T) {
	t.Setenv("RS_PROFILE", "local")
	t.Setenv("RS_TEST_CONTROL_DSN", "prod:secret@tcp(db:3306)/control")
	c, _, err := load(t, []string{"--clickhouse-addr=ch:9000"})
	if err != nil || c.dsn != "prod:secret@tcp(db:3306)/control" || c.addr != "ch:9000" {
		t.Errorf("got %+v, %v", c, err)
	}
}

func TestHelpNeverPrintsASecret(t *testing.T) {
	t.Setenv("RS_PROFILE", "")
	t.Setenv("RS_TEST_CONTROL_DSN", "prod:s3cr3t-pw@tcp(db:3306)/control")
	t.Setenv("RS_TEST_CH_ADDR", "ch:9000")
	var c cfg
	l := config.NewLoader("svc")
	var out strings.Builder
	l.FS.SetOutput(&out)
	l.Need(&c.dsn, "control-dsn", "RS_TEST_CONTROL_DSN", "", "control DSN", true)
	l.Need(&c.addr, "clickhouse-addr", "RS_TEST_CH_ADDR", "", "ClickHouse", false)
	err := l.Parse([]string{"--help"})
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	if strings.Contains(out.String(), "s3cr3t") {
		t.Errorf("--help prints the secret:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "control-dsn") || !strings.Contains(out.String(), "ch:9000") {
		t.Errorf("--help lacks the settings:\n%s", out.String())
	}
}

// An optional secret (a password, a token) is empty unless set, never
// required, and never shown by --help or in an error, from the environment
// or from a flag, even misplaced.
func TestOptionalSecretIsNeverPrinted(t *testing.T) {
	t.Setenv("RS_PROFILE", "")
	t.Setenv("RS_TEST_CONTROL_DSN", "dsn")
	t.Setenv("RS_TEST_CH_ADDR", "ch:9000")
	newLoader := func(out io.Writer, token *string) *config.Loader {
		var c cfg
		l := config.NewLoader("svc")
		l.FS.SetOutput(out)
		l.Need(&c.dsn, "control-dsn", "RS_TEST_CONTROL_DSN", "", "control DSN", true)
		l.Need(&c.addr, "clickhouse-addr", "RS_TEST_CH_ADDR", "", "ClickHouse", false)
		l.Int(&c.grace, "grace", "RS_TEST_GRACE", 10, "grace")
		l.Secret(token, "token", "RS_TEST_TOKEN", "broker token")
		return l
	}

	var token string
	if err := newLoader(io.Discard, &token).Parse(nil); err != nil || token != "" {
		t.Fatalf("unset: token %q, %v; want empty and no error (optional)", token, err)
	}

	t.Setenv("RS_TEST_TOKEN", "env-s3cret-token")
	var out strings.Builder
	if err := newLoader(&out, &token).Parse([]string{"--help"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	if strings.Contains(out.String(), "env-s3cret") || !strings.Contains(out.String(), "RS_TEST_TOKEN") {
		t.Errorf("--help shows the secret or lacks the setting:\n%s", out.String())
	}
	if err := newLoader(io.Discard, &token).Parse(nil); err != nil || token != "env-s3cret-token" {
		t.Fatalf("from the environment: token %q, %v", token, err)
	}

	out.Reset()
	err := newLoader(&out, &token).Parse([]string{"--grace", "--token=flag-s3cret-token", "x"})
	if err == nil {
		t.Fatal("a misplaced flag parsed")
	}
	if strings.Contains(err.Error()+out.String(), "flag-s3cret") {
		t.Errorf("the error or the output shows the secret: %v\n%s", err, out.String())
	}
	if err := newLoader(io.Discard, &token).Parse([]string{"--token", "flag-s3cret-token"}); err != nil || token != "flag-s3cret-token" {
		t.Fatalf("from the flag: token %q, %v", token, err)
	}
}
