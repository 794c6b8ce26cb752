package relay

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the relay's Prometheus series.
type Metrics struct {
	claimed, reclaimed, sent, failed, parked, lostClaims, emptyClaims *prometheus.CounterVec
	publishSeconds                                                    *prometheus.HistogramVec
	slotsHeld                                                         *prometheus.GaugeVec
}

// NewMetrics creates the series and registers them on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"shard"})
	}
	m := &Metrics{
		claimed:     counter("relay_claimed_events_total", "Outbox rows claimed."),
		reclaimed:   counter("relay_expired_claims_total", "Rows claimed again because an earlier claim's lease expired."),
		sent:        counter("relay_sent_events_total", "Rows marked SENT after the broker acknowledged them."),
		failed:      counter("relay_failed_publishes_total", "Rows marked FAILED after a failed publish (attempts)."),
		parked:      counter("relay_parked_events_total", "Rows PARKED after too many failed publishes."),
		lostClaims:  counter("relay_lost_claims_total", "Completions skipped because another claimant owned the row."),
		emptyClaims: counter("relay_empty_claims_total", "Claims that found nothing eligible, an idle loop's probe (outbox eligibility, shared by the shard's loops) included: an idle shard's loops back off to one per --max-idle-interval each."),
		publishSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "relay_publish_seconds", Help: "Time to publish one claimed batch.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"shard"}),
		slotsHeld: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "relay_claim_slots_held",
			Help: "Claim slots of the shard this instance holds (0: it stands by)."}, []string{"shard"}),
	}
	if reg != nil {
		reg.MustRegister(m.claimed, m.reclaimed, m.sent, m.failed, m.parked, m.lostClaims, m.emptyClaims, m.publishSeconds, m.slotsHeld)
	}
	return m
}
