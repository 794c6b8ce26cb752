package repairsvc_test

import (
	"testing"

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
	}, func(t *testing.T, c repairsvc.Config) {
		if c.Executor.RowsPerSecond != 5000 {
			t.Errorf("rows per second = %d, want the default 5000", c.Executor.RowsPerSecond)
		}
	})
}
