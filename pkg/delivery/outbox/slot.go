package outbox

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"math/rand/v2"
	"time"
)

// SlotSession takes and holds one of a shard's claim slots: named database
// locks (GET_LOCK, on MySQL and MariaDB alike) held by a dedicated session.
// The relay claims a shard only while it holds one of its slots, so the
// number of claim loops working a shard at once is bounded by the slot
// count whatever the number of relay instances: added instances stand by
// instead of piling more concurrent claim transactions and in-flight
// batches onto the shard. A slot is released with its session, so when its
// holder dies (the connection closes, or stays idle past the session's
// wait_timeout, which OpenSlotSession sets) another instance takes it over.
//
// A slot governs concurrency only. Correctness never depends on it: claims
// still skip locked rows and completions still match the claim token, so
// two holders of one slot (a session the server has not dropped yet) only
// cost throughput.
type SlotSession struct {
	conn  *sql.Conn
	index int // the slot held, -1 for none
	name  string
}

// slotName is the lock name of slot ? of the session's database. GET_LOCK
// names are server-wide and at most 64 characters.
const slotName = "CONCAT('rs-outbox-claim-', LEFT(SHA2(DATABASE(), 256), 24), '-', ?)"

// OpenSlotSession opens a dedicated session whose idle timeout is idle
// (whole seconds, at least one): the server drops it, and the slot it
// holds, when its holder has not used it for that long.
func (r *Repo) OpenSlotSession(ctx context.Context, idle time.Duration) (*SlotSession, error) {
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening a claim slot session on %s: %w", r.shardID, err)
	}
	secs := max(int64(1), int64((idle+time.Second-1)/time.Second))
	if _, err := conn.ExecContext(ctx, "SET SESSION wait_timeout = ?", secs); err != nil {
		discard(conn)
		return nil, fmt.Errorf("opening a claim slot session on %s: %w", r.shardID, err)
	}
	return &SlotSession{conn: conn, index: -1}, nil
}

// Take tries to take a free slot among slots, from a random one on, and
// reports whether the session holds one now. A session that holds a slot
// keeps it.
func (s *SlotSession) Take(ctx context.Context, slots int) (bool, error) {
	if s.index >= 0 {
		return true, nil
	}
	if slots < 1 {
		return false, fmt.Errorf("claim slots must be positive, got %d", slots)
	}
	first := rand.IntN(slots)
	for k := range slots {
		i := (first + k) % slots
		var got sql.NullInt64
		var name string
		if err := s.conn.QueryRowContext(ctx, "SELECT GET_LOCK("+slotName+", 0), "+slotName, i, i).Scan(&got, &name); err != nil {
			return false, fmt.Errorf("taking claim slot %d: %w", i, err)
		}
		if got.Valid && got.Int64 == 1 {
			s.index, s.name = i, name
			return true, nil
		}
	}
	return false, nil
}

// TakeWaiting is Take, except that when every slot is held it then waits,
// up to wait, in one blocking GET_LOCK for slot prefer (modulo slots) to be
// released: a standby loop costs one statement per wait instead of a poll
// per slot every second, and takes the slot it waits for the moment its
// holder releases it or its session ends (the server wakes the waiter). A
// slot freed meanwhile among the others is found by the next call. wait is
// in whole seconds, at least one: MySQL 9.7 truncates a fractional GET_LOCK
// timeout (0.4 does not wait at all) where MariaDB honours it.
//
// The wait holds the session's connection (it is the session's own, never
// a pooled one). When ctx ends during the wait the driver closes the
// connection, so the call returns at once with ctx's error and the session
// must be closed; the server ends the waiting statement by its timeout (a
// lock it takes meanwhile is released with the session).
func (s *SlotSession) TakeWaiting(ctx context.Context, slots, prefer int, wait time.Duration) (bool, error) {
	if ok, err := s.Take(ctx, slots); ok || err != nil {
		return ok, err
	}
	i := ((prefer % slots) + slots) % slots
	secs := max(int64(1), int64((wait+time.Second/2)/time.Second))
	var got sql.NullInt64
	var name string
	if err := s.conn.QueryRowContext(ctx, "SELECT GET_LOCK("+slotName+", ?), "+slotName, i, secs, i).Scan(&got, &name); err != nil {
		return false, fmt.Errorf("waiting for claim slot %d: %w", i, err)
	}
	if got.Valid && got.Int64 == 1 {
		s.index, s.name = i, name
		return true, nil
	}
	return false, nil
}

// Slot is the slot held, or -1.
func (s *SlotSession) Slot() int { return s.index }

// Check confirms that the session is alive and still holds its slot, and
// keeps it from idling out.
func (s *SlotSession) Check(ctx context.Context) error {
	if s.index < 0 {
		return nil
	}
	var held sql.NullInt64
	if err := s.conn.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?) = CONNECTION_ID()", s.name).Scan(&held); err != nil {
		return fmt.Errorf("checking claim slot %d: %w", s.index, err)
	}
	if !held.Valid || held.Int64 != 1 {
		return fmt.Errorf("claim slot %d is no longer held by this session", s.index)
	}
	return nil
}

// Close releases the slot, if any, and closes the session (never returned
// to the pool: its wait_timeout is not the pool's).
func (s *SlotSession) Close(ctx context.Context) {
	if s.index >= 0 {
		_, _ = s.conn.ExecContext(ctx, "DO RELEASE_LOCK(?)", s.name)
	}
	discard(s.conn)
}

// discard closes conn's session instead of returning it to the pool.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn }) // releases conn and closes the session
}
