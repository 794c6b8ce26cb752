package reconcile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// A run, once it holds a run slot, goes through two steps (compare):
//   - scanUntilStable compares the bucket summaries of both sides until the
//     campaign revision stands still over a scan (or the retries run out),
//     waiting for the projection to catch up between scans;
//   - drillDown, when buckets differ (or are sampled), waits the grace
//     period and for the projection to reach the scan's boundary, then
//     compares those buckets record by record, sets apart what is still in
//     flight and stores the rest as discrepancies.
// finish (runner.go) then resolves what the run found consistent and
// records its end.

// runSides are the sides a run compares and the buckets it samples.
type runSides struct {
	src, dst Side
	sample   func(bucket int) bool
}

// scan is what a stable scan leaves to the drill-down.
type scan struct {
	p     Progress
	drill []BucketLoad // buckets that differ or were sampled
	// boundary is each shard's newest outbox commit when the scan started
	// (nil without evidence).
	boundary map[string]time.Time
}

// compare runs r (holding a run slot), recording in bad the records it
// found inconsistent (confirmed discrepancies and records in flight).
func (rn *Runner) compare(ctx context.Context, r *Run, bad map[int64]bool) error {
	r.State = StateRunning
	if err := rn.store.Update(ctx, *r); err != nil {
		return err
	}
	sides := rn.sides(r)
	sc, err := rn.scanUntilStable(ctx, r, sides)
	if err != nil {
		return err
	}
	rn.m.rows.Add(float64(sc.p.RowsCompared))
	if len(sc.drill) == 0 {
		return nil
	}
	return rn.drillDown(ctx, r, sides, sc, bad)
}

// sides returns the sides r compares: for a run with a bucket window, only
// the window's buckets, each drilled into record by record; otherwise every
// bucket, sampled at r's sample rate.
func (rn *Runner) sides(r *Run) runSides {
	if w := r.Window; w != nil {
		n := rn.cfg.Buckets
		return runSides{src: windowSide{Side: rn.src, w: *w}, dst: windowSide{Side: rn.dst, w: *w}, sample: func(b int) bool { return w.Contains(b, n) }}
	}
	rate := r.SampleRate
	return runSides{src: rn.src, dst: rn.dst, sample: func(int) bool { return rate > 0 && rand.Float64() < rate }}
}

// scanUntilStable compares the bucket summaries until the campaign revision
// read before and after a scan is the same. When it moved, the run waits
// (WAITING_FOR_CATCH_UP, checked) for the projection to apply what the
// shards had committed by the end of the scan and scans again, at most
// MaxBoundaryRetries times; the last scan is kept then, and its candidates
// are told apart from delay by the drill-down's evidence.
func (rn *Runner) scanUntilStable(ctx context.Context, r *Run, sd runSides) (scan, error) {
	for attempt := 0; ; attempt++ {
		sc, before, after, err := rn.scanOnce(ctx, r, sd)
		if err != nil {
			return scan{}, err
		}
		if before == after {
			return sc, nil
		}
		if attempt >= rn.cfg.MaxBoundaryRetries {
			r.Message += fmt.Sprintf("campaign revision kept moving (%d -> %d) after %d retries; every candidate is re-checked against the shards' outboxes and the projection's applied positions. ", before, after, attempt)
			return sc, nil
		}
		if err := rn.awaitRescan(ctx, r, attempt, before, after); err != nil {
			return scan{}, err
		}
	}
}

// scanOnce reads the shards' positions and the campaign revision, compares
// the bucket summaries, and reads the revision again.
func (rn *Runner) scanOnce(ctx context.Context, r *Run, sd runSides) (sc scan, before, after int64, err error) {
	if sc.boundary, err = rn.positions(ctx, r); err != nil {
		return scan{}, 0, 0, err
	}
	if before, err = rn.rev.CampaignRevision(ctx, r.Scope.DetectID); err != nil {
		return scan{}, 0, 0, err
	}
	// The scan compares bucket summaries: the buckets that differ (and the
	// sampled ones) are drilled into record by record once the boundary is
	// checked, and what differs then is stored.
	if sc.p, sc.drill, err = Summarize(ctx, sd.src, sd.dst, r.Scope, r.Depth, rn.cfg.Buckets, sd.sample); err != nil {
		return scan{}, 0, 0, err
	}
	r.BucketsDone, r.BucketsTotal, r.RowsCompared = sc.p.BucketsDone, sc.p.BucketsTotal, sc.p.RowsCompared
	_ = rn.store.Update(ctx, *r)
	if after, err = rn.rev.CampaignRevision(ctx, r.Scope.DetectID); err != nil {
		return scan{}, 0, 0, err
	}
	return sc, before, after, nil
}

