// Package config reads service configuration from flags with environment
// fallbacks. A flag given on the command line wins over the environment, which
// wins over the default. Every service validates the result at start-up.
package config

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"
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
	FS   *flag.FlagSet
	errs []error
}

// NewLoader returns a Loader over a new FlagSet named name.
func NewLoader(name string) *Loader {
	return &Loader{FS: flag.NewFlagSet(name, flag.ContinueOnError)}
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

// Parse parses args and returns the first environment or flag error.
func (l *Loader) Parse(args []string) error {
	if len(l.errs) > 0 {
		return l.errs[0]
	}
	if err := l.FS.Parse(args); err != nil {
		return fmt.Errorf("parsing flags: %w", err)
	}
	if l.FS.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", l.FS.Args())
	}
	return nil
}
