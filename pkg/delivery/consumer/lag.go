package consumer

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/storage/chstore"
)

// ShardLag is the projection's freshness for one source shard.
type ShardLag struct {
	ShardID      string
	NewestCommit time.Time     // source commit time of the newest applied event
	Lag          time.Duration // now - NewestCommit
	IngestDelay  time.Duration // commit-to-ingest delay of that event
}

// Lag tracks, per shard, the newest applied source commit time.
type Lag struct {
	mu      sync.Mutex
	shards  map[string][2]int64 // commit ms, ingest ms
	applied atomic.Int64
	dead    atomic.Int64
}

// NewLag returns an empty tracker.
func NewLag() *Lag { return &Lag{shards: map[string][2]int64{}} }

// observeWritten records the rows of a batch ClickHouse acknowledged (one
// lock for the batch): the projection's freshness moves when the rows are
// visible, before their messages are acknowledged.
func (l *Lag) observeWritten(rows []chstore.Row) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range rows {
		if cur, ok := l.shards[r.ShardID]; !ok || r.SourceCommitMs >= cur[0] {
			l.shards[r.ShardID] = [2]int64{r.SourceCommitMs, r.IngestMs}
		}
	}
}

// countApplied counts n events written and acknowledged.
func (l *Lag) countApplied(n int) { l.applied.Add(int64(n)) }

// Snapshot returns the lag of every shard seen, sorted by shard.
func (l *Lag) Snapshot(now time.Time) []ShardLag {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]ShardLag, 0, len(l.shards))
	for id, v := range l.shards {
		commit := time.UnixMilli(v[0]).UTC()
		out = append(out, ShardLag{ShardID: id, NewestCommit: commit, Lag: max(0, now.Sub(commit)),
			IngestDelay: max(0, time.Duration(v[1]-v[0])*time.Millisecond)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ShardID < out[j].ShardID })
	return out
}

// Applied counts events applied since start: written to ClickHouse and
// then acknowledged.
func (l *Lag) Applied() int64 { return l.applied.Load() }

// ObserveDeadLetter counts a dead-lettered event.
func (l *Lag) ObserveDeadLetter() { l.dead.Add(1) }

// DeadLettered counts dead-lettered events since start.
func (l *Lag) DeadLettered() int64 { return l.dead.Load() }

type metrics struct {
	applied, deadLettered, insertFailures prometheus.Counter
	insertSeconds                         prometheus.Histogram
	// Where the pipeline waits: receiving blocked because a cut batch is
	// already waiting for the writer (the writer is the bottleneck), and
	// the writer waiting for a batch after its first (receiving is).
	receiveBlocked, writerIdle prometheus.Counter
	// received counts the events put into batches; cuts the batches cut,
	// by why: size, bytes, wait (BatchWait), idle (no insert in flight).
	received prometheus.Counter
	cuts     *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, lag *Lag) *metrics {
	m := &metrics{
		applied:        prometheus.NewCounter(prometheus.CounterOpts{Name: "consumer_applied_events_total", Help: "Events written to ClickHouse and acknowledged."}),
		deadLettered:   prometheus.NewCounter(prometheus.CounterOpts{Name: "consumer_dead_lettered_events_total", Help: "Events sent to the dead-letter topic."}),
		insertFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "consumer_insert_failures_total", Help: "Failed ClickHouse inserts of rows or of applied positions (retried; their batches not acknowledged)."}),
		insertSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "consumer_insert_seconds", Help: "ClickHouse batch insert time.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}),
		receiveBlocked: prometheus.NewCounter(prometheus.CounterOpts{Name: "consumer_receive_blocked_seconds_total",
			Help: "Time receiving waited because a cut batch was already waiting for the writer."}),
		writerIdle: prometheus.NewCounter(prometheus.CounterOpts{Name: "consumer_writer_idle_seconds_total",
			Help: "Time the writer waited for the next batch (after the first)."}),
		received: prometheus.NewCounter(prometheus.CounterOpts{Name: "consumer_received_events_total", Help: "Events received, decoded and put into a batch."}),
		cuts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "consumer_batches_cut_total",
			Help: "Batches handed to the writer, by why they were cut: size or bytes (full), wait (--batch-wait), idle (no insert in flight)."}, []string{"reason"}),
	}
	for _, r := range []string{cutSize, cutBytes, cutWait, cutIdle} {
		m.cuts.WithLabelValues(r)
	}
	if reg != nil {
		lagVec := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "projection_lag_seconds_max", Help: "Largest per-shard projection lag: now minus the source commit time of the newest applied event."},
			func() float64 {
				worst := 0.0
				for _, s := range lag.Snapshot(time.Now()) {
					worst = max(worst, s.Lag.Seconds())
				}
				return worst
			})
		reg.MustRegister(m.applied, m.deadLettered, m.insertFailures, m.insertSeconds, m.receiveBlocked, m.writerIdle, m.received, m.cuts, lagVec, shardLagCollector{lag})
	}
	return m
}

// shardLagCollector exports per-shard lag and ingest delay at scrape time.
type shardLagCollector struct{ lag *Lag }

var (
	lagDesc    = prometheus.NewDesc("projection_lag_seconds", "Now minus the source commit time of the newest event applied from the shard.", []string{"shard"}, nil)
	ingestDesc = prometheus.NewDesc("projection_ingest_delay_seconds", "Commit-to-ingest delay of the newest event applied from the shard.", []string{"shard"}, nil)
)

func (c shardLagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- lagDesc; ch <- ingestDesc }

func (c shardLagCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.lag.Snapshot(time.Now()) {
		ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, s.Lag.Seconds(), s.ShardID)
		ch <- prometheus.MustNewConstMetric(ingestDesc, prometheus.GaugeValue, s.IngestDelay.Seconds(), s.ShardID)
	}
}
