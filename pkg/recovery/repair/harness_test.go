package repair_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/recovery/repair"
	"github.com/resultsync/resultsync/pkg/testkit/repairtest"
)

type fixture struct {
	*repairtest.Env
	rep *repairtest.Replayer
	ed  *repairtest.Editor
	rb  *repairtest.Rebuilder
	mgr *repair.Manager
}

func newFixture(t *testing.T, cfg repair.ManagerConfig) *fixture {
	t.Helper()
	env := repairtest.New(t)
	f := &fixture{Env: env, rep: repairtest.NewReplayer(t, env), ed: &repairtest.Editor{Env: env}, rb: &repairtest.Rebuilder{Env: env}}
	var err error
	if f.mgr, err = repair.NewManager(cfg, f.deps()); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) deps() repair.Deps { return f.Deps(f.rep, f.ed, f.rb) }

// fastConfig is an executor configuration for tests: short polls and lease,
// a generous rate.
func fastConfig() repair.ExecutorConfig {
	return repair.ExecutorConfig{RowsPerSecond: 1000, WorkersPerShard: 2, BatchSize: 10, MaxConcurrent: 4, Poll: 50 * time.Millisecond, Lease: time.Second,
		VerifyTimeout: 30 * time.Second, VerifyPoll: 100 * time.Millisecond, ItemAttempts: 3, RetryBackoff: 20 * time.Millisecond}
}

// startExecutor runs an executor until the returned stop is called (or the
// test ends); stop returns once it has stopped.
func (f *fixture) startExecutor(t *testing.T, cfg repair.ExecutorConfig, reg prometheus.Registerer) (stop func()) {
	t.Helper()
	ex, err := repair.NewExecutor(f.Log, cfg, f.deps(), reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ex.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("executor: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// scenario writes twenty consistent records and one discrepancy of every
// class, and reconciles the campaign.
func (f *fixture) scenario(t *testing.T) reconcile.Run {
	t.Helper()
	run := f.Scenario(t, 20)
	if run.Discrepancies != 6 {
		t.Fatalf("scenario: %d discrepancies, want 6", run.Discrepancies)
	}
	return run
}

// ids returns the discrepancy ids of the given records in the run.
func (f *fixture) ids(t *testing.T, runID string, dataIDs ...int64) []string {
	t.Helper()
	ds := f.Discrepancies(t, runID)
	var out []string
	for _, id := range dataIDs {
		d, ok := ds[id]
		if !ok {
			t.Fatalf("no discrepancy for %d", id)
		}
		out = append(out, d.ID)
	}
	return out
}

// byAction indexes repairs by action.
func byAction(rs []repair.Repair) map[repair.Action]repair.Repair {
	out := map[repair.Action]repair.Repair{}
	for _, r := range rs {
		out[r.Action] = r
	}
	return out
}

// items returns every item of a repair by data_id.
func (f *fixture) items(t *testing.T, repairID string) map[int64]repair.Item {
	t.Helper()
	its, err := f.Store.Items(context.Background(), repairID, 0, 10000, "", "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]repair.Item{}
	for _, it := range its {
		out[it.DataID] = it
	}
	return out
}

// states returns the (from -> to) states of a subject's transitions.
func (f *fixture) states(t *testing.T, id string) []string {
	t.Helper()
	ts, err := f.Store.Transitions(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tr := range ts {
		if tr.From == tr.To {
			out = append(out, tr.To+": "+tr.Note)
			continue
		}
		out = append(out, tr.From+">"+tr.To)
	}
	return out
}
