package rebuild_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/go-cmp/cmp"

	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/recovery/rebuild"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/write/resultapi"
	"github.com/resultsync/resultsync/pkg/write/resultstore"
)

// TestRebuildDuringLiveWrites is the "must show": a campaign whose
// projection holds a defective mapping's output is rebuilt while the write
// path, the relay and the consumer carry ~500 changes/s of the same
// campaign. Afterwards the projection equals the shards record by record; a
// reader polling the campaign report during the whole build sees exactly two
// states — the defective one until the switch, the fixed one from the switch
// on — because the live writes it can see keep the report's values (they
// re-confirm results of the polled test item; the changing and deleting ones
// touch another test item, which is rebuilt too); a delayed event of the
// retired epoch changes nothing; a consumer at the retired epoch refuses.
//
// 100,000 records on both engines (about 25 s on the 18.16 server and 55 s
// on chdb, 2 cores, -race); 10,000 with -short.
func TestRebuildDuringLiveWrites(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	const rate, workers, epoch = 500, 16, 1
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	f := newFixture(t)
	t0 := time.Now()
	recs, defective := defectiveCampaign(t, f, n)
	t.Logf("seeded %d records (%d defective in the projection) in %s", n, len(defective), time.Since(t0).Round(time.Millisecond))

	// The live path: write path -> outbox -> relay -> Pulsar -> consumer at
	// the fixed transformation's epoch.
	stores, closeStores, err := resultapi.OpenStores(ctx, log, f.m, 16, resultstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer closeStores()
	var repos []relay.Store
	for i, db := range f.dbs {
		repos = append(repos, outbox.NewRepo(f.ids[i], db))
	}
	client := infratest.NewPulsarClient(t)
	topic := infratest.Topic(t, "rebuild")
	pub, err := relay.NewPulsarPublisher(client, topic, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	rl, err := relay.New(log, relay.DefaultConfig(), pub, repos, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	live := startConsumer(t, f, client, topic, "projection", epoch)
	relayDone := make(chan struct{})
	go func() { _ = rl.Run(ctx); close(relayDone) }()
	defer func() { cancel(); <-relayDone }()

	line := func() chstore.ProjectReport { // the polled report line: test item 3
		t.Helper()
		rep, err := f.proj.CampaignReport(ctx, campaign)
		if err != nil {
			t.Error(err)
			return chstore.ProjectReport{}
		}
		for _, r := range rep {
			if r.ProjectID == 3 {
				return r
			}
		}
		return chstore.ProjectReport{}
	}
	before := line()

	// The reader: every distinct consecutive state it sees.
	var seen []chstore.ProjectReport
	var polls atomic.Int64
	stopReader := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stopReader:
				return
			default:
			}
			l := line()
			polls.Add(1)
			if len(seen) == 0 || seen[len(seen)-1] != l {
				seen = append(seen, l)
			}
		}
	}()

	// The writers: each owns a contiguous range of the records (so that every
	// worker gets both kinds), which it alone changes, so it knows their
	// versions.
	var writes atomic.Int64
	stopWriters := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		var keep, change []rec // test item 3 records the projection has right; test item 4 records
		for i, r := range recs {
			if i*workers/len(recs) != w || r.deleted || defective[r.id] {
				continue
			}
			if r.project == 3 {
				keep = append(keep, r)
			} else {
				change = append(change, r)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			tick := time.NewTicker(time.Second * workers / rate)
			defer tick.Stop()
			for k := 0; ; k++ {
				select {
				case <-stopWriters:
					return
				case <-tick.C:
				}
				pool := &keep
				if rng.IntN(10) < 3 {
					pool = &change
				}
				if len(*pool) == 0 {
					continue
				}
				j := rng.IntN(len(*pool))
				r := &(*pool)[j]
				id := r.id
				st := stores[f.m.Owner(id)]
				var err error
				switch {
				case pool == &change && rng.IntN(15) == 0:
					_, err = st.Delete(ctx, resultstore.DeleteCommand{RequestID: fmt.Sprintf("d-%d-%d", w, k), SchoolID: r.school, DataID: r.id,
						ExpectedVersion: r.version, Reason: "withdrawn"})
					*pool = append((*pool)[:j], (*pool)[j+1:]...)
				default:
					if pool == &change {
						r.result = fmt.Sprintf("%d.%03d", 200+rng.IntN(800), rng.IntN(1000))
					}
					_, err = st.Correct(ctx, resultstore.CorrectCommand{RequestID: fmt.Sprintf("c-%d-%d", w, k), SchoolID: r.school, DataID: r.id,
						ExpectedVersion: r.version, Result: r.result, Unit: map[int64]string{3: "m", 4: "s"}[r.project], Reason: "re-measured"})
					r.version++
				}
				if err != nil {
					t.Errorf("live write of %d: %v", id, err)
					return
				}
				writes.Add(1)
			}
		}()
	}
	time.Sleep(time.Second)

	// The rebuild, at the fixed transformation's epoch.
	var scanStart, scanEnd time.Time
	var scanned, writesAtScan, writesAfterScan int64
	opts := rebuild.Options{RowsPerSecond: 50_000, Grace: time.Second, VerifyRounds: 10}
	b := rebuild.New(f.dbs, f.ids, f.ch.Conn, opts)
	writesAtStart, start := writes.Load(), time.Now()
	rows, err := b.Rebuild(ctx, reconcile.Scope{DetectID: campaign}, epoch, func(phase string, done, _ int64) {
		if phase == rebuild.PhaseScan {
			if scanStart.IsZero() {
				scanStart, writesAtScan = time.Now(), writes.Load()
			}
			scanEnd, scanned, writesAfterScan = time.Now(), done, writes.Load()
		}
	})
	secs := time.Since(start).Seconds()
	liveRate := float64(writes.Load()-writesAtStart) / secs
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	t.Logf("%s: rebuild of %d records wrote %d rows in %.1fs: %.0f rows/s overall; scan %.0f rows/s (limit %d); live writes meanwhile %.0f/s",
		infratest.ClickHouseEngine(), n, rows, secs, float64(rows)/secs, float64(scanned)/scanEnd.Sub(scanStart).Seconds(), opts.RowsPerSecond, liveRate)
	// The rate is the machine's (logged above); what the test needs is
	// changes committed while the scan ran, for the catch-up to fold in.
	if writesAfterScan <= writesAtScan {
		t.Errorf("no live write committed during the scan (%d before, %d after): nothing for the catch-up to fold in", writesAtScan, writesAfterScan)
	}
	time.Sleep(time.Second) // live writes go on after the switch
	close(stopWriters)
	wg.Wait()

	// The live path catches up; then the projection is the shards.
	deadline := time.Now().Add(90 * time.Second)
	for len(f.compare(t, reconcile.Scope{DetectID: campaign})) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the projection did not converge: %v", f.compare(t, reconcile.Scope{DetectID: campaign}))
		}
		time.Sleep(200 * time.Millisecond)
	}
	close(stopReader)
	<-readerDone
	if diff := cmp.Diff(f.truth(t), f.state(t)); diff != "" {
		t.Errorf("current state vs the shards, record by record (-shards +projection):\n%s", diff)
	}
	after := line()
	t.Logf("reader: %d polls, %d live writes in all; report of test item 3 before %+v, after %+v", polls.Load(), writes.Load(), before, after)
	if before == after {
		t.Fatalf("the rebuild did not change the report (%+v): the defect was not visible", after)
	}
	if diff := cmp.Diff([]chstore.ProjectReport{before, after}, seen); diff != "" {
		t.Errorf("the reader saw other states than before and after the switch (-want +got):\n%s", diff)
	}

	// A delayed event of the retired path: the defective content at the same
	// version and the retired epoch changes nothing.
	var late chstore.Row
	for _, r := range recs {
		if i := r.id - 100000; r.project == 3 && !r.deleted && i%5 == 0 && i%3 != 0 {
			late = f.row(r, 0)
			late.Result = "4.5"
			break
		}
	}
	stateBefore := f.state(t)
	if err := f.proj.Insert(ctx, []chstore.Row{late}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(stateBefore, f.state(t)); diff != "" {
		t.Errorf("a delayed event at the retired epoch changed the current state (-before +after):\n%s", diff)
	}
	if l := line(); l != after {
		t.Errorf("a delayed event at the retired epoch changed the report: %+v, want %+v", l, after)
	}

	// A consumer still configured with the retired epoch refuses to write.
	var retiredRows uint64
	countRetired := func() uint64 {
		var c uint64
		if err := f.ch.Conn.QueryRow(ctx, "SELECT count() FROM fitness_result_versions WHERE epoch = 0 AND ingest_unix_ms > ?", start.UnixMilli()).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	retiredRows = countRetired()
	old := startConsumer(t, f, client, topic, "old-path", 0) // a new subscription: every event of the topic
	if err := old.wait(10 * time.Second); !errors.Is(err, consumer.ErrEpochRetired) {
		t.Errorf("consumer at the retired epoch 0 = %v, want ErrEpochRetired", err)
	}
	if got := countRetired(); got != retiredRows {
		t.Errorf("the retired consumer wrote %d rows", got-retiredRows)
	}
	if fl := f.floor(t); fl != epoch {
		t.Errorf("epoch floor = %d, want %d", fl, epoch)
	}
	if err := live.stop(); err != nil {
		t.Errorf("live consumer: %v", err)
	}
}

// runningConsumer is a consumer instance run by a test.
type runningConsumer struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

func startConsumer(t *testing.T, f *fixture, client pulsar.Client, topic, subscription string, epoch uint16) *runningConsumer {
	t.Helper()
	cons, err := consumer.Subscribe(client, topic, subscription)
	if err != nil {
		t.Fatal(err)
	}
	dlq, err := consumer.NewDLQ(client, topic+"-DLQ", f.proj)
	if err != nil {
		t.Fatal(err)
	}
	cfg := consumer.DefaultConfig()
	cfg.BatchWait, cfg.Epoch = 50*time.Millisecond, epoch
	c, err := consumer.New(slog.New(slog.NewTextHandler(io.Discard, nil)), cfg, consumer.Deps{Sub: cons, Writer: f.proj, DLQ: dlq})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rc := &runningConsumer{cancel: cancel, done: make(chan error, 1)}
	go func() {
		rc.done <- c.Run(ctx)
		cons.Close()
		dlq.Close()
	}()
	t.Cleanup(func() { _ = rc.stop() })
	return rc
}

// wait returns Run's error once it ended by itself, or stops it after d.
func (rc *runningConsumer) wait(d time.Duration) error {
	select {
	case err := <-rc.done:
		rc.once.Do(func() { rc.err = err })
		return rc.err
	case <-time.After(d):
		return rc.stop()
	}
}

func (rc *runningConsumer) stop() error {
	rc.once.Do(func() {
		rc.cancel()
		rc.err = <-rc.done
	})
	return rc.err
}
