package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// fleet is n relay instances over a set of shards, each with its own
// producer, as n relay processes would run.
type fleet struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	pubs    []*relay.PulsarPublisher
	stopped sync.Once
}

func startFleet(ctx context.Context, log *slog.Logger, client pulsar.Client, cfg relay.Config, n int, topic string,
	stores []relay.Store, obs relay.ClaimObserver) (*fleet, error) {
	rctx, cancel := context.WithCancel(ctx)
	f := &fleet{cancel: cancel}
	for range n {
		pub, err := relay.NewPulsarPublisher(client, topic, cfg.PublishTimeout)
		if err != nil {
			f.stop()
			return nil, err
		}
		f.pubs = append(f.pubs, pub)
		r, err := relay.New(log, cfg, pub, stores, nil, obs)
		if err != nil {
			f.stop()
			return nil, err
		}
		f.wg.Add(1)
		go func() { defer f.wg.Done(); _ = r.Run(rctx) }()
	}
	return f, nil
}

// stop ends the instances and closes their producers; once.
func (f *fleet) stop() {
	f.stopped.Do(func() {
		f.cancel()
		f.wg.Wait()
		for _, p := range f.pubs {
			p.Close()
		}
	})
}

// abRound is one head-to-head round: the two fleets' rates while both
// drained.
type abRound struct {
	few, many float64 // events/s of the fleet of fewer and of more instances
}

// headToHead drains two equal backlogs at the same time, one (a pair of
// shards) by few instances and the other by many, and measures each
// fleet's rate over the time both were draining (until the first one
// finished). Sequential drains on this machine vary by ±10% from one to the
// next for the same instance count (the same statements cost the database
// up to 25% more CPU per event from one minute to the next: other tenants
// of the host), which hides any difference between instance counts; two
// fleets sharing the same minute, database and broker see the same
// machine. The backlogs swap fleets every round, so neither pair of shards
// favours one count.
func headToHead(ctx context.Context, log *slog.Logger, client pulsar.Client, cfg relay.Config, groups [2][]shardDB,
	few, many, rounds, events int) ([]abRound, error) {
	var out []abRound
	for r := range rounds {
		all := append(slices.Clone(groups[0]), groups[1]...)
		if err := resetNew(ctx, all); err != nil {
			return nil, err
		}
		settle(ctx, *settleLimit)
		counts := [2]int{few, many}
		if r%2 == 1 {
			counts = [2]int{many, few}
		}
		var obs [2]*latencies
		var fleets [2]*fleet
		first := make(chan struct{})
		var once sync.Once
		start := time.Now()
		for g := range 2 {
			obs[g] = &latencies{claimed: map[string]time.Time{}, target: int64(events), done: make(chan struct{})}
			var stores []relay.Store
			for _, s := range groups[g] {
				stores = append(stores, s.repo)
			}
			topic := pulsarbus.Topic("public", "default", "bench-relay-ab-"+infratest.Suffix())
			f, err := startFleet(ctx, log, client, cfg, counts[g], topic, stores, obs[g])
			if err != nil {
				if g == 1 {
					fleets[0].stop()
				}
				return nil, err
			}
			fleets[g] = f
			go func() {
				select {
				case <-obs[g].done:
					once.Do(func() { close(first) })
				case <-ctx.Done():
				}
			}()
		}
		<-first
		overlap := time.Since(start)
		var rate [2]float64
		for g := range 2 {
			rate[g] = float64(obs[g].sentSoFar()) / overlap.Seconds()
		}
		for g := range 2 {
			err := waitAllSent(ctx, groups[g], events, obs[g].done)
			fleets[g].stop()
			if err == nil {
				err = checkAllSent(ctx, groups[g], events)
			}
			if err != nil {
				fleets[1-g].stop()
				return nil, fmt.Errorf("head-to-head round %d, %d instance(s): %w", r+1, counts[g], err)
			}
		}
		res := abRound{few: rate[0], many: rate[1]}
		if r%2 == 1 {
			res = abRound{few: rate[1], many: rate[0]}
		}
		fmt.Printf("head to head, round %d: %d instance(s) %.0f events/s, %d instances %.0f events/s while both drained (%s): %.1f%%\n",
			r+1, few, res.few, many, res.many, overlap.Round(100*time.Millisecond), 100*res.many/res.few)
		out = append(out, res)
	}
	return out, nil
}