// awaitRescan records that the revision moved during scan attempt and waits
// (checked) until the projection applied what the shards had committed by
// the end of that scan.
func (rn *Runner) awaitRescan(ctx context.Context, r *Run, attempt int, before, after int64) error {
	r.BoundaryRetries++
	r.State = StateWaiting
	r.Message += fmt.Sprintf("revision moved %d -> %d during scan %d; ", before, after, attempt+1)
	_ = rn.store.Update(ctx, *r)
	end, err := rn.positions(ctx, r)
	if err != nil {
		return err
	}
	caught, err := rn.catchUp(ctx, r, end)
	if err != nil {
		return err
	}
	if caught {
		r.Message += "the projection caught up; scanning again. "
	} else {
		r.Message += fmt.Sprintf("the projection did not catch up within %s (behind: %s); scanning again. ", rn.cfg.CatchUpWait, strings.Join(r.BehindShards(), ", "))
	}
	r.State = StateRunning
	return nil
}

// drillDown waits the grace period and (checked) for the projection to
// reach sc's boundary, then compares sc's buckets record by record, storing
// the wrong data and counting the records in flight, and describes the
// outcome in r's message.
func (rn *Runner) drillDown(ctx context.Context, r *Run, sd runSides, sc scan, bad map[int64]bool) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(rn.cfg.Grace):
	}
	// The boundary: the projection must have applied what every shard had
	// committed when the scan started. Checked, not waited for blindly.
	caught, err := rn.catchUp(ctx, r, sc.boundary)
	if err != nil {
		return err
	}
	r.State = StateRunning
	_ = rn.store.Update(ctx, *r)
	found, err := rn.stream(ctx, r, sd, sc, bad)
	if err != nil {
		return err
	}
	r.BucketsDone = r.BucketsTotal
	for _, s := range r.Shards {
		rn.m.inFlight.WithLabelValues(s.ShardID).Set(float64(s.InFlight))
	}
	rn.describeDrill(r, len(sc.drill), found, caught)
	return nil
}

// stream compares sc's buckets record by record, bucket step by bucket
// step: what differs is delay when its newest version is still in flight
// (evidence from the outbox and the applied positions, read before the
// records), and wrong data otherwise; wrong data is stored a step at a
// time. It returns how many buckets held a difference.
func (rn *Runner) stream(ctx context.Context, r *Run, sd runSides, sc scan, bad map[int64]bool) (int, error) {
	inFlight := map[string]int64{}
	var applied map[string]time.Time
	if rn.flight != nil {
		// Read before any record: an event applied meanwhile is at worst
		// counted in flight, never called wrong.
		var err error
		if _, applied, err = rn.flight.Positions(ctx); err != nil {
			return 0, fmt.Errorf("reading the projection's applied positions: %w", err)
		}
	}
	found := 0 // buckets with a difference (steps hold disjoint buckets)
	err := StreamBuckets(ctx, sd.src, sd.dst, r.Scope, r.Depth, rn.cfg.Buckets, sc.drill, func(ds []Discrepancy) error {
		seen := map[int64]bool{}
		for _, d := range ds {
			seen[d.DataID%int64(rn.cfg.Buckets)] = true
			// Confirmed or in flight: not consistent either way.
			bad[d.DataID] = true
		}
		found += len(seen)
		confirmed, err := rn.separateInFlight(ctx, ds, applied, inFlight)
		if err != nil {
			return err
		}
		if err := rn.store.AddDiscrepancies(ctx, r.ID, r.Scope.DetectID, confirmed); err != nil {
			return err
		}
		r.Discrepancies += int64(len(confirmed))
		r.InFlight = 0
		for i := range r.Shards {
			r.Shards[i].InFlight = inFlight[r.Shards[i].ShardID]
			r.InFlight += r.Shards[i].InFlight
		}
		return nil
	}, func(done int) {
		r.BucketsDone = sc.p.BucketsDone + int64(done)
		_ = rn.store.Update(ctx, *r)
	})
	return found, err
}

