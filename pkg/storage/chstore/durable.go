package chstore

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Durable inserts. The consumer acknowledges a message only after
// ClickHouse acknowledged the insert holding it, so that acknowledgement
// must mean the rows are stored. A server (or a user profile) may default
// to async_insert = 1, where an insert returns once its rows are in a
// memory buffer (and, with wait_for_async_insert = 0, before they are even
// flushed): a crash then loses rows whose messages are already acknowledged.
// (chdb, ClickHouse 26.9 in-process, defaults to async_insert = 1.)
//
// Every insert of the live path (Insert, InsertDeadLetter,
// InsertAppliedPositions) therefore names its settings in the statement:
// `SETTINGS async_insert = 0, wait_for_async_insert = 1`. ClickHouse 18.16
// has neither setting (async inserts arrived in 21.11) and refuses an
// unknown setting, so the clause holds only the settings the server has,
// read once per Projection from system.settings; without async_insert every
// insert is synchronous anyway.
//
// On a cluster the connection also carries insert_distributed_sync = 1
// (Options.Cluster): the INSERT into the Distributed table returns once one
// replica of every shard it wrote to has the rows. insert_quorum is left at
// its default (0): an acknowledged row is on one replica and reaches the
// others by replication; a quorum of 2 would stop the consumer (and the
// whole projection) whenever one replica of any shard is down, and the
// loss it guards against (a replica destroyed before its peer fetched the
// part) is one reconciliation finds and a replay repairs (docs/design.md,
// "Durable acknowledgement").

// durableSettings are the settings pinned on every insert, in order, when
// the server knows them.
var durableSettings = [][2]string{{"async_insert", "0"}, {"wait_for_async_insert", "1"}}

// insertSettings detects, once, the SETTINGS clause of the live path's
// inserts on one connection pool.
type insertSettings struct {
	mu     sync.Mutex
	known  bool
	clause string
}

// get returns the clause (" SETTINGS ..." or ""), reading system.settings
// the first time; a failed read is retried by the next call.
func (s *insertSettings) get(ctx context.Context, conn driver.Conn) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.known {
		return s.clause, nil
	}
	rows, err := conn.Query(ctx, "SELECT name FROM system.settings WHERE name IN ('async_insert', 'wait_for_async_insert')")
	if err != nil {
		return "", fmt.Errorf("reading the server's insert settings: %w", err)
	}
	defer rows.Close()
	has := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return "", fmt.Errorf("reading the server's insert settings: %w", err)
		}
		has[name] = true
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("reading the server's insert settings: %w", err)
	}
	var parts []string
	for _, kv := range durableSettings {
		if has[kv[0]] {
			parts = append(parts, kv[0]+" = "+kv[1])
		}
	}
	if len(parts) > 0 {
		s.clause = " SETTINGS " + strings.Join(parts, ", ")
	}
	s.known = true
	return s.clause, nil
}

// InsertSettings returns the SETTINGS clause every insert of p carries
// (" SETTINGS async_insert = 0, wait_for_async_insert = 1" on a server with
// async inserts, "" on one without, such as 18.16), detecting it on first
// use.
func (p *Projection) InsertSettings(ctx context.Context) (string, error) {
	return p.settings.get(ctx, p.conn)
}

// prepareInsert prepares a batch insert of query (INSERT INTO t (columns))
// with the durable settings appended.
func (p *Projection) prepareInsert(ctx context.Context, query string) (driver.Batch, error) {
	clause, err := p.InsertSettings(ctx)
	if err != nil {
		return nil, err
	}
	b, err := p.conn.PrepareBatch(ctx, query+clause)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// AppliedPosition is the newest source commit the consumer applied of one
// source shard's events that arrived through one topic partition
// (projection_partition_applied, ClickHouse migration 0009).
type AppliedPosition struct {
	ShardID    string
	Partition  int32
	Partitions int32 // the topic's partition count (0: unknown)
	CommitMs   int64
}

// InsertAppliedPositions records positions (one synchronous insert, with the
// durable settings). The consumer calls it after the rows' insert and before
// acknowledging them, so a position never runs ahead of stored rows.
func (p *Projection) InsertAppliedPositions(ctx context.Context, ps []AppliedPosition, nowMs int64) error {
	if len(ps) == 0 {
		return nil
	}
	b, err := p.prepareInsert(ctx, "INSERT INTO projection_partition_applied (shard_id, topic_partition, partitions, max_commit_ms, recorded_unix_ms)")
	if err != nil {
		return fmt.Errorf("recording %d applied positions: %w", len(ps), err)
	}
	defer b.Abort() //nolint:errcheck // no-op after Send
	for _, a := range ps {
		if err := b.Append(a.ShardID, a.Partition, a.Partitions, a.CommitMs, nowMs); err != nil {
			return fmt.Errorf("recording applied positions: %w", err)
		}
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("recording %d applied positions: %w", len(ps), err)
	}
	return nil
}
