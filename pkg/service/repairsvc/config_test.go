package repairsvc_test

import (
	"strings"
	"testing"

	"github.com/resultsync/resultsync/pkg/service/repairsvc"
)

// The local profile starts with defaults; impossible settings are refused
// at start-up, naming the setting.
func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // substring of the error; empty: valid
	}{
		{"local defaults", []string{"--profile=local"}, ""},
		{"self-approval", []string{"--profile=local", "--allow-self-approval"}, ""},
		{"no rate", []string{"--profile=local", "--rows-per-second=0"}, "rows-per-second"},
		{"lease below three polls", []string{"--profile=local", "--poll=1s", "--lease=2s"}, "lease"},
		{"verify timeout below its poll", []string{"--profile=local", "--verify-timeout=1s", "--verify-poll=2s"}, "verify-timeout"},
		{"epoch floor out of range", []string{"--profile=local", "--epoch-floor=70000"}, "epoch-floor"},
		{"one shard", []string{"--profile=local", "--shards=shard-0=u:p@tcp(127.0.0.1:1)/a"}, "two shards"},
		{"replay through the outbox", []string{"--profile=local", "--replay-path=outbox"}, ""},
		{"unknown replay path", []string{"--profile=local", "--replay-path=kafka"}, "replay-path"},
		{"broker path with a bad broker URL", []string{"--profile=local", "--replay-path=broker", "--pulsar-url=http://x"}, "pulsar-url"},
		{"broker path with a tiny publish timeout", []string{"--profile=local", "--replay-path=broker", "--publish-timeout=1ms"}, "publish-timeout"},
		{"outbox path ignores the broker's URL", []string{"--profile=local", "--replay-path=outbox", "--pulsar-url=http://x"}, ""},
		{"bad broker URL by default", []string{"--profile=local", "--pulsar-url=http://x"}, "pulsar-url"},
		{"production without settings", []string{"--profile="}, "shards"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("RS_PROFILE", "")
			for _, k := range []string{"RS_SHARDS", "RS_CONTROL_DSN", "RS_CH_ADDR", "RS_AUTH_TOKENS", "RS_PULSAR_URL", "RS_REPAIR_REPLAY_PATH"} {
				t.Setenv(k, "")
			}
			c, err := repairsvc.Load(tc.args)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("load = %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("load = %v; want an error naming %q", err, tc.want)
			}
			if tc.want == "" && c.Executor.RowsPerSecond != 5000 {
				t.Errorf("rows per second = %d, want the default 5000", c.Executor.RowsPerSecond)
			}
		})
	}
}
