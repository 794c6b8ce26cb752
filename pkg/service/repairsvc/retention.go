package repairsvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/resultsync/resultsync/pkg/platform/audit"
	"github.com/resultsync/resultsync/pkg/platform/config"
	"github.com/resultsync/resultsync/pkg/platform/idempotency"
	"github.com/resultsync/resultsync/pkg/platform/retention"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/recovery/repair"
	"github.com/resultsync/resultsync/pkg/service/stores"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/write/resultstore"
)

// Retention is how long each growing table keeps its rows, and the cadence
// of the worker that removes the rest (pkg/platform/retention). The repair
// server runs it because it is the one server with every store: the shards
// (request_log), ClickHouse (dead_letters) and the control database, where a run, its discrepancies
// and the repairs that name them must be judged together.
type Retention struct {
	// RequestLog keeps the idempotency keys: the write path's on every
	// shard (request_log) and the control calls' (control_request); at
	// least resultstore.RetryWindow.
	RequestLog time.Duration
	// Runs keeps ended reconciliation runs and their discrepancies (a run
	// a kept repair names, or with an unresolved discrepancy, is kept).
	Runs time.Duration
	// Repairs keeps ended repairs, their items, progress and transitions.
	Repairs time.Duration
	// DeadLetters keeps the consumer's dead letters (ClickHouse dead_letters).
	DeadLetters time.Duration
	// Audit keeps the audit log: the longest of all.
	Audit time.Duration
	retention.Config
}

// Default retentions.
const (
	DefaultRequestLogRetention = 7 * 24 * time.Hour
	DefaultRunRetention        = 90 * 24 * time.Hour
	DefaultRepairRetention     = 180 * 24 * time.Hour
	DefaultAuditRetention      = 400 * 24 * time.Hour
	DefaultDeadLetterRetention = 30 * 24 * time.Hour
)

// flags defines the retention settings on l.
func (r *Retention) flags(l *config.Loader) {
	l.Duration(&r.RequestLog, "request-log-retention", "RS_RETENTION_REQUEST_LOG", DefaultRequestLogRetention,
		fmt.Sprintf("keep the idempotency keys (the write path's request_log on every shard, the control calls' control_request) this long; at least the clients' retry window, %s", resultstore.RetryWindow))
	l.Duration(&r.Runs, "run-retention", "RS_RETENTION_RUNS", DefaultRunRetention,
		"keep ended reconciliation runs and their discrepancies this long (a run a kept repair names, or with an unresolved discrepancy, is kept)")
	l.Duration(&r.Repairs, "repair-retention", "RS_RETENTION_REPAIRS", DefaultRepairRetention,
		"keep ended repairs with their items, progress and transitions this long (repairs of a controlled rebuild are kept)")
	l.Duration(&r.DeadLetters, "dead-letter-retention", "RS_RETENTION_DEAD_LETTERS", DefaultDeadLetterRetention,
		"keep the consumer's dead letters (ClickHouse dead_letters; the messages stay on the dead-letter topic for its own retention) this long")
	l.Duration(&r.Audit, "audit-retention", "RS_RETENTION_AUDIT", DefaultAuditRetention,
		"keep the audit log this long; at least every other retention")
	l.Duration(&r.Interval, "retention-interval", "RS_RETENTION_INTERVAL", retention.DefaultInterval, "how often the retention worker purges every table")
	l.Int(&r.Batch, "retention-batch", "RS_RETENTION_BATCH", retention.DefaultBatch, "rows one purge statement removes at most")
	l.Duration(&r.Pause, "retention-pause", "RS_RETENTION_PAUSE", retention.DefaultPause, "pause between two purge statements of one table")
	l.Duration(&r.CallTimeout, "retention-statement-timeout", "RS_RETENTION_STATEMENT_TIMEOUT", retention.DefaultCallTimeout,
		"bound on one purge statement (a database that stops answering fails it, counted in retention_errors_total)")
}

