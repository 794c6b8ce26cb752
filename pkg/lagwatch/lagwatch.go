// Package lagwatch measures the projection's lag per shard from durable
// state: the applied position of each shard in ClickHouse (the newest source
// commit time the live path applied, kept by the view of ClickHouse
// migration 0007) against the shard's outbox (the events committed after
// that position, found by the commit-time index of shard migration 0006).
//
// The lag of a shard is the age of its oldest event committed after the
// applied position (0 when there is none): it grows while the relay or the
// consumer stalls, whether or not the outbox still holds unsent rows, and it
// is the same whichever server computes it and after any restart, since
// nothing of it lives in a process.
//
// Limit: the position is the newest applied commit, so an event that waits
// behind a stalled topic partition while other partitions of the same shard
// move on is not counted; the broker's backlog alert (ConsumerNotAcknowledging)
// covers that case.
package lagwatch

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"
)

// PendingCap bounds the count of unapplied events read per shard and poll.
const PendingCap = 100_000

// Shard is one shard's outbox.
type Shard struct {
	ID string
	DB *sql.DB
}

// Lag is the lag of one shard at a moment.
type Lag struct {
	ShardID string
	// Applied is the newest source commit the projection applied (zero when
	// it applied nothing of this shard).
	Applied time.Time
	// Oldest is the commit time of the oldest event after Applied (zero when
	// there is none).
	Oldest time.Time
	// Pending counts the events after Applied, at most PendingCap.
	Pending int64
	// Seconds is now minus Oldest (0 when nothing is pending).
	Seconds float64
}

// Watcher reads the lag of every shard.
type Watcher struct {
	ch     driver.Conn
	shards []Shard
	now    func() time.Time
}

// New returns a Watcher over the projection database and the shards.
func New(ch driver.Conn, shards []Shard) *Watcher {
	return &Watcher{ch: ch, shards: shards, now: time.Now}
}

// Applied reads the applied position of every shard that has one.
func (w *Watcher) Applied(ctx context.Context) (map[string]time.Time, error) {
	rows, err := w.ch.Query(ctx, "SELECT shard_id, maxMerge(max_commit_ms) FROM projection_applied GROUP BY shard_id")
	if err != nil {
		return nil, fmt.Errorf("reading the projection's applied positions: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var id string
		var ms int64
		if err := rows.Scan(&id, &ms); err != nil {
			return nil, fmt.Errorf("reading the projection's applied positions: %w", err)
		}
		out[id] = time.UnixMilli(ms).UTC()
	}
	return out, rows.Err()
}

// Lags reads the lag of every shard. A shard that cannot be read is named
// in the error (joined); the others are returned.
func (w *Watcher) Lags(ctx context.Context) ([]Lag, error) {
	applied, err := w.Applied(ctx)
	if err != nil {
		return nil, err
	}
	now := w.now()
	var out []Lag
	var errs []error
	for _, s := range w.shards {
		l := Lag{ShardID: s.ID, Applied: applied[s.ID]}
		var oldest sql.NullTime
		from := l.Applied
		if from.IsZero() {
			from = time.Unix(0, 0).UTC() // nothing applied: every event is pending (a DATETIME cannot hold year 1)
		}
		// The index range after the position, in commit order, capped.
		err := s.DB.QueryRowContext(ctx, `SELECT MIN(create_time), COUNT(*) FROM
			(SELECT create_time FROM outbox_event WHERE create_time > ? ORDER BY create_time LIMIT ?) pending`,
			from, PendingCap).Scan(&oldest, &l.Pending)
		if err != nil {
			errs = append(errs, fmt.Errorf("reading the outbox of %s after the applied position: %w", s.ID, err))
			continue
		}
		if oldest.Valid {
			l.Oldest = oldest.Time.UTC()
			l.Seconds = max(0, now.Sub(l.Oldest).Seconds())
		}
		out = append(out, l)
	}
	return out, errors.Join(errs...)
}

// Exporter publishes the lags as gauges, refreshed by Run.
type Exporter struct {
	w        *Watcher
	log      *slog.Logger
	interval time.Duration
	seconds  *prometheus.GaugeVec
	pending  *prometheus.GaugeVec
	up       *prometheus.GaugeVec
}

// NewExporter registers projection_durable_lag_seconds{shard},
// projection_unapplied_events{shard} and projection_lag_up{shard} on reg.
func NewExporter(log *slog.Logger, w *Watcher, interval time.Duration, reg prometheus.Registerer) *Exporter {
	e := &Exporter{w: w, log: log, interval: interval,
		seconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "projection_durable_lag_seconds",
			Help: "Age of the oldest outbox event of the shard committed after the projection's applied position (0: none), from durable state."}, []string{"shard"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "projection_unapplied_events",
			Help: "Outbox events of the shard committed after the projection's applied position (capped at 100000)."}, []string{"shard"}),
		up: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "projection_lag_up",
			Help: "1 when the last measure of the shard's lag succeeded."}, []string{"shard"}),
	}
	if reg != nil {
		reg.MustRegister(e.seconds, e.pending, e.up)
	}
	return e
}

// Refresh measures once and sets the gauges; a shard that cannot be
// measured keeps its last values with projection_lag_up 0.
func (e *Exporter) Refresh(ctx context.Context) error {
	lags, err := e.w.Lags(ctx)
	seen := map[string]bool{}
	for _, l := range lags {
		seen[l.ShardID] = true
		e.seconds.WithLabelValues(l.ShardID).Set(l.Seconds)
		e.pending.WithLabelValues(l.ShardID).Set(float64(l.Pending))
		e.up.WithLabelValues(l.ShardID).Set(1)
	}
	for _, s := range e.w.shards {
		if !seen[s.ID] {
			e.up.WithLabelValues(s.ID).Set(0)
		}
	}
	return err
}

// Run refreshes the gauges every interval until ctx ends (then it returns
// nil); failures are logged and shown by projection_lag_up.
func (e *Exporter) Run(ctx context.Context) error {
	t := time.NewTicker(e.interval)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, max(e.interval, 5*time.Second))
		if err := e.Refresh(rctx); err != nil && ctx.Err() == nil {
			e.log.Warn("measuring the projection's lag", "err", err)
		}
		cancel()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
