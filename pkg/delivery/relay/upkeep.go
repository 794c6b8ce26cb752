package relay

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/delivery/outbox"
)

// StatsSource is what the exporter reads of a shard's outbox (outbox.Repo).
type StatsSource interface {
	ShardID() string
	Stats(ctx context.Context) (outbox.Stats, error)
}

// StatsExporter publishes the outbox state of every shard as gauges: rows by
// status, oldest unsent age, expired claims. These are the signals that make
// lag, stuck deliveries and parked events visible.
type StatsExporter struct {
	// ShardTimeout bounds each shard's read in Poll (DefaultShardTimeout when 0).
	ShardTimeout time.Duration

	log     *slog.Logger
	sources []StatsSource
	rows    *prometheus.GaugeVec
	oldest  *prometheus.GaugeVec
	expired *prometheus.GaugeVec
	up      *prometheus.GaugeVec
}

// NewStatsExporter registers the gauges on reg.
func NewStatsExporter(log *slog.Logger, reg prometheus.Registerer, sources []StatsSource) *StatsExporter {
	e := &StatsExporter{
		log:     log,
		sources: sources,
		rows:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "outbox_rows", Help: "Outbox rows by status."}, []string{"shard", "status"}),
		oldest:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "outbox_oldest_unsent_age_seconds", Help: "Age of the oldest outbox row not yet SENT (0 when none)."}, []string{"shard"}),
		expired: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "outbox_expired_claims", Help: "PROCESSING rows whose lease has expired."}, []string{"shard"}),
		up:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "outbox_shard_up", Help: "1 when the shard's outbox could be read at the last poll."}, []string{"shard"}),
	}
	reg.MustRegister(e.rows, e.oldest, e.expired, e.up)
	return e
}

// DefaultShardTimeout bounds one shard's read in Poll.
const DefaultShardTimeout = 5 * time.Second

// Poll reads every shard once, all shards at the same time, each bounded by
// the exporter's per-shard timeout: a hung shard turns its own
// outbox_shard_up to 0 and never delays or blinds the others' gauges.
func (e *StatsExporter) Poll(ctx context.Context) {
	timeout := e.ShardTimeout
	if timeout <= 0 {
		timeout = DefaultShardTimeout
	}
	var wg sync.WaitGroup
	for _, s := range e.sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			e.pollShard(sctx, s)
		}()
	}
	wg.Wait()
}

func (e *StatsExporter) pollShard(ctx context.Context, s StatsSource) {
	st, err := s.Stats(ctx)
	if err != nil {
		e.up.WithLabelValues(s.ShardID()).Set(0)
		e.log.Warn("reading outbox stats", "shard", s.ShardID(), "err", err)
		return
	}
	e.up.WithLabelValues(s.ShardID()).Set(1)
	for _, status := range []string{outbox.StatusNew, outbox.StatusProcessing, outbox.StatusFailed, outbox.StatusParked, outbox.StatusSent} {
		e.rows.WithLabelValues(s.ShardID(), status).Set(float64(st.Counts[status]))
	}
	age := 0.0
	if !st.OldestUnsent.IsZero() {
		age = max(0, time.Since(st.OldestUnsent).Seconds())
	}
	e.oldest.WithLabelValues(s.ShardID()).Set(age)
	e.expired.WithLabelValues(s.ShardID()).Set(float64(st.ExpiredClaims))
}

// Run polls every interval until ctx ends, then returns nil. A shard that
// cannot be read is a gauge (outbox_shard_up 0), never a reason to stop.
func (e *StatsExporter) Run(ctx context.Context, interval time.Duration) error {
	for ctx.Err() == nil {
		e.Poll(ctx)
		sleep(ctx, interval)
	}
	return nil
}

// Purger is what purging needs of a shard's outbox (outbox.Repo).
type Purger interface {
	ShardID() string
	PurgeSent(ctx context.Context, cutoff time.Time, batch int) (int64, error)
}

// PurgeSent deletes SENT rows older than retention from every shard in
// batches of batch rows, pausing between batches so the write path keeps its
// share of the database. It runs every interval until ctx ends, then returns
// nil; a shard that fails is logged and tried again at the next round.
func PurgeSent(ctx context.Context, log *slog.Logger, shards []Purger, retention, interval time.Duration, batch int) error {
	for ctx.Err() == nil {
		for _, s := range shards {
			var total int64
			for ctx.Err() == nil {
				n, err := s.PurgeSent(ctx, time.Now().Add(-retention), batch)
				if err != nil {
					if ctx.Err() == nil {
						log.Warn("purging SENT outbox rows", "shard", s.ShardID(), "err", err)
					}
					break
				}
				total += n
				if n < int64(batch) {
					break
				}
				sleep(ctx, 50*time.Millisecond)
			}
			if total > 0 {
				log.Info("purged SENT outbox rows", "shard", s.ShardID(), "rows", total, "older_than", retention)
			}
		}
		sleep(ctx, interval)
	}
	return nil
}
