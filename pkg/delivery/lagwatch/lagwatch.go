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
// Partitions: a shard's events are spread over the topic's partitions (the
// relay keys them by data_id), each consumed on its own, so the newest
// applied commit of a shard says nothing about an event stuck in a stalled
// partition while the others move on. The consumer therefore also records
// its position per (shard, partition) (ClickHouse migration 0009), and the
// applied position of a shard (Applied) is the instant before its oldest
// SENT event not applied in the partition it was routed to
// (pulsarbus.DataIDPartition): a partition that received nothing lately is
// not behind when nothing of the shard is pending for it, and one stalled
// partition holds the shard's position back.
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

	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
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

// ScanCap bounds the outbox rows read per shard to find its oldest event
// not applied in its partition; when it is reached the position is the
// newest row read (every SENT event up to it is applied).
const ScanCap = 100_000

// Applied reads the applied position of every shard that has one: the
// instant up to which every event of the shard is applied, in the partition
// it was routed to (see the package comment). Without per-partition
// positions (nothing recorded yet, or the partition count unknown) it
// starts from the shard's newest applied commit (ClickHouse migration 0007).
// Either way it stays before the shard's oldest event not sent yet
// (belowUnsent).
func (w *Watcher) Applied(ctx context.Context) (map[string]time.Time, error) {
	newest, err := w.newestApplied(ctx)
	if err != nil {
		return nil, err
	}
	parts, n, since, err := w.partitionPositions(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]time.Time{}
	for _, s := range w.shards {
		pos, ok := parts[s.ID]
		old, hasOld := newest[s.ID]
		if !ok && !hasOld {
			continue // nothing applied of this shard
		}
		eff := old
		if n > 0 {
			if eff, err = w.effective(ctx, s, pos, n, old, since); err != nil {
				return nil, err
			}
		}
		if eff, err = belowUnsent(ctx, s, eff); err != nil {
			return nil, err
		}
		out[s.ID] = eff
	}
	// Shards outside the map keep their newest applied commit.
	for id, t := range newest {
		if _, ok := out[id]; !ok {
			out[id] = t
		}
	}
	return out, nil
}

// belowUnsent keeps pos before the shard's oldest event a relay is still to
// send. A reader relies on the position after it read it: pkg/reconciliation/reconcile
// reads the positions, then the records, then the outbox statuses of what
// differs. An event unsent at the first read, sent and not yet applied by
// the last, must not count as applied because it was committed before a
// position that never accounted for it (that called delay wrong data).
func belowUnsent(ctx context.Context, s Shard, pos time.Time) (time.Time, error) {
	oldest, err := outbox.OldestUnsentCommit(ctx, s.DB)
	if err != nil {
		return time.Time{}, fmt.Errorf("shard %s: %w", s.ID, err)
	}
	if !oldest.IsZero() && !oldest.After(pos) {
		return oldest.Add(-time.Millisecond), nil
	}
	return pos, nil
}

// partitionPositions reads the per-(shard, partition) positions, the
// topic's partition count (0 when none was recorded) and when the tracking
// began (the row of shard ” migration 0009 writes).
func (w *Watcher) partitionPositions(ctx context.Context) (map[string]map[int32]int64, int, int64, error) {
	rows, err := w.ch.Query(ctx, `SELECT shard_id, topic_partition, max(max_commit_ms), max(partitions), min(recorded_unix_ms)
		FROM projection_partition_applied GROUP BY shard_id, topic_partition`)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("reading the projection's applied positions per partition: %w", err)
	}
	defer rows.Close()
	out := map[string]map[int32]int64{}
	n, since := 0, int64(0)
	for rows.Next() {
		var id string
		var part, parts int32
		var ms, rec int64
		if err := rows.Scan(&id, &part, &ms, &parts, &rec); err != nil {
			return nil, 0, 0, fmt.Errorf("reading the projection's applied positions per partition: %w", err)
		}
		if out[id] == nil {
			out[id] = map[int32]int64{}
		}
		out[id][part] = ms
		n = max(n, int(parts))
		if id == "" { // migration 0009's start of tracking
			since = rec
			continue
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, 0, fmt.Errorf("reading the projection's applied positions per partition: %w", err)
	}
	return out, n, since, nil
}

// effective computes a shard's applied position from its per-partition
// positions pos (n partitions; a partition without one counts as applied up
// to min(old, sinceMs): before the tracking began at sinceMs, the shard's
// newest applied commit old was the rule): the outbox is read in commit order from the
// lowest partition position, and the first SENT event committed after the
// position of its partition bounds it.
func (w *Watcher) effective(ctx context.Context, s Shard, pos map[int32]int64, n int, old time.Time, sinceMs int64) (time.Time, error) {
	dflt := min(old.UnixMilli(), sinceMs)
	if old.IsZero() {
		dflt = 0
	}
	at := make([]int64, n)
	from := int64(-1)
	top := old.UnixMilli()
	for p := range n {
		at[p] = dflt
		if v, ok := pos[int32(p)]; ok {
			at[p] = v
		}
		if from < 0 || at[p] < from {
			from = at[p]
		}
		top = max(top, at[p])
	}
	var last, found time.Time
	read, err := outbox.CommitsAfter(ctx, s.DB, time.UnixMilli(from).UTC(), ScanCap, func(d outbox.Delivery) bool {
		last = d.Created
		if d.Status == outbox.StatusSent && last.UnixMilli() > at[pulsarbus.DataIDPartition(d.DataID, n)] {
			// The oldest event not applied in its partition.
			found = last.Add(-time.Millisecond)
			return false
		}
		return true
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the outbox of %s after the partitions' positions: %w", s.ID, err)
	}
	if !found.IsZero() {
		return found, nil
	}
	if read == ScanCap {
		return last, nil
	}
	return time.UnixMilli(max(top, last.UnixMilli())).UTC(), nil
}

// newestApplied reads the newest applied commit of every shard (0007).
func (w *Watcher) newestApplied(ctx context.Context) (map[string]time.Time, error) {
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
		from := l.Applied
		if from.IsZero() {
			from = time.Unix(0, 0).UTC() // nothing applied: every event is pending (a DATETIME cannot hold year 1)
		}
		// The index range after the position, in commit order, capped.
		var err error
		if l.Oldest, l.Pending, err = outbox.Pending(ctx, s.DB, from, PendingCap); err != nil {
			errs = append(errs, fmt.Errorf("reading the outbox of %s after the applied position: %w", s.ID, err))
			continue
		}
		if !l.Oldest.IsZero() {
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
