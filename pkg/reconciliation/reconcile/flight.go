package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/resultsync/resultsync/pkg/delivery/lagwatch"
	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/model/canonical"
)

// Flight is the evidence that tells delay from wrong data: what each shard
// committed and what the projection applied (pkg/delivery/lagwatch's durable
// positions), and which records still have their newest version on the way.
type Flight interface {
	// Positions returns, for every shard id, the commit time of the shard's
	// newest outbox event (zero when it has none) and the projection's applied
	// position of the shard (zero when it applied nothing of it): the instant
	// up to which every SENT event of the shard is applied in the topic
	// partition it was routed to (lagwatch.Watcher.Applied), so one stalled
	// partition holds the shard back while its others move on.
	Positions(ctx context.Context) (newest, applied map[string]time.Time, err error)
	// InFlight returns, of the records given as data_id -> source version,
	// those whose event of that version is still unsent (any outbox status
	// but SENT) or was committed after the applied position of its shard,
	// keyed by data_id, with the id of the shard that holds the event. A
	// record without an outbox row of that version (purged after its
	// retention, or written outside the write path) is not in flight.
	InFlight(ctx context.Context, versions map[int64]int64, applied map[string]time.Time) (map[int64]string, error)
}

// OutboxFlight implements Flight over the shards' outboxes (the commit-time
// index of shard migration 0006, the unique event id) and the projection's
// applied positions (ClickHouse migrations 0007 and, per partition, 0009).
// An event waiting in a stalled partition is committed after its shard's
// position, so InFlight counts its record in flight, never as wrong data.
type OutboxFlight struct {
	shards  []lagwatch.Shard
	watcher *lagwatch.Watcher
}

// NewOutboxFlight returns the evidence of the shards (ids as in the shard
// map, which the consumer records per row) and the projection database.
func NewOutboxFlight(ch driver.Conn, shards []lagwatch.Shard) *OutboxFlight {
	return &OutboxFlight{shards: shards, watcher: lagwatch.New(ch, shards)}
}

// Positions implements Flight: one small aggregate in ClickHouse and one
// index lookup per shard.
func (f *OutboxFlight) Positions(ctx context.Context) (map[string]time.Time, map[string]time.Time, error) {
	applied, err := f.watcher.Applied(ctx)
	if err != nil {
		return nil, nil, err
	}
	newest := map[string]time.Time{}
	for _, s := range f.shards {
		t, err := outbox.NewestCommit(ctx, s.DB)
		if err != nil {
			return nil, nil, fmt.Errorf("shard %s: %w", s.ID, err)
		}
		newest[s.ID] = t
	}
	return newest, applied, nil
}

// InFlight implements Flight: the events are looked up by their unique
// event id, IDChunk at a time, on every shard (a record's events live on
// the shard that owns it).
func (f *OutboxFlight) InFlight(ctx context.Context, versions map[int64]int64, applied map[string]time.Time) (map[int64]string, error) {
	out := map[int64]string{}
	if len(versions) == 0 {
		return out, nil
	}
	events := make([]string, 0, len(versions))
	for id, v := range versions {
		events = append(events, canonical.EventID(id, v))
	}
	for _, s := range f.shards {
		for i := 0; i < len(events); i += IDChunk {
			chunk := events[i:min(i+IDChunk, len(events))]
			if err := f.inFlight(ctx, s, chunk, applied[s.ID], out); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func (f *OutboxFlight) inFlight(ctx context.Context, s lagwatch.Shard, events []string, applied time.Time, out map[int64]string) error {
	ds, err := outbox.DeliveriesByEventID(ctx, s.DB, events)
	if err != nil {
		return fmt.Errorf("shard %s: %w", s.ID, err)
	}
	for _, d := range ds {
		if d.Status != outbox.StatusSent || d.Created.After(applied) {
			out[d.DataID] = s.ID
		}
	}
	return nil
}

// canBeInFlight reports whether d may be delay rather than wrong data: the
// source holds a version the projection lacks (missing, older, or a
// deletion not applied). Equal versions that differ, records the source
// does not have and versions ahead of the source are never delay.
func canBeInFlight(d Discrepancy) bool {
	switch d.Class {
	case MissingInTarget, StaleTargetVersion, DeletionNotApplied:
		return d.Source != nil
	}
	return false
}
