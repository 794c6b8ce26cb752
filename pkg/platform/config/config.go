// Package config reads service configuration from flags with environment
// fallbacks. A flag given on the command line wins over the environment, which
// wins over the default. Every service validates the result at start-up.
//
// Configuration fails closed: a setting that locates a dependency or carries
// a credential (Need) has no production default. A server started without
// it refuses to start, naming every missing or invalid setting at once. The
// development stack's values apply only in the local profile, chosen
// explicitly with --profile=local or RS_PROFILE=local (deploy/local/env.sh
// does). Secret settings never appear in --help or in errors.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Profiles.
const (
	ProfileProduction = ""      // the default: no development defaults
	ProfileLocal      = "local" // the local stack of deploy/local
)

// Env returns the value of the environment variable key, or def when it is unset or empty.
func Env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// Loader defines flags on a FlagSet whose defaults come from the environment.
// Malformed environment values are collected and reported by Err, so that a
// typo in the environment fails start-up instead of silently using a default.
type Loader struct {
	FS      *flag.FlagSet
	errs    []error
	needs   []need
	secrets []string // the names of the secret settings (Need with secret, Secret)
	profile string
	// profileTo receive the chosen profile when Parse ends (ProfileTo).
	profileTo []*string
}

type need struct {
	p         *string
	name, key string
	local     string
}

// NewLoader returns a Loader over a new FlagSet named name, with the
// --profile flag defined.
func NewLoader(name string) *Loader {
	l := &Loader{FS: flag.NewFlagSet(name, flag.ContinueOnError)}
	l.FS.StringVar(&l.profile, "profile", Env("RS_PROFILE", ProfileProduction),
		`"local" applies the development stack's defaults and tokens (deploy/local); empty (production) requires every setting (env RS_PROFILE)`)
	return l
}

// Profile is the chosen profile (after Parse).
func (l *Loader) Profile() string { return l.profile }

// ProfileTo makes Parse write the chosen profile to p, so a setting allowed
// only in one profile can be checked with the rest of the configuration.
func (l *Loader) ProfileTo(p *string) { l.profileTo = append(l.profileTo, p) }

// secretValue is a flag.Value whose value is never printed.
type secretValue struct{ p *string }

func (v secretValue) String() string { return "" }
func (v secretValue) Set(s string) error {
	*v.p = s
	return nil
}

// Need defines a required string setting with no production default: the
// flag name or the environment key must set it, except in the local profile,
// where local applies. A secret one (DSNs with passwords, tokens) is never
// shown by --help or in an error.
func (l *Loader) Need(p *string, name, key, local, usage string, secret bool) {
	*p = os.Getenv(key)
	usage += " (env " + key + "; required"
	if local != "" {
		usage += ", the local profile has a default"
	}
	usage += ")"
	if secret {
		l.FS.Var(secretValue{p}, name, usage)
		l.secrets = append(l.secrets, name)
	} else {
		l.FS.StringVar(p, name, *p, usage)
	}
	l.needs = append(l.needs, need{p: p, name: name, key: key, local: local})
}

// Secret defines an optional secret string setting (a password, a token),
// empty unless the flag or the environment key sets it. Like a secret Need,
// its value is never shown by --help or in an error.
func (l *Loader) Secret(p *string, name, key, usage string) {
	*p = os.Getenv(key)
	l.FS.Var(secretValue{p}, name, usage+" (env "+key+"; secret)")
	l.secrets = append(l.secrets, name)
}

// ClickHouseCredentials defines --clickhouse-user (env RS_CH_USER, default
// "default") and --clickhouse-password (env RS_CH_PASSWORD, secret, default
// none): the ClickHouse account every connection of the server uses.
func (l *Loader) ClickHouseCredentials(user, password *string) {
	l.String(user, "clickhouse-user", "RS_CH_USER", "default", "ClickHouse user")
	l.Secret(password, "clickhouse-password", "RS_CH_PASSWORD", "ClickHouse password of --clickhouse-user (empty: none)")
}

// PulsarToken defines --pulsar-token (env RS_PULSAR_TOKEN, secret, default
// none): the token (JWT) the Pulsar client presents to a broker with token
// authentication (AuthenticationProviderToken); empty: no authentication.
func (l *Loader) PulsarToken(token *string) {
	l.Secret(token, "pulsar-token", "RS_PULSAR_TOKEN", "Pulsar authentication token (JWT; empty: none)")
}

// String defines a string flag name, defaulting to env key or def.
func (l *Loader) String(p *string, name, key, def, usage string) {
	l.FS.StringVar(p, name, Env(key, def), usage+" (env "+key+")")
}

// Duration defines a duration flag name, defaulting to env key or def.
func (l *Loader) Duration(p *time.Duration, name, key string, def time.Duration, usage string) {
	v := def
	if s := os.Getenv(key); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			l.errs = append(l.errs, fmt.Errorf("environment %s=%q: %w", key, s, err))
		} else {
			v = d
		}
	}
	l.FS.DurationVar(p, name, v, usage+" (env "+key+")")
}

