// Package retention removes what every growing table holds beyond its
// retention, in small batches, as a supervised worker of the server that runs
// it (the repair server: it holds every store).
//
// A Table names one purge: the SQL is the table owner's (resultstore for
// request_log, audit for audit_log, reconcile for runs and their
// discrepancies, repair for repairs and their items); this package only
// decides when and how much. Each round computes every table's cutoff (now
// minus its retention) and calls its Purge again and again, each call
// removing at most Config.Batch rows, pausing between calls so the live
// traffic keeps its share of the database, until a call removes nothing. A failing purge is logged and counted (retention_errors_total) and
// tried again at the next round; the other tables go on. Run returns only
// when ctx ends, so the supervisor treats any other return as a failure.
package retention

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/platform/server"
)

// Removed counts the rows one purge call removed, per table name.
type Removed map[string]int64

// Total is the sum over every table.
func (r Removed) Total() int64 {
	var n int64
	for _, v := range r {
		n += v
	}
	return n
}

// Purge removes at most batch rows older than cutoff (what "older" means and
// what must be kept is the owner's rule) and says how many of each table.
// A call that removes nothing says the purge is done for now (the cutoff is
// fixed for a round, so every call of a round has less left to remove).
type Purge func(ctx context.Context, cutoff time.Time, batch int) (Removed, error)

// Table is one purge: Name labels its metrics and logs (e.g. "request_log"),
// Store the database it runs in (a shard id, "control"); Also names the
// other tables its purge removes rows of (a run's discrepancies).
type Table struct {
	Name      string
	Also      []string
	Store     string
	Retention time.Duration
	Purge     Purge
}

// Config is the worker's cadence.
type Config struct {
	// Interval between the starts of two rounds.
	Interval time.Duration
	// Batch is the most rows one purge call removes.
	Batch int
	// Pause between two calls of one purge.
	Pause time.Duration
	// CallTimeout bounds one purge call (and taking the lock): a database
	// that stops answering fails the call, counted, instead of wedging the
	// worker.
	CallTimeout time.Duration
	// Lock, when set, is taken for each round; a round that cannot take it
	// (another replica is purging) is skipped. MySQLLock is one.
	Lock Lock
}

// Lock takes an exclusive lock without waiting; ok is false when another
// holder has it. release frees it.
type Lock func(ctx context.Context) (release func(), ok bool, err error)

// Defaults of Config.
const (
	DefaultInterval = time.Hour
	DefaultBatch    = 500
	DefaultPause    = 100 * time.Millisecond
	// DefaultCallTimeout is Config.CallTimeout's default.
	DefaultCallTimeout = time.Minute
	// beatEvery is how often Run beats while it waits for the next round.
	beatEvery = 30 * time.Second
)

// Stall is the longest the worker goes without server.Beat while it works
// (one call, its pause, or a wait between beats, twice over): the
// supervisor's Worker.Stall for it.
func (c Config) Stall() time.Duration { return 2 * (c.CallTimeout + c.Pause + beatEvery) }

// Validate rejects an impossible cadence.
func (c Config) Validate() error {
	var errs []error
	if c.Interval < time.Second {
		errs = append(errs, fmt.Errorf("retention interval must be at least 1s, got %s", c.Interval))
	}
	if c.Batch < 1 || c.Batch > 100000 {
		errs = append(errs, fmt.Errorf("retention batch must be 1-100000 rows, got %d", c.Batch))
	}
	if c.Pause < 0 || c.Pause > time.Minute {
		errs = append(errs, fmt.Errorf("retention pause must be 0-1m, got %s", c.Pause))
	}
	if c.CallTimeout < time.Second || c.CallTimeout > time.Hour {
		errs = append(errs, fmt.Errorf("retention statement timeout must be 1s-1h, got %s", c.CallTimeout))
	}
	return errors.Join(errs...)
}

// Worker purges its tables every Config.Interval.
type Worker struct {
	log    *slog.Logger
	cfg    Config
	tables []Table
	now    func() time.Time

	purged  *prometheus.CounterVec
	errs    *prometheus.CounterVec
	success *prometheus.GaugeVec
	cutoff  *prometheus.GaugeVec
}

// New returns a worker over tables and registers its metrics on reg:
//
//	retention_rows_purged_total{table,store}               rows removed
//	retention_errors_total{table,store}                    purge calls that failed
//	retention_last_success_timestamp_seconds{table,store}  end of the last round that purged the table without error
//	retention_cutoff_timestamp_seconds{table,store}        the cutoff of that round
func New(log *slog.Logger, cfg Config, reg prometheus.Registerer, tables []Table) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	for _, t := range tables {
		if t.Name == "" || t.Purge == nil || t.Retention <= 0 {
			return nil, fmt.Errorf("retention table %q of %q: needs a name, a purge and a positive retention", t.Name, t.Store)
		}
	}
	labels := []string{"table", "store"}
	w := &Worker{
		log: log, cfg: cfg, tables: tables, now: time.Now,
		purged: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "retention_rows_purged_total",
			Help: "Rows removed by the retention worker because they were older than their table's retention."}, labels),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "retention_errors_total",
			Help: "Purge calls of the retention worker that failed (tried again at the next round)."}, labels),
		success: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "retention_last_success_timestamp_seconds",
			Help: "Unix time at which the retention worker last purged the table without error."}, labels),
		cutoff: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "retention_cutoff_timestamp_seconds",
			Help: "Cutoff of the last successful purge: rows older than it were removed."}, labels),
	}
	for _, t := range tables {
		// Every series exists from the start (0), so an alert on a missing
		// success fires for a table never purged.
		for _, name := range append([]string{t.Name}, t.Also...) {
			w.purged.WithLabelValues(name, t.Store)
		}
		w.errs.WithLabelValues(t.Name, t.Store)
	}
	reg.MustRegister(w.purged, w.errs, w.success, w.cutoff)
	return w, nil
}

