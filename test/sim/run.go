package sim

// Run simulates cfg.Steps scheduled steps with faults, then quiescence
// (faults and writes stop, everything in flight drains), and returns the
// first broken invariant, or nil.
func Run(cfg Config) (*World, *Violation) {
	w := New(cfg)
	rebuildAt := cfg.Steps/3 + w.rng.IntN(cfg.Steps/3+1)
	for w.step = 0; w.step < cfg.Steps; w.step++ {
		w.Stats.Steps++
		if w.step == rebuildAt {
			w.rebuild(w.rng.IntN(2) == 0)
		} else if v := w.chaosStep(); v != nil {
			return w, v
		}
		if v := w.checkSafety(); v != nil {
			return w, v
		}
	}
	// Quiescence: no faults, no writes; what is in flight drains, parked
	// rows are replayed by the operator.
	if v := w.drain(); v != nil {
		return w, v
	}
	if v := w.checkLiveness(); v != nil {
		return w, v
	}
	// A last reconciliation and repair round, then everything must agree.
	for k := range w.src {
		if w.needsRepair(k) {
			w.replay(k)
		}
	}
	if v := w.drain(); v != nil {
		return w, v
	}
	if v := w.checkLiveness(); v != nil {
		return w, v
	}
	return w, w.checkConverged()
}

// chaosStep runs one scheduled step: a write, a relay or consumer step
// (with its faults), a clock tick, a repair, or another fault.
func (w *World) chaosStep() *Violation {
	w.now++
	switch p := w.rng.IntN(100); {
	case p < 12:
		if w.rng.IntN(3) == 0 { // a third of these: the relays keep up with the writes
			w.writeOpen(w.rng.IntN(len(w.open)), w.rng.IntN(25) == 0)
		}
	case p < 40:
		ri := w.rng.IntN(len(w.relays))
		r := w.relays[ri]
		if r.stalled > 0 {
			r.stalled--
			return nil
		}
		switch q := w.rng.IntN(100); {
		case q < 30:
			w.claim(r, ri)
		case q < 60:
			w.publish(r, ri, w.rng.IntN(10) == 0)
		case q < 93:
			lost := w.rng.IntN(8) == 0
			w.complete(r, ri, lost)
			if lost {
				w.Stats.Faults++
				r.stalled = w.rng.IntN(4 * int(w.cfg.Lease)) // the connection hangs before the retry
			}
		case q < 97:
			r.stalled = int(w.cfg.Lease) + w.rng.IntN(int(w.cfg.Lease)) // a pause past its lease
			w.Stats.Faults++
			w.logf("relay %d stalls for %d steps", ri, r.stalled)
		default:
			r.claims = r.claims[:0] // kill -9: its claims expire
			w.Stats.Faults++
			w.logf("relay %d crashes", ri)
		}
	case p < 80:
		ci := w.rng.IntN(len(w.cons))
		c := w.cons[ci]
		if !c.alive {
			return nil
		}
		switch q := w.rng.IntN(100); {
		case q < 35:
			w.receive(c, ci, w.rng.IntN(5) == 0)
		case q < 55:
			w.check(c, ci)
		case q < 75:
			return w.insert(c, ci)
		case q < 96:
			lost := w.rng.IntN(20) == 0
			w.ack(c, ci, lost)
			if lost {
				w.Stats.Faults++
				w.redeliver() // the client reconnects: the broker redelivers what was not acknowledged
			}
		default:
			w.Stats.Faults++
			w.crashConsumer(c, ci)
		}
	case p < 88:
		w.now += int64(1 + w.rng.IntN(5)) // time passes: leases expire, retries fall due
	case p < 94:
		k := w.anyKey()
		if w.needsRepair(k) {
			w.replay(k)
		}
	case p < 97:
		w.Stats.Faults++
		k := w.anyKey()
		w.loseKey(k)
		if w.rng.IntN(2) == 0 && w.needsRepair(k) {
			w.replay(k) // a reconciliation run right after finds it
		}
	case p < 99:
		w.replayParked()
	default:
		w.Stats.Faults++
		w.redeliver()
	}
	return nil
}

// replayParked is outbox.Repo.ReplayParked of every parked row.
func (w *World) replayParked() {
	for _, i := range w.activeRows() {
		if o := &w.outbox[i]; o.status == stParked {
			o.status, o.attempts, o.token, o.due = stNew, 0, 0, w.now
			w.logf("operator replays parked row %d", o.id)
		}
	}
}

// drain runs relays and consumers without faults until nothing is in
// flight (bounded), checking safety after every step.
func (w *World) drain() *Violation {
	for range 200000 {
		w.step++
		w.now++
		w.Stats.Steps++
		if w.quiet() {
			return nil
		}
		switch p := w.rng.IntN(10); {
		case p < 4:
			ri := w.rng.IntN(len(w.relays))
			r := w.relays[ri]
			r.stalled = 0
			w.claim(r, ri)
			w.publish(r, ri, false)
			w.complete(r, ri, false)
		case p < 8:
			for ci, c := range w.cons {
				if !c.alive {
					continue
				}
				w.receive(c, ci, false)
				w.check(c, ci)
				if v := w.insert(c, ci); v != nil {
					return v
				}
				w.ack(c, ci, false)
			}
		case p < 9:
			w.replayParked()
		default:
			w.now += w.cfg.Lease / 4
			w.redeliver()
		}
		if v := w.checkSafety(); v != nil {
			return v
		}
	}
	return w.violation("quiescence", "still in flight after 200000 steps without faults (outbox, broker or consumers)")
}

// quiet: no outbox row to deliver, no message in the broker, no batch held.
func (w *World) quiet() bool {
	if len(w.activeRows()) > 0 {
		return false
	}
	if len(w.pending) > 0 || len(w.unacked) > 0 {
		return false
	}
	for _, c := range w.cons {
		if len(c.buf) > 0 {
			return false
		}
	}
	for _, r := range w.relays {
		if len(r.claims) > 0 {
			return false
		}
	}
	return true
}
