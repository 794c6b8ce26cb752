package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
)

// Failure point: one shard hangs (its TCP path paused: connections open,
// nothing answers). The stats poller reads shards concurrently, each under
// its own timeout: the hung shard's outbox_shard_up turns 0 within the
// timeout, and the other shard's gauges keep updating poll after poll.
func TestHungShardDoesNotBlindTheOthers(t *testing.T) {
	healthy := newShard(t, "shard-0")
	hungDB := newShard(t, "shard-1")
	proxy, viaProxy := hungDB.db.Proxied(t, 4)
	hung := outbox.NewRepo("shard-1", viaProxy)

	reg := prometheus.NewRegistry()
	e := relay.NewStatsExporter(quiet, reg, []relay.StatsSource{healthy.repo, hung})
	e.ShardTimeout = 500 * time.Millisecond
	gauge := func(name, shard, status string) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["shard"] == shard && (status == "" || labels["status"] == status) {
					return m.GetGauge().GetValue()
				}
			}
		}
		t.Fatalf("no %s{shard=%q,status=%q}", name, shard, status)
		return 0
	}

	ctx := context.Background()
	e.Poll(ctx)
	if gauge("outbox_shard_up", "shard-0", "") != 1 || gauge("outbox_shard_up", "shard-1", "") != 1 {
		t.Fatal("both shards should be up before the fault")
	}

	proxy.Pause()
	for round := 1; round <= 3; round++ {
		healthy.fill(t, int64(round*100), 5)
		start := time.Now()
		e.Poll(ctx)
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("round %d: Poll took %s with a hung shard; want about the 500ms shard timeout", round, took)
		}
		if got := gauge("outbox_shard_up", "shard-1", ""); got != 0 {
			t.Errorf("round %d: hung shard up = %v, want 0", round, got)
		}
		if got := gauge("outbox_shard_up", "shard-0", ""); got != 1 {
			t.Errorf("round %d: healthy shard up = %v, want 1", round, got)
		}
		if got := gauge("outbox_rows", "shard-0", outbox.StatusNew); got != float64(5*round) {
			t.Errorf("round %d: healthy shard NEW rows = %v, want %d (its gauges must keep updating)", round, got, 5*round)
		}
	}
	proxy.Resume()
	e.Poll(ctx)
	if got := gauge("outbox_shard_up", "shard-1", ""); got != 1 {
		t.Errorf("after the shard came back: up = %v, want 1", got)
	}
}
