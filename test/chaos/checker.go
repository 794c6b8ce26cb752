package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// state is one record's current state, read independently from a shard or
// from ClickHouse: its version, its result in thousandths, whether deleted.
type state struct {
	version int64
	milli   int64
	deleted bool
}

func (s state) String() string {
	if s.deleted {
		return fmt.Sprintf("v%d deleted", s.version)
	}
	return fmt.Sprintf("v%d %s", s.version, milliString(s.milli))
}

func inList(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	return strings.Join(parts, ",")
}

// shardStates reads every record of the campaigns from each shard's own
// table (plain SQL on a direct connection, not the platform's code).
func shardStates(ctx context.Context, dbs []*sql.DB, campaigns []int64) (map[int64]state, error) {
	out := map[int64]state{}
	for i, db := range dbs {
		rows, err := db.QueryContext(ctx, "SELECT data_id, version, CAST(ROUND(result * 1000) AS SIGNED), is_deleted FROM fitness_result WHERE detect_id IN ("+
			inList(campaigns)+")")
		if err != nil {
			return nil, fmt.Errorf("reading shard %d: %w", i, err)
		}
		for rows.Next() {
			var id int64
			var s state
			if err := rows.Scan(&id, &s.version, &s.milli, &s.deleted); err != nil {
				rows.Close()
				return nil, fmt.Errorf("reading shard %d: %w", i, err)
			}
			if _, dup := out[id]; dup {
				rows.Close()
				return nil, fmt.Errorf("record %d is on two shards", id)
			}
			out[id] = s
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return nil, fmt.Errorf("reading shard %d: %w", i, err)
		}
		rows.Close()
	}
	return out, nil
}

// projectionStates reads what readers of ClickHouse see for every record of
// the campaigns: the row with the highest engine version (argMax over
// row_version, the same ranking the ReplacingMergeTree keeps), computed here
// rather than through the platform's views.
func projectionStates(ctx context.Context, conn driver.Conn, campaigns []int64) (map[int64]state, error) {
	rows, err := conn.Query(ctx, "SELECT data_id, argMax(version, row_version), argMax(toInt64(result * 1000), row_version), argMax(is_deleted, row_version) "+
		"FROM fitness_result_versions WHERE detect_id IN ("+inList(campaigns)+") GROUP BY data_id")
	if err != nil {
		return nil, fmt.Errorf("reading ClickHouse: %w", err)
	}
	defer rows.Close()
	out := map[int64]state{}
	for rows.Next() {
		var id, v, m int64
		var del uint8
		if err := rows.Scan(&id, &v, &m, &del); err != nil {
			return nil, fmt.Errorf("reading ClickHouse: %w", err)
		}
		out[id] = state{version: v, milli: m, deleted: del == 1}
	}
	return out, rows.Err()
}

// duplicateRows counts the projection rows of the campaigns beyond one per
// (data_id, version): deliveries of an event more than once that
// ClickHouse has not merged away yet (a lower bound of the duplicates
// delivered).
func duplicateRows(ctx context.Context, conn driver.Conn, campaigns []int64) (uint64, error) {
	var n, d uint64
	err := conn.QueryRow(ctx, "SELECT count(), uniqExact(data_id, version) FROM fitness_result_versions WHERE detect_id IN ("+inList(campaigns)+")").Scan(&n, &d)
	return n - d, err
}

// verdict compares the shards, ClickHouse and the workload's log.
type verdict struct {
	checked                          int
	missing, wrong, unexpected       []string // ClickHouse against the shards
	lost, refusedApplied, doubtful   []string // the log against the shards
	deletedChecked, correctionsInLog int
}

func (v verdict) clean() bool {
	return len(v.missing)+len(v.wrong)+len(v.unexpected)+len(v.lost)+len(v.refusedApplied) == 0
}

func compare(src, proj map[int64]state, log map[int64]acked, doubt map[int64]bool) verdict {
	var v verdict
	for id, s := range src {
		v.checked++
		if s.deleted {
			v.deletedChecked++
		}
		p, ok := proj[id]
		switch {
		case !ok:
			v.missing = append(v.missing, fmt.Sprintf("%d (shard %s)", id, s))
		case p != s:
			v.wrong = append(v.wrong, fmt.Sprintf("%d (shard %s, ClickHouse %s)", id, s, p))
		}
	}
	for id, p := range proj {
		if _, ok := src[id]; !ok {
			v.unexpected = append(v.unexpected, fmt.Sprintf("%d (ClickHouse %s)", id, p))
		}
	}
	for id, a := range log {
		if a.version > 1 {
			v.correctionsInLog++
		}
		if doubt[id] {
			v.doubtful = append(v.doubtful, fmt.Sprint(id))
			continue
		}
		s, ok := src[id]
		want := state{version: a.version, milli: a.milli, deleted: a.deleted}
		if a.deleted {
			// A tombstone keeps the record's last result.
			want.milli = s.milli
		}
		switch {
		case !ok || s.version < a.version:
			v.lost = append(v.lost, fmt.Sprintf("%d (acknowledged %s, shard %s present %v)", id, want, s, ok))
		case s.version > a.version:
			v.refusedApplied = append(v.refusedApplied, fmt.Sprintf("%d (acknowledged %s, shard %s)", id, want, s))
		case s != want:
			v.lost = append(v.lost, fmt.Sprintf("%d (acknowledged %s, shard %s)", id, want, s))
		}
	}
	return v
}