// Validate rejects a retention the contracts forbid.
func (r Retention) Validate() error {
	errs := []error{r.Config.Validate()}
	if r.RequestLog < resultstore.RetryWindow {
		errs = append(errs, fmt.Errorf("request-log-retention %s is shorter than the clients' retry window %s: a retried command could change a record twice",
			r.RequestLog, resultstore.RetryWindow))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"run-retention", r.Runs}, {"repair-retention", r.Repairs}, {"dead-letter-retention", r.DeadLetters}} {
		if d.v < 24*time.Hour {
			errs = append(errs, fmt.Errorf("%s must be at least 24h, got %s", d.name, d.v))
		}
	}
	if longest := max(r.RequestLog, r.Runs, r.Repairs, r.DeadLetters); r.Audit < longest {
		errs = append(errs, fmt.Errorf("audit-retention %s must be at least every other retention (%s): the audit trail outlives what it audits", r.Audit, longest))
	}
	return errors.Join(errs...)
}

// newRetention builds the retention worker over the pools: request_log on
// every shard, then runs, repairs, the control calls' idempotency keys and
// the audit log in the control database. Replicas take turns by a lock of the control database.
func newRetention(log *slog.Logger, r Retention, pools *stores.Pools, dead *chstore.Projection, reg prometheus.Registerer) (*retention.Worker, error) {
	cfg := r.Config
	cfg.Lock = retention.MySQLLock(pools.Control, "resultsync.retention.")
	w, err := retention.New(log.With("worker", "retention"), cfg, reg, retentionTables(r, pools, dead))
	if err != nil {
		return nil, fmt.Errorf("retention worker: %w", err)
	}
	return w, nil
}

// retentionTables are the purges of the worker, in the order a round runs
// them: request_log on every shard, runs (before the repairs, so a run
// whose last repair goes in this round goes at the next one), repairs,
// control_request (the control calls' idempotency keys), the audit log, and the dead letters of the projection dead (none when nil):
// a day of them per call, ClickHouse having no row-bounded DELETE.
func retentionTables(r Retention, pools *stores.Pools, dead *chstore.Projection) []retention.Table {
	var tables []retention.Table
	for i, db := range pools.Shards {
		tables = append(tables, retention.Table{Name: "request_log", Store: pools.Map.Shards[i].ID, Retention: r.RequestLog,
			Purge: func(ctx context.Context, cutoff time.Time, batch int) (retention.Removed, error) {
				n, err := resultstore.PurgeRequestLog(ctx, db, cutoff, batch)
				return retention.Removed{"request_log": n}, err
			}})
	}
	runs, repairs, auditLog := reconcile.NewRunStore(pools.Control), repair.NewStore(pools.Control), audit.New(pools.Control)
	requests := idempotency.New(pools.Control, idempotency.Options{})
	tables = append(tables,
		retention.Table{Name: "reconcile_run", Also: []string{"discrepancy"}, Store: "control", Retention: r.Runs,
			Purge: func(ctx context.Context, cutoff time.Time, batch int) (retention.Removed, error) {
				return runs.PurgeRuns(ctx, cutoff, batch)
			}},
		retention.Table{Name: "repair", Also: []string{"repair_item", "repair_progress", "repair_transition", "repair_request"}, Store: "control", Retention: r.Repairs,
			Purge: func(ctx context.Context, cutoff time.Time, batch int) (retention.Removed, error) {
				return repairs.PurgeRepairs(ctx, cutoff, batch)
			}},
		retention.Table{Name: "control_request", Store: "control", Retention: r.RequestLog,
			Purge: func(ctx context.Context, cutoff time.Time, batch int) (retention.Removed, error) {
				n, err := requests.Purge(ctx, cutoff, batch)
				return retention.Removed{"control_request": n}, err
			}},
		retention.Table{Name: "audit_log", Store: "control", Retention: r.Audit,
			Purge: func(ctx context.Context, cutoff time.Time, batch int) (retention.Removed, error) {
				n, err := auditLog.Purge(ctx, cutoff, batch)
				return retention.Removed{"audit_log": n}, err
			}},
	)
	if dead != nil {
		tables = append(tables, retention.Table{Name: "dead_letters", Store: "clickhouse", Retention: r.DeadLetters,
			Purge: func(ctx context.Context, cutoff time.Time, _ int) (retention.Removed, error) {
				n, err := dead.PurgeDeadLetters(ctx, cutoff)
				return retention.Removed{"dead_letters": n}, err
			}})
	}
	return tables
}
