package repair

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
)

// rebuildStates are the states a rebuild takes (it verifies itself before
// switching readers, so it is never AWAITING_VERIFICATION).
var rebuildStates = []string{StateAwaitingApproval, StateExecuting, StateVerified, StateFailed, StateCancelled}

// metrics are the repair signals (see deploy/prometheus/alerts.yml, group
// resultsync-repair). The state gauges are read from the store, so every
// instance reports the same totals.
type metrics struct {
	repairs        *prometheus.GaugeVec
	rebuilds       *prometheus.GaugeVec
	oldestVerify   prometheus.Gauge
	oldestApproval prometheus.Gauge
	storeUp        prometheus.Gauge
	unresolved     *prometheus.GaugeVec
	rows           *prometheus.CounterVec
	itemsFailed    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		repairs:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "repair_repairs", Help: "Repairs by state (from the control database)."}, []string{"state"}),
		rebuilds: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "repair_rebuilds", Help: "Rebuilds by state (from the control database)."}, []string{"state"}),
		oldestVerify: prometheus.NewGauge(prometheus.GaugeOpts{Name: "repair_oldest_awaiting_verification_age_seconds",
			Help: "Age of the repair longest AWAITING_VERIFICATION (0: none)."}),
		oldestApproval: prometheus.NewGauge(prometheus.GaugeOpts{Name: "repair_oldest_awaiting_approval_age_seconds",
			Help: "Age of the repair longest AWAITING_APPROVAL (0: none)."}),
		storeUp: prometheus.NewGauge(prometheus.GaugeOpts{Name: "repair_store_up", Help: "1 while the executor can read the control database."}),
		unresolved: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "discrepancy_unresolved_records",
			Help: "Records with an unresolved discrepancy, by class, over every reconciliation run and campaign (from the control database; verified repairs resolve them)."},
			[]string{"class"}),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "repair_rows_repaired_total",
			Help: "Rows repaired: replayed, tombstoned, removed, rebuilt."}, []string{"action"}),
		itemsFailed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "repair_items_failed_total",
			Help: "Repair items that could not be applied."}, []string{"action"}),
	}
	for _, a := range Actions {
		m.rows.WithLabelValues(a.String())
		m.itemsFailed.WithLabelValues(a.String())
	}
	for _, s := range States {
		m.repairs.WithLabelValues(s)
	}
	for c := reconcile.MissingInTarget; c <= reconcile.TargetAheadOfSource; c++ {
		m.unresolved.WithLabelValues(c.String())
	}
	for _, s := range rebuildStates {
		m.rebuilds.WithLabelValues(s)
	}
	if reg != nil {
		reg.MustRegister(m.repairs, m.rebuilds, m.oldestVerify, m.oldestApproval, m.storeUp, m.unresolved, m.rows, m.itemsFailed)
	}
	return m
}
