// Package outboxtest fills shard outboxes with realistic events for tests and
// benchmarks.
package outboxtest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/model/canonical"
)

// Event returns the version-1 event of a standing long jump for dataID.
func Event(shardID string, dataID int64, now time.Time) *fitnessv1.FitnessResultChanged {
	return &fitnessv1.FitnessResultChanged{
		EventId: canonical.EventID(dataID, 1), DataId: dataID, DetectId: 10001, UserId: 1 + dataID%5000,
		ProjectId: 3, SchoolId: 1 + dataID%97, Grade: int32(1 + dataID%12), Version: 1,
		Result: fmt.Sprintf("%d.%02d", 1+dataID%3, dataID%100), Unit: "m", SchemaVersion: 1,
		SourceCommitTime: timestamppb.New(now), ShardId: shardID,
	}
}

// Fill inserts n NEW outbox rows for data ids first..first+n-1 in multi-row
// statements of 1000 rows, and returns the event ids.
func Fill(ctx context.Context, db *sql.DB, shardID string, first int64, n int) ([]string, error) {
	ids := make([]string, 0, n)
	now := time.Now().UTC().Truncate(time.Millisecond)
	for start := 0; start < n; start += 1000 {
		end := min(start+1000, n)
		var sb strings.Builder
		sb.WriteString("INSERT INTO outbox_event (event_id, data_id, version, payload, status, due_time, create_time) VALUES ")
		args := make([]any, 0, (end-start)*6)
		for i := start; i < end; i++ {
			ev := Event(shardID, first+int64(i), now)
			payload, err := proto.MarshalOptions{Deterministic: true}.Marshal(ev)
			if err != nil {
				return nil, err
			}
			if i > start {
				sb.WriteString(",")
			}
			sb.WriteString("(?, ?, 1, ?, 'NEW', ?, ?)")
			args = append(args, ev.GetEventId(), ev.GetDataId(), payload, now, now)
			ids = append(ids, ev.GetEventId())
		}
		if _, err := db.ExecContext(ctx, sb.String(), args...); err != nil {
			return nil, fmt.Errorf("filling outbox: %w", err)
		}
	}
	return ids, nil
}

// StatusCounts returns the number of outbox rows per status.
func StatusCounts(ctx context.Context, db *sql.DB) (map[string]int, error) {
	rows, err := db.QueryContext(ctx, "SELECT status, COUNT(*) FROM outbox_event GROUP BY status")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return nil, err
		}
		out[s] = n
	}
	return out, rows.Err()
}
