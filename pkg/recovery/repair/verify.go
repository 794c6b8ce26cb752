package repair

import (
	"context"
	"fmt"
	"strings"

	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
)

// Verifier compares exactly the keys of a repair again, at CONTENT depth,
// on the authoritative side and the projection (the same reads and the same
// classification as reconciliation), and records the result.
type Verifier struct {
	store    *Store
	runs     *reconcile.RunStore
	src, dst reconcile.Side
}

func newVerifier(d Deps) *Verifier {
	return &Verifier{store: d.Store, runs: d.Runs, src: d.Source, dst: d.Target}
}

// mismatch is one key still wrong.
type mismatch struct {
	seq    int
	dataID int64
	class  reconcile.Class
}

// compare classifies the current state of items' keys within scope (a
// campaign: the repair's keys are its records); it
// returns the seqs of clean items and the mismatches.
func (v *Verifier) compare(ctx context.Context, scope reconcile.Scope, items []Item) ([]int, []mismatch, error) {
	var clean []int
	var bad []mismatch
	for i := 0; i < len(items); i += itemBatch {
		chunk := items[i:min(i+itemBatch, len(items))]
		ids := make([]int64, len(chunk))
		for j, it := range chunk {
			ids[j] = it.DataID
		}
		src, err := v.src.Records(ctx, scope, 0, nil, ids)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: verification read of the shards: %w", ErrUnavailable, err)
		}
		dst, err := v.dst.Records(ctx, scope, 0, nil, ids)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: verification read of the projection: %w", ErrUnavailable, err)
		}
		for _, it := range chunk {
			var s, d *reconcile.Record
			if r, ok := src[it.DataID]; ok {
				s = &r
			}
			if r, ok := dst[it.DataID]; ok {
				d = &r
			}
			if c, wrong := reconcile.Classify(s, d, reconcile.DepthContent); wrong {
				bad = append(bad, mismatch{seq: it.Seq, dataID: it.DataID, class: c})
			} else {
				clean = append(clean, it.Seq)
			}
		}
	}
	return clean, bad, nil
}

// check runs one verification pass of r: the keys of its items not yet
// PASSED are compared; clean ones are recorded PASSED. When none is left
// wrong the repair's discrepancies are marked resolved and the repair
// VERIFIED. Otherwise, when final, the wrong ones are recorded FAILED and a
// repair AWAITING_VERIFICATION fails with them listed.
func (v *Verifier) check(ctx context.Context, r Repair, actor string, final bool) (VerifyResult, error) {
	all, err := v.store.allItems(ctx, r.ID, "", "")
	if err != nil {
		return VerifyResult{}, err
	}
	var todo []Item
	var res VerifyResult
	for _, it := range all {
		if it.Verification == VerifyPassed {
			res.Passed++
		} else {
			todo = append(todo, it)
		}
	}
	// The keys are compared without the run's project or school: a scope
	// never decides whether a record exists (a removal made "clean" by a
	// school filter would hide a record shown under another school).
	clean, bad, err := v.compare(ctx, r.Scope.Campaign(), todo)
	if err != nil {
		return VerifyResult{}, err
	}
	if err := v.store.SetVerification(ctx, r.ID, clean, VerifyPassed); err != nil {
		return VerifyResult{}, err
	}
	res.Passed += int64(len(clean))
	res.Mismatched = int64(len(bad))
	if len(bad) == 0 {
		ids := make([]string, len(all))
		for i, it := range all {
			ids[i] = it.DiscrepancyID
		}
		// Resolved first: a crash before the state change leaves a repair
		// that verifies (and resolves, idempotently) again on resume.
		if _, err := v.runs.MarkResolved(ctx, ids); err != nil {
			return VerifyResult{}, err
		}
		keys := make([]int64, len(all))
		for i, it := range all {
			keys[i] = it.DataID
		}
		// Discrepancies of the same records found before the repair was
		// created (by other runs) are obsolete once its keys compare clean.
		earlier, err := v.store.ResolveEarlier(ctx, keys, r.Created)
		if err != nil {
			return VerifyResult{}, err
		}
		note := fmt.Sprintf("verified: a CONTENT comparison of its %d keys is clean; %d discrepancies resolved", len(all), len(ids))
		if earlier > 0 {
			note += fmt.Sprintf(", and %d found earlier by other runs for the same records", earlier)
		}
		return res, v.store.MarkVerified(ctx, r.ID, actor, note)
	}
	msg := describe(bad, len(all))
	if !final {
		return res, v.store.SetMessage(ctx, r.ID, "verifying: "+msg+"; compared again until "+r.VerifyDeadline.Format("2006-01-02T15:04:05.000Z"))
	}
	seqs := make([]int, len(bad))
	for i, b := range bad {
		seqs[i] = b.seq
	}
	if err := v.store.SetVerification(ctx, r.ID, seqs, VerifyFailed); err != nil {
		return VerifyResult{}, err
	}
	if r.State == StateAwaitingVerification {
		return res, v.store.Fail(ctx, r.ID, []string{StateAwaitingVerification}, actor, "verification failed: "+msg, VerifyFailed)
	}
	return res, v.store.SetMessage(ctx, r.ID, "verification failed again: "+msg)
}

// describe lists the first mismatches.
func describe(bad []mismatch, total int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d keys still differ", len(bad), total)
	for i, m := range bad {
		if i == 20 {
			fmt.Fprintf(&b, ", ... (%d more; see ListRepairItems)", len(bad)-i)
			break
		}
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%s%d (%s)", sep, m.dataID, m.class)
	}
	return b.String()
}
