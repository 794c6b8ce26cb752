package repairsvc_test

import (
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/service/repairsvc"
	"github.com/resultsync/resultsync/pkg/testkit/configtest"
)

// The local profile starts with defaults; impossible settings are refused
// at start-up, naming the setting.
func TestConfig(t *testing.T) {
	configtest.Load(t, repairsvc.Load, []configtest.Case{
		{Name: "local defaults", Args: []string{"--profile=local"}},
		{Name: "self-approval", Args: []string{"--profile=local", "--allow-self-approval"}},
		{Name: "no rate", Args: []string{"--profile=local", "--rows-per-second=0"}, WantErr: []string{"rows-per-second"}},
		{Name: "lease below three polls", Args: []string{"--profile=local", "--poll=1s", "--lease=2s"}, WantErr: []string{"lease"}},
		{Name: "verify timeout below its poll", Args: []string{"--profile=local", "--verify-timeout=1s", "--verify-poll=2s"}, WantErr: []string{"verify-timeout"}},
		{Name: "epoch floor out of range", Args: []string{"--profile=local", "--epoch-floor=70000"}, WantErr: []string{"epoch-floor"}},
		{Name: "one shard", Args: []string{"--profile=local", "--shards=shard-0=u:p@tcp(127.0.0.1:1)/a"}, WantErr: []string{"two shards"}},
		{Name: "replay through the outbox", Args: []string{"--profile=local", "--replay-path=outbox"}},
		{Name: "unknown replay path", Args: []string{"--profile=local", "--replay-path=kafka"}, WantErr: []string{"replay-path"}},
		{Name: "broker path with a bad broker URL", Args: []string{"--profile=local", "--replay-path=broker", "--pulsar-url=http://x"}, WantErr: []string{"pulsar-url"}},
		{Name: "broker path with a tiny publish timeout", Args: []string{"--profile=local", "--replay-path=broker", "--publish-timeout=1ms"}, WantErr: []string{"publish-timeout"}},
		{Name: "outbox path ignores the broker's URL", Args: []string{"--profile=local", "--replay-path=outbox", "--pulsar-url=http://x"}},
		{Name: "bad broker URL by default", Args: []string{"--profile=local", "--pulsar-url=http://x"}, WantErr: []string{"pulsar-url"}},
		{Name: "production without settings", Args: []string{"--profile="}, WantErr: []string{"shards"}},
		{Name: "retentions", Args: []string{"--profile=local", "--request-log-retention=48h", "--run-retention=720h", "--repair-retention=720h",
			"--audit-retention=720h", "--retention-interval=10m", "--retention-batch=100", "--retention-pause=0s"}},
		{Name: "request log kept less than the retry window", Args: []string{"--profile=local", "--request-log-retention=12h"}, WantErr: []string{"request-log-retention"}},
		{Name: "audit kept less than repairs", Args: []string{"--profile=local", "--audit-retention=720h"}, WantErr: []string{"audit-retention"}},
		{Name: "runs kept an hour", Args: []string{"--profile=local", "--run-retention=1h"}, WantErr: []string{"run-retention"}},
		{Name: "no retention batch", Args: []string{"--profile=local", "--retention-batch=0"}, WantErr: []string{"retention batch"}},
	}, func(t *testing.T, c repairsvc.Config) {
		if c.Executor.RowsPerSecond != 5000 {
			t.Errorf("rows per second = %d, want the default 5000", c.Executor.RowsPerSecond)
		}
		if c.Retention.Audit < c.Retention.Repairs || c.Retention.RequestLog < 24*time.Hour {
			t.Errorf("retention %+v: the audit log must be kept longest, request_log at least the retry window", c.Retention)
		}
	})
}
