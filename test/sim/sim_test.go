package sim

import (
	"flag"
	"slices"
	"testing"
	"time"
)

var (
	seedFlag  = flag.Uint64("sim.seed", 0, "replay one seed (TestReplaySeed)")
	seedsFlag = flag.Int("sim.seeds", 0, "seeds of TestProtocol (0: the default budget)")
	stepsFlag = flag.Int("sim.steps", 0, "scheduled steps per seed (0: DefaultConfig)")
	mutFlag   = flag.String("sim.mutant", "", "replay the seed with this mutant (TestReplaySeed; a name of TestMutantsAreCaught)")
)

// The default budget: enough seeds that the whole run is well over a
// million steps, under a minute with -race on a loaded 2-core machine.
const defaultSeeds = 120

func config(seed uint64) Config {
	cfg := DefaultConfig(seed)
	if *stepsFlag > 0 {
		cfg.Steps = *stepsFlag
	}
	return cfg
}

// The protocol as the code implements it keeps every invariant, on every
// seed, through crashes, lost acknowledgments, failed publishes, stalls
// past the lease, clock skew, redelivery, reordering, rows lost by the
// projection, replays and a rebuild that retires an epoch.
func TestProtocol(t *testing.T) {
	seeds := defaultSeeds
	if *seedsFlag > 0 {
		seeds = *seedsFlag
	}
	start := time.Now()
	var total Stats
	for s := range seeds {
		w, v := Run(config(uint64(s + 1)))
		if v != nil {
			t.Fatal(v)
		}
		total.Steps += w.Stats.Steps
		total.Writes += w.Stats.Writes
		total.Published += w.Stats.Published
		total.Duplicates += w.Stats.Duplicates
		total.Inserted += w.Stats.Inserted
		total.Replays += w.Stats.Replays
		total.Faults += w.Stats.Faults
	}
	el := time.Since(start)
	t.Logf("%d seeds, %d steps in %s (%.0f steps/s): %d writes, %d published, %d redelivered, %d rows inserted, %d replays, %d faults; every invariant held",
		seeds, total.Steps, el.Round(time.Millisecond), float64(total.Steps)/el.Seconds(), total.Writes, total.Published, total.Duplicates,
		total.Inserted, total.Replays, total.Faults)
}

// Each broken variant of the protocol is caught within the default budget;
// a mutant that survives fails the test.
func TestMutantsAreCaught(t *testing.T) {
	for m := AckBeforeInsert; m <= lastMutant; m++ {
		t.Run(m.String(), func(t *testing.T) {
			for s := range defaultSeeds {
				cfg := config(uint64(s + 1))
				cfg.Mutant = m
				if _, v := Run(cfg); v != nil {
					t.Logf("caught at seed %d, step %d: %s: %s (replay: go test ./test/sim -run TestReplaySeed -sim.seed=%d -sim.mutant=%s)",
						v.Seed, v.Step, v.Invariant, v.Detail, v.Seed, m)
					return
				}
			}
			t.Fatalf("mutant %s survived %d seeds", m, defaultSeeds)
		})
	}
}

// A run is a function of its seed: the same seed replays the same steps.
func TestDeterministic(t *testing.T) {
	a, va := Run(config(7))
	b, vb := Run(config(7))
	if a.Stats != b.Stats || (va == nil) != (vb == nil) || a.now != b.now || len(a.proj) != len(b.proj) {
		t.Fatalf("seed 7 ran twice differently: %+v / %+v", a.Stats, b.Stats)
	}
}

// TestReplaySeed replays one seed with -sim.seed=N (and -sim.steps), as a
// failure report says, printing the run's trace.
func TestReplaySeed(t *testing.T) {
	if *seedFlag == 0 {
		t.Skip("give -sim.seed=N to replay a seed")
	}
	cfg := config(*seedFlag)
	if *mutFlag != "" {
		i := slices.Index(mutantNames, *mutFlag)
		if i < 0 {
			t.Fatalf("-sim.mutant=%s: not one of %v", *mutFlag, mutantNames)
		}
		cfg.Mutant = Mutant(i)
	}
	w, v := Run(cfg)
	if v != nil {
		t.Fatal(v)
	}
	t.Logf("seed %d: %+v; every invariant held", *seedFlag, w.Stats)
}
