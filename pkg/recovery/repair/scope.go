package repair

import (
	"context"

	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
)

// RunScope is the scope of reconciliation run runID (whose discrepancies a
// repair of the run may touch); an unknown run is reconcile.ErrRunNotFound.
func (m *Manager) RunScope(ctx context.Context, runID string) (reconcile.Scope, error) {
	run, err := m.runs.Get(ctx, runID)
	if err != nil {
		return reconcile.Scope{}, err
	}
	return run.Scope, nil
}