// Int defines an int flag name, defaulting to env key or def.
func (l *Loader) Int(p *int, name, key string, def int, usage string) {
	v := def
	if s := os.Getenv(key); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			l.errs = append(l.errs, fmt.Errorf("environment %s=%q: %w", key, s, err))
		} else {
			v = n
		}
	}
	l.FS.IntVar(p, name, v, usage+" (env "+key+")")
}

// Bool defines a bool flag name, defaulting to env key or def.
func (l *Loader) Bool(p *bool, name, key string, def bool, usage string) {
	v := def
	if s := os.Getenv(key); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			l.errs = append(l.errs, fmt.Errorf("environment %s=%q: %w", key, s, err))
		} else {
			v = b
		}
	}
	l.FS.BoolVar(p, name, v, usage+" (env "+key+")")
}

// Parse parses args, applies the local profile's defaults when chosen, and
// returns every environment, flag and missing-setting error at once.
// --help returns flag.ErrHelp after printing the usage. Neither the error nor
// what the flag package prints shows a value written for a secret setting,
// wherever it stands in args (a misplaced one is echoed as an unexpected
// argument or an invalid value of another flag otherwise).
func (l *Loader) Parse(args []string) error {
	secrets := l.secretArgs(args)
	out := l.FS.Output()
	l.FS.SetOutput(redactingWriter{w: out, secrets: secrets})
	defer l.FS.SetOutput(out)
	errs := append([]error(nil), l.errs...)
	if err := l.FS.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		errs = append(errs, fmt.Errorf("parsing flags: %w", err))
	} else if l.FS.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected arguments: %v", l.FS.Args()))
	}
	if err := l.finish(errs); err != nil {
		return redactedError{err: err, secrets: secrets}
	}
	return nil
}

// Load is how a server loads its configuration: it parses args (Parse),
// then checks the result with check(true), which reports every malformed or
// impossible setting and skips the required ones left empty (Parse named
// those). Every error comes at once, prefixed "<name> config: " (the name of
// NewLoader), with no secret in it; --help returns flag.ErrHelp after
// printing the usage. check must read the configuration Parse fills (a
// method value of a pointer receiver, or a closure): a method value of a
// value receiver would check a copy taken before parsing.
func (l *Loader) Load(args []string, check func(loaded bool) error) error {
	err := l.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	if err := errors.Join(err, check(true)); err != nil {
		return fmt.Errorf("%s config: %w", l.FS.Name(), err)
	}
	return nil
}

// Validate is how a server checks a configuration built in code (without a
// Loader): check(false) reports every missing, malformed or impossible
// setting, prefixed "<name> config: " like Load's.
func Validate(name string, check func(loaded bool) error) error {
	if err := check(false); err != nil {
		return fmt.Errorf("%s config: %w", name, err)
	}
	return nil
}

// finish applies the profile and collects the missing settings.
func (l *Loader) finish(errs []error) error {
	switch l.profile {
	case ProfileProduction, ProfileLocal:
	default:
		errs = append(errs, fmt.Errorf("profile %q: want %q or empty (production)", l.profile, ProfileLocal))
	}
	for _, p := range l.profileTo {
		*p = l.profile
	}
	var missing []string
	for _, n := range l.needs {
		if *n.p == "" && l.profile == ProfileLocal {
			*n.p = n.local
		}
		if *n.p == "" {
			missing = append(missing, "--"+n.name+" (env "+n.key+")")
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("missing required settings: %s (or choose the development defaults with --profile=local)",
			strings.Join(missing, ", ")))
	}
	return errors.Join(errs...)
}

// secretArgs returns the values args write for secret settings: "-name=v"
// or "--name=v", or the argument after a bare "-name" or "--name", with any
// number of leading dashes (a mistyped "---name=v" is still a secret).
func (l *Loader) secretArgs(args []string) []string {
	secret := map[string]bool{}
	for _, name := range l.secrets {
		secret[name] = true
	}
	var vals []string
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case !secret[name]:
		case hasValue:
			vals = append(vals, v)
		case i+1 < len(args):
			vals = append(vals, args[i+1])
		}
	}
	return vals
}

// redact replaces every secret in s, as written and as quoted (%q).
func redact(s string, secrets []string) string {
	for _, v := range secrets {
		if v == "" {
			continue
		}
		s = strings.ReplaceAll(s, v, "<redacted>")
		if q := strconv.Quote(v); q[1:len(q)-1] != v {
			s = strings.ReplaceAll(s, q[1:len(q)-1], "<redacted>")
		}
	}
	return s
}

// redactedError is a Parse error whose text hides the secrets.
type redactedError struct {
	err     error
	secrets []string
}

func (e redactedError) Error() string { return redact(e.err.Error(), e.secrets) }
func (e redactedError) Unwrap() error { return e.err }

// redactingWriter hides the secrets in what the flag package prints.
type redactingWriter struct {
	w       io.Writer
	secrets []string
}

func (r redactingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, redact(string(p), r.secrets)); err != nil {
		return 0, err
	}
	return len(p), nil
}
