// Package outbox is the transactional outbox of a shard: the writer that
// stores an event in the same local transaction as the business change it
// describes, and (for the relay) claiming, completion and replay of rows.
package outbox

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
)

// Execer is what Write needs of a transaction (*sql.Tx satisfies it).
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// MaxPayload is the largest serialized event the outbox column holds.
const MaxPayload = 4096

// Write inserts the full-state event ev as a NEW outbox row through tx. Call it
// inside the transaction that commits the change ev describes, so both commit
// or neither does. The payload is the deterministic protobuf encoding, so the
// same (data_id, version) always carries the same bytes. A second row for the
// same event_id is an error (the business version must have advanced).
func Write(ctx context.Context, tx Execer, ev *fitnessv1.FitnessResultChanged, now time.Time) error {
	q, args, err := Insert(ev, now)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("inserting outbox event %s: %w", ev.GetEventId(), err)
	}
	return nil
}

// Insert returns the statement and arguments that Write executes, for a
// caller that batches it with the other statements of its transaction.
func Insert(ev *fitnessv1.FitnessResultChanged, now time.Time) (string, []any, error) {
	if ev.GetEventId() == "" || ev.GetDataId() == 0 || ev.GetVersion() <= 0 {
		return "", nil, errors.New("writing outbox event: event_id, data_id and version are required")
	}
	payload, err := proto.MarshalOptions{Deterministic: true}.Marshal(ev)
	if err != nil {
		return "", nil, fmt.Errorf("encoding event %s: %w", ev.GetEventId(), err)
	}
	if len(payload) > MaxPayload {
		return "", nil, fmt.Errorf("event %s is %d bytes, more than the outbox holds (%d)", ev.GetEventId(), len(payload), MaxPayload)
	}
	return `INSERT INTO outbox_event (event_id, data_id, version, payload, status, due_time, create_time) VALUES (?, ?, ?, ?, 'NEW', ?, ?)`,
		[]any{ev.GetEventId(), ev.GetDataId(), ev.GetVersion(), payload, now, now}, nil
}

// InsertIf is Insert as an INSERT ... SELECT that inserts only when the SQL
// condition cond (with its arguments condArgs) holds, e.g. that the business
// row is in the state the UPDATE before it in the same batch writes.
func InsertIf(ev *fitnessv1.FitnessResultChanged, now time.Time, cond string, condArgs ...any) (string, []any, error) {
	_, args, err := Insert(ev, now)
	if err != nil {
		return "", nil, err
	}
	return `INSERT INTO outbox_event (event_id, data_id, version, payload, status, due_time, create_time)
		SELECT ?, ?, ?, ?, 'NEW', ?, ? FROM DUAL WHERE ` + cond, append(args, condArgs...), nil
}

// Decode parses an outbox payload.
func Decode(payload []byte) (*fitnessv1.FitnessResultChanged, error) {
	ev := &fitnessv1.FitnessResultChanged{}
	if err := proto.Unmarshal(payload, ev); err != nil {
		return nil, fmt.Errorf("decoding outbox payload: %w", err)
	}
	return ev, nil
}
