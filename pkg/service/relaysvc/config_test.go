package relaysvc_test

import (
	"strings"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/service/relaysvc"
)

// clearEnv leaves the relay only the settings a test passes.
func clearEnv(t *testing.T) {
	for _, k := range []string{"RS_PROFILE", "RS_SHARDS", "RS_CONTROL_DSN", "RS_PULSAR_URL", "RS_AUTH_TOKENS", "RS_TOPIC",
		"RS_RELAY_GRPC_ADDR", "RS_RELAY_HTTP_ADDR", "RS_RELAY_PUBLISH_TIMEOUT", "RS_RELAY_COMPLETION_TIMEOUT", "RS_RELAY_LEASE", "RS_RELAY_CLAIM_SLOTS", "RS_RELAY_MAX_CONNS", "RS_RELAY_PROBE_INTERVAL"} {
		t.Setenv(k, "")
	}
}

func TestLoad(t *testing.T) {
	const shards = "--shards=shard-0=u:p@tcp(db0:3306)/rs_shard_0,shard-1=u:p@tcp(db1:3306)/rs_shard_1"
	for _, tc := range []struct {
		name string
		args []string
		want []string // substrings of the error; none: Load succeeds
	}{
		{"local profile", []string{"--profile=local"}, nil},
		{"production names every missing setting at once", nil,
			[]string{"--shards (env RS_SHARDS)", "--control-dsn (env RS_CONTROL_DSN)", "--pulsar-url (env RS_PULSAR_URL)", "--auth-tokens (env RS_AUTH_TOKENS)"}},
		{"every invalid setting at once", []string{"--profile=local", "--publish-timeout=40s", "--lease=30s", "--probe-interval=0s",
			"--pulsar-url=http://broker:8080", "--grpc-addr=nonsense"},
			[]string{"lease (30s) must be longer than the publish timeout (40s)", "probe-interval", "pulsar-url", "grpc-addr"}},
		{"lease not longer than publish + completion timeouts", []string{"--profile=local", "--lease=15s", "--publish-timeout=10s", "--completion-timeout=5s"},
			[]string{"lease (15s) must be longer than the publish timeout (10s) plus the completion timeout (5s)"}},
		{"too few connections for the claim slots", []string{"--profile=local", "--claim-slots=4", "--max-conns-per-shard=8"},
			[]string{"max-conns-per-shard (8) must be at least twice the claim slots plus one (9)"}},
		{"one shard", []string{"--profile=local", "--shards=shard-0=u:p@tcp(db0:3306)/rs_shard_0"}, []string{"at least two shards"}},
		{"malformed shard DSN", []string{"--profile=local", "--shards=shard-0=u:p@db0/x,shard-1=u:p@tcp(db1:3306)/y"}, []string{"shard shard-0"}},
		{"explicit production settings", []string{shards, "--control-dsn=u:p@tcp(ctl:3306)/rs_control", "--pulsar-url=pulsar://broker:6650",
			"--auth-tokens=t=ops:admin", "--probe-interval=500ms"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			cfg, err := relaysvc.Load(tc.args)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Load = %v", err)
				}
				if err := cfg.Validate(); err != nil {
					t.Errorf("a loaded config fails Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Load accepted %v", tc.args)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not name %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), ":p@") {
				t.Errorf("error shows a password:\n%v", err)
			}
		})
	}
}

func TestLoadDefaults(t *testing.T) {
	clearEnv(t)
	cfg, err := relaysvc.Load([]string{"--profile=local"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ProbeInterval != 2*time.Second {
		t.Errorf("probe interval %s, want 2s", cfg.ProbeInterval)
	}
	if cfg.Relay.FatalClaimFailures != 10 {
		t.Errorf("fatal claim failures %d, want 10", cfg.Relay.FatalClaimFailures)
	}
}

// The relay's stop timeout must leave room in the shutdown grace.
func TestValidateStopTimeoutFitsTheGrace(t *testing.T) {
	clearEnv(t)
	cfg, err := relaysvc.Load([]string{"--profile=local", "--shutdown-grace=3s"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Relay.StopTimeout = 2 * time.Second
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "stop timeout") {
		t.Errorf("Validate = %v, want the stop timeout rejected", err)
	}
}