// describeDrill tells in r's message how many of the drilled buckets
// matched after the wait, the records in flight per shard, and whether the
// boundary was reached.
func (rn *Runner) describeDrill(r *Run, drilled, found int, caught bool) {
	if clean := drilled - found; clean > 0 {
		r.Message += fmt.Sprintf("%d of %d differing or sampled buckets matched record by record after the wait (projection lag, or sampled). ", clean, drilled)
	}
	if r.InFlight > 0 {
		var parts []string
		for _, s := range r.Shards {
			if s.InFlight > 0 {
				parts = append(parts, fmt.Sprintf("%s: %d", s.ShardID, s.InFlight))
			}
		}
		r.Message += fmt.Sprintf("%d records in flight (newest version unsent or not yet applied), not reported as discrepancies: %s. ", r.InFlight, strings.Join(parts, ", "))
	}
	if !caught {
		r.Message += fmt.Sprintf("boundary not reached: the projection had not applied what %s committed before the scan started, after waiting %s. ",
			strings.Join(r.BehindShards(), ", "), rn.cfg.CatchUpWait)
	}
}

// positions reads each shard's newest outbox commit (the boundary of a
// scan starting now) and records the shards in r; nil without evidence.
func (rn *Runner) positions(ctx context.Context, r *Run) (map[string]time.Time, error) {
	if rn.flight == nil {
		return nil, nil
	}
	newest, applied, err := rn.flight.Positions(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the shards' and the projection's positions: %w", err)
	}
	rn.report(r, newest, applied, false)
	return newest, nil
}

// report records, per shard of boundary (every shard of the map), its
// boundary and the applied position in r, keeping the in-flight counts;
// checked marks the shards whose applied position is before the boundary.
func (rn *Runner) report(r *Run, boundary, applied map[string]time.Time, checked bool) {
	counts := map[string]int64{}
	for _, s := range r.Shards {
		counts[s.ShardID] = s.InFlight
	}
	r.Shards = r.Shards[:0]
	for id, b := range boundary {
		r.Shards = append(r.Shards, ShardReport{ShardID: id, Boundary: b, Applied: applied[id], Behind: checked && applied[id].Before(b), InFlight: counts[id]})
	}
	sort.Slice(r.Shards, func(i, j int) bool { return r.Shards[i].ShardID < r.Shards[j].ShardID })
}

// catchUp waits until the projection's applied position of every shard
// reached boundary, reading the positions every CatchUpPoll, at most
// CatchUpWait; it reports whether it did (true without evidence), and
// leaves the per-shard picture in r.
func (rn *Runner) catchUp(ctx context.Context, r *Run, boundary map[string]time.Time) (bool, error) {
	if rn.flight == nil {
		return true, nil
	}
	deadline := time.Now().Add(rn.cfg.CatchUpWait)
	for {
		_, applied, err := rn.flight.Positions(ctx)
		if err != nil {
			return false, fmt.Errorf("reading the projection's applied positions: %w", err)
		}
		rn.report(r, boundary, applied, true)
		behind := r.BehindShards()
		if len(behind) == 0 {
			return true, nil
		}
		if !time.Now().Before(deadline) {
			return false, nil
		}
		if r.State != StateWaiting {
			r.State = StateWaiting
			r.Message += fmt.Sprintf("waiting for the projection to reach the boundary of %s; ", strings.Join(behind, ", "))
			_ = rn.store.Update(ctx, *r)
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(min(CatchUpPoll, time.Until(deadline))):
		}
	}
}

// separateInFlight returns the discrepancies of ds that are wrong data and
// counts, per shard in inFlight, those whose newest version is still on
// its way, by the applied positions read before the records.
func (rn *Runner) separateInFlight(ctx context.Context, ds []Discrepancy, applied map[string]time.Time, inFlight map[string]int64) ([]Discrepancy, error) {
	if rn.flight == nil {
		return ds, nil
	}
	versions := map[int64]int64{}
	for _, d := range ds {
		if canBeInFlight(d) {
			versions[d.DataID] = d.Source.Version
		}
	}
	if len(versions) == 0 {
		return ds, nil
	}
	fl, err := rn.flight.InFlight(ctx, versions, applied)
	if err != nil {
		return nil, err
	}
	if len(fl) == 0 {
		return ds, nil
	}
	out := ds[:0:0]
	for _, d := range ds {
		if sh, ok := fl[d.DataID]; ok {
			inFlight[sh]++
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// windowSide narrows a side's bucket summaries to a window of buckets.
type windowSide struct {
	Side
	w BucketWindow
}

// Buckets implements Side.
func (ws windowSide) Buckets(ctx context.Context, s Scope, n int) (map[int]BucketSum, error) {
	all, err := ws.Side.Buckets(ctx, s, n)
	if err != nil {
		return nil, err
	}
	for b := range all {
		if !ws.w.Contains(b, n) {
			delete(all, b)
		}
	}
	return all, nil
}
