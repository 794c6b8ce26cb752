package repair_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
)

// liveWriters corrects records of a campaign at about rate corrections per
// second with n writers through the write path, each correction at the
// version last acknowledged, until stop is called. latest holds each
// record's last acknowledged version (read under mu).
type liveWriters struct {
	mu           sync.Mutex
	latest       map[int64]int64
	sent, failed int
	stopOnce     sync.Once
	stop         chan struct{}
	wg           sync.WaitGroup
}

// startWriters starts n writers correcting ids in turn (writer w takes
// ids[w], ids[w+n], ...), latest holding the records' current versions.
func (p *platform) startWriters(ids []int64, latest map[int64]int64, n, rate int) *liveWriters {
	lw := &liveWriters{latest: latest, stop: make(chan struct{})}
	for w := range n {
		lw.wg.Add(1)
		go func() {
			defer lw.wg.Done()
			tick := time.NewTicker(time.Second * time.Duration(n) / time.Duration(rate))
			defer tick.Stop()
			mine := len(ids) / n
			for k := 0; ; k++ {
				select {
				case <-lw.stop:
					return
				case <-tick.C:
				}
				id := ids[w+(k%mine)*n]
				lw.mu.Lock()
				v := lw.latest[id]
				lw.mu.Unlock()
				cctx, cancel := context.WithTimeout(operator(), 10*time.Second)
				_, err := p.Results.CorrectResult(cctx, &fitnessv1.CorrectResultRequest{RequestId: fmt.Sprintf("live-%d-%d", id, v), SchoolId: school,
					DataId: id, ExpectedVersion: v, Result: fmt.Sprintf("2.%03d", (v+1)%1000), Unit: "m", Reason: "teacher correction"})
				cancel()
				lw.mu.Lock()
				if err != nil {
					lw.failed++
				} else {
					lw.latest[id], lw.sent = v+1, lw.sent+1
				}
				lw.mu.Unlock()
			}
		}()
	}
	p.t.Cleanup(lw.Stop)
	return lw
}

// Stop stops the writers and waits for them (idempotent).
func (lw *liveWriters) Stop() {
	lw.stopOnce.Do(func() {
		close(lw.stop)
		lw.wg.Wait()
	})
}

// Counts returns the corrections acknowledged and failed so far.
func (lw *liveWriters) Counts() (sent, failed int) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.sent, lw.failed
}