// Run purges every table at once, then every Interval, until ctx ends; it
// returns nil then (and only then). It calls server.Beat before every purge
// call and every 30s while it waits, so a supervisor with Worker.Stall set
// to Config.Stall sees it wedged only when a call outlives its timeout.
func (w *Worker) Run(ctx context.Context) error {
	w.log.Info("retention worker started", "tables", len(w.tables), "interval", w.cfg.Interval, "batch", w.cfg.Batch)
	for {
		next := time.Now().Add(w.cfg.Interval)
		_ = w.Round(ctx)
		for {
			server.Beat(ctx)
			wait := time.Until(next)
			if wait <= 0 {
				break
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(min(wait, beatEvery)):
			}
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// Round purges every table once (until a call removes nothing)
// and returns the errors of the tables that failed, joined; the others are
// purged whatever one does. A round whose Lock is held elsewhere does
// nothing and returns nil.
func (w *Worker) Round(ctx context.Context) error {
	if w.cfg.Lock != nil {
		server.Beat(ctx)
		lctx, cancel := context.WithTimeout(ctx, w.cfg.CallTimeout)
		release, ok, err := w.cfg.Lock(lctx)
		cancel()
		if err != nil {
			w.log.Warn("retention round skipped: the lock could not be taken", "err", err)
			return fmt.Errorf("taking the retention lock: %w", err)
		}
		if !ok {
			w.log.Debug("retention round skipped: another replica holds the lock")
			return nil
		}
		defer release()
	}
	var errs []error
	for _, t := range w.tables {
		if ctx.Err() != nil {
			return errors.Join(append(errs, ctx.Err())...)
		}
		if err := w.purge(ctx, t); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// purge runs one table's purge until it is done for this round.
func (w *Worker) purge(ctx context.Context, t Table) error {
	cutoff := w.now().UTC().Add(-t.Retention)
	total := Removed{}
	for {
		server.Beat(ctx)
		cctx, cancel := context.WithTimeout(ctx, w.cfg.CallTimeout)
		got, err := t.Purge(cctx, cutoff, w.cfg.Batch)
		cancel()
		for name, n := range got {
			w.purged.WithLabelValues(name, t.Store).Add(float64(n))
			total[name] += n
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			w.errs.WithLabelValues(t.Name, t.Store).Inc()
			w.log.Warn("purging by retention failed; tried again at the next round", "table", t.Name, "store", t.Store, "err", err)
			return fmt.Errorf("purging %s on %s: %w", t.Name, t.Store, err)
		}
		if got.Total() == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(w.cfg.Pause):
		}
	}
	w.success.WithLabelValues(t.Name, t.Store).Set(float64(w.now().Unix()))
	w.cutoff.WithLabelValues(t.Name, t.Store).Set(float64(cutoff.Unix()))
	if n := total.Total(); n > 0 {
		w.log.Info("purged by retention", "table", t.Name, "store", t.Store, "rows", n, "per_table", map[string]int64(total),
			"older_than", cutoff, "retention", t.Retention)
	}
	return nil
}

// MySQLLock is a Lock held by a session of db: MySQL's and MariaDB's
// GET_LOCK(name + the current database's name, 0), released with
// RELEASE_LOCK or when the session ends (a crashed holder frees it).
// Replicas of one server take it so that one purges at a time; servers of
// other databases on the same MySQL server do not share it.
func MySQLLock(db *sql.DB, name string) Lock {
	return func(ctx context.Context) (func(), bool, error) {
		conn, err := db.Conn(ctx)
		if err != nil {
			return nil, false, fmt.Errorf("connecting for lock %s: %w", name, err)
		}
		var got sql.NullInt64
		if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(LEFT(CONCAT(?, DATABASE()), 64), 0)", name).Scan(&got); err != nil {
			_ = conn.Close()
			return nil, false, fmt.Errorf("taking lock %s: %w", name, err)
		}
		if got.Int64 != 1 {
			_ = conn.Close()
			return nil, false, nil
		}
		return func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, _ = conn.ExecContext(ctx, "DO RELEASE_LOCK(LEFT(CONCAT(?, DATABASE()), 64))", name)
			_ = conn.Close()
		}, true, nil
	}
}
