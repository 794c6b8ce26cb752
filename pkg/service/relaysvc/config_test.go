package relaysvc_test

import (
	"strings"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/service/relaysvc"
	"github.com/resultsync/resultsync/pkg/testkit/configtest"
)

func TestLoad(t *testing.T) {
	const shards = "--shards=shard-0=u:p@tcp(db0:3306)/rs_shard_0,shard-1=u:p@tcp(db1:3306)/rs_shard_1"
	configtest.Load(t, relaysvc.Load, []configtest.Case{
		{Name: "local profile", Args: []string{"--profile=local"}},
		{Name: "production names every missing setting at once",
			WantErr: []string{"--shards (env RS_SHARDS)", "--control-dsn (env RS_CONTROL_DSN)", "--pulsar-url (env RS_PULSAR_URL)", "--auth-jwt-keys (env RS_AUTH_JWT_KEYS)"}},
		{Name: "every invalid setting at once", Args: []string{"--profile=local", "--publish-timeout=40s", "--lease=30s", "--probe-interval=0s",
			"--pulsar-url=http://broker:8080", "--grpc-addr=nonsense"},
			WantErr: []string{"lease (30s) must be longer than the publish timeout (40s)", "probe-interval", "pulsar-url", "grpc-addr"}},
		{Name: "lease not longer than publish + completion timeouts", Args: []string{"--profile=local", "--lease=15s", "--publish-timeout=10s", "--completion-timeout=5s"},
			WantErr: []string{"lease (15s) must be longer than the publish timeout (10s) plus the completion timeout (5s)"}},
		{Name: "too few connections for the claim slots", Args: []string{"--profile=local", "--claim-slots=4", "--max-conns-per-shard=8"},
			WantErr: []string{"max-conns-per-shard (8) must be at least twice the claim slots plus one (9)"}},
		{Name: "one shard", Args: []string{"--profile=local", "--shards=shard-0=u:p@tcp(db0:3306)/rs_shard_0"}, WantErr: []string{"at least two shards"}},
		{Name: "malformed shard DSN", Args: []string{"--profile=local", "--shards=shard-0=u:p@db0/x,shard-1=u:p@tcp(db1:3306)/y"}, WantErr: []string{"shard shard-0"}},
		{Name: "explicit production settings", Args: []string{shards, "--control-dsn=u:p@tcp(ctl:3306)/rs_control", "--pulsar-url=pulsar://broker:6650",
			"--auth-jwt-keys=/etc/resultsync/jwks.json", "--auth-jwt-audience=resultsync", "--probe-interval=500ms"}},
	}, nil, ":p@")
}

func TestLoadDefaults(t *testing.T) {
	configtest.ClearEnv(t)
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
	configtest.ClearEnv(t)
	cfg, err := relaysvc.Load([]string{"--profile=local", "--shutdown-grace=3s"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Relay.StopTimeout = 2 * time.Second
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "stop timeout") {
		t.Errorf("Validate = %v, want the stop timeout rejected", err)
	}
}
