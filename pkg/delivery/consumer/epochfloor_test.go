package consumer_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
)

// startAt runs a consumer instance of the fixture's subscription at
// transformation epoch, re-reading the epoch floor every check.
func (f *fixture) startAt(t *testing.T, epoch uint16, check time.Duration) *instance {
	t.Helper()
	cons, err := consumer.Subscribe(f.client, f.topic, "projection")
	if err != nil {
		t.Fatal(err)
	}
	dlq, err := consumer.NewDLQ(f.client, f.topic+"-dlq", f.proj)
	if err != nil {
		t.Fatal(err)
	}
	cfg := consumer.DefaultConfig()
	cfg.BatchWait = 50 * time.Millisecond
	cfg.RetryBase = 50 * time.Millisecond
	cfg.RetryMax = 200 * time.Millisecond
	cfg.Epoch, cfg.EpochCheck = epoch, check
	c, err := consumer.New(quiet, cfg, consumer.Deps{Sub: cons, Writer: f.proj, DLQ: dlq})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			runErr = <-done
			cons.Close()
			dlq.Close()
		})
		return runErr
	}
	t.Cleanup(func() { _ = stop() })
	return &instance{c: c, stop: stop}
}

func (f *fixture) raiseFloor(t *testing.T, epoch uint16) {
	t.Helper()
	if err := f.proj.RaiseEpochFloor(context.Background(), chstore.EpochRetirement{Epoch: epoch, Time: time.Now(), DetectID: 10001}); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) epochs(t *testing.T, dataID int64) []uint16 {
	t.Helper()
	o, err := f.proj.Origins(context.Background(), 10001, dataID)
	if err != nil {
		t.Fatal(err)
	}
	var out []uint16
	for _, r := range o {
		out = append(out, r.Epoch)
	}
	return out
}

// A rebuild retired epoch 1 while a consumer ran at it: within the floor's
// re-read interval the consumer stops writing and acknowledging, and says
// which epochs; a consumer started at a retired epoch refuses at once; one at
// the floor's epoch writes.
func TestRetiredEpochRefusesToWrite(t *testing.T) {
	f := newFixture(t)
	old := f.startAt(t, 1, 100*time.Millisecond)
	f.send(t, event(900001, 1, "2.21", false))
	old.waitApplied(t, 1)

	f.raiseFloor(t, 2)
	time.Sleep(250 * time.Millisecond) // longer than the re-read interval
	f.send(t, event(900002, 1, "1.50", false))
	waitFor(t, "the old consumer to notice its epoch is retired", 30*time.Second, func() bool { return old.c.Retired() != nil })
	err := old.stop()
	var re *consumer.EpochRetiredError
	if !errors.Is(err, consumer.ErrEpochRetired) || !errors.As(err, &re) || re.Epoch != 1 || re.Floor != 2 {
		t.Fatalf("Run of the retired consumer = %v; want an EpochRetiredError naming epoch 1 and floor 2", err)
	}
	if !strings.Contains(err.Error(), "epoch 1") || !strings.Contains(err.Error(), "floor is 2") {
		t.Errorf("error %q does not name both epochs", err)
	}
	if diff := cmp.Diff([]chstore.Current{cur(900001, 1, "2.21")}, f.state(t)); diff != "" {
		t.Errorf("state after the floor rose (-want +got):\n%s", diff)
	}
	waitFor(t, "a backlog of the one unwritten event", 15*time.Second, func() bool { return backlog(t, f.topic, "projection") == 1 })

	again := f.startAt(t, 1, time.Hour)
	waitFor(t, "a consumer started at a retired epoch to refuse", 10*time.Second, func() bool { return again.c.Retired() != nil })
	if err := again.stop(); !errors.Is(err, consumer.ErrEpochRetired) {
		t.Fatalf("Run at a retired epoch = %v, want ErrEpochRetired", err)
	}
	if got := f.epochs(t, 900002); len(got) != 0 {
		t.Errorf("rows of 900002 written at a retired epoch: epochs %v", got)
	}

	fixed := f.startAt(t, 2, 100*time.Millisecond)
	fixed.waitApplied(t, 1)
	if diff := cmp.Diff([]chstore.Current{cur(900001, 1, "2.21"), cur(900002, 1, "1.5")}, f.state(t)); diff != "" {
		t.Errorf("state after the fixed consumer ran (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]uint16{2}, f.epochs(t, 900002)); diff != "" {
		t.Errorf("epochs of 900002 (-want +got):\n%s", diff)
	}
	if err := fixed.c.Retired(); err != nil {
		t.Errorf("a consumer at the floor's epoch reports %v", err)
	}
}
