// Package sim is a deterministic simulation of resultsync's delivery
// protocol: shards with their outbox, relays, the broker's subscription, the
// projection consumers, replays and a controlled rebuild that retires an
// epoch. A seeded scheduler interleaves their steps and injects faults
// (crashes, lost broker acknowledgments, failed publishes, lost consumer
// acknowledgments, redelivery, reordering, lease expiry under clock skew,
// stalled relays, rows lost by the projection, a forgotten consumer of a
// retired epoch), and the invariants are checked after every step.
//
// The model follows the real code step by step (the real statement or
// function each step stands for):
//
//   - write: pkg/write/resultstore (the business row and its outbox row commit
//     together; a version is never reused; a deletion is a versioned
//     tombstone, the last version of its record);
//   - claim: outbox.Repo.ClaimBatch, pkg/delivery/outbox/repo.go (NEW and due
//     FAILED rows; a PROCESSING row whose lease, read on the claimant's own
//     clock, expired is reclaimed at the cost of an attempt, or PARKED once
//     attempts reach the maximum; every claim gets a new token);
//   - publish: relay.PulsarPublisher.Publish, pkg/delivery/relay/pulsar.go (per
//     message: acknowledged, failed, or stored by the broker with the
//     acknowledgment lost);
//   - complete: outbox.Repo.MarkSent / MarkFailed, pkg/delivery/outbox/repo.go (only
//     the acknowledged messages are SENT, the others FAILED with a retry
//     time or PARKED, both conditioned on the claim token);
//   - replay parked: outbox.Repo.ReplayParked, pkg/delivery/outbox/repo.go (an
//     operator's audited call);
//   - receive, check, insert, ack: Consumer.receive, checkEpoch, write,
//     acknowledge in pkg/delivery/consumer/consumer.go (a batch is inserted once the
//     epoch floor check passed, then acknowledged; unacknowledged messages
//     are redelivered after a crash);
//   - projection: ReplacingMergeTree with row_version = version<<16 | epoch
//     (ClickHouse migration 0001); the current state is the row of the
//     highest row_version;
//   - replay: replay.Replayer.Replay, pkg/recovery/replay/replay.go (the
//     authoritative state at its existing version: the outbox row of that
//     event re-armed, left alone while PROCESSING, or written anew when it
//     was purged);
//   - rebuild: pkg/recovery/rebuild (a clean copy of the authoritative state at a
//     new epoch, then the floor raised: projection_epoch_floor).
//
// What the model abstracts away: SQL, bytes and batching sizes, partitions
// (one subscription whose deliveries may be reordered: the real Failover
// subscription keeps a partition's order, but two relays publish versions of
// one record in either order and redelivery after a crash comes after newer
// messages, so the consumer relies on row_version, not on order; the model
// gives the broker that freedom everywhere), the consumer's cached floor
// (Config.EpochCheck: the model reads the floor before every batch),
// the reconciliation's own comparison (the model compares the projection
// with the shards directly), and time other than the logical clock.
package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// Mutant names a deliberately broken variant of the protocol. The
// simulation must catch each within its default budget (sim_test.go).
type Mutant int

// The mutants.
const (
	None                Mutant = iota
	AckBeforeInsert            // the consumer acknowledges a batch before inserting it
	SentWithoutAck             // the relay marks every claimed row SENT, acknowledged or not
	CompleteAnyToken           // MarkSent/MarkFailed without the claim token condition
	RepairTimeVersion          // a replay writes a new event at a repair-time version
	IgnoreEpochFloor           // the consumer inserts after it saw its epoch retired
	LastWriteWins              // the projection keeps the last inserted row, not the highest version
	VersionWithoutEpoch        // row_version is the source version alone: of equal versions the last inserted wins

	lastMutant = VersionWithoutEpoch
)

var mutantNames = []string{"none", "ack-before-insert", "sent-without-ack", "complete-any-token", "repair-time-version", "ignore-epoch-floor", "last-write-wins",
	"version-without-epoch"}

func (m Mutant) String() string {
	if int(m) < len(mutantNames) {
		return mutantNames[m]
	}
	return fmt.Sprintf("mutant(%d)", int(m))
}

// Config sizes a run.
type Config struct {
	Seed     uint64
	Steps    int // scheduled steps with faults, before quiescence
	Keys     int // records
	Relays   int
	Shards   int   // outbox tables; a record lives on shard key % Shards
	Lease    int64 // lease length, in clock ticks
	MaxSkew  int64 // largest clock offset of a relay
	Attempts int   // MaxAttempts of the outbox
	Mutant   Mutant
	// TraceLen is how many recent steps a failure report shows.
	TraceLen int
}

// DefaultConfig is one seed's default budget.
func DefaultConfig(seed uint64) Config {
	return Config{Seed: seed, Steps: 20000, Keys: 12, Relays: 3, Shards: 2, Lease: 40, MaxSkew: 15, Attempts: 5, TraceLen: 40}
}

// Violation is a broken invariant: what, at which step, with the recent
// steps that led to it.
type Violation struct {
	Seed      uint64
	Mutant    Mutant
	Step      int
	Invariant string
	Detail    string
	Trace     []string
}

func (v *Violation) Error() string {
	mut := ""
	if v.Mutant != None {
		mut = " -sim.mutant=" + v.Mutant.String()
	}
	return fmt.Sprintf("seed %d, step %d: %s: %s\nlast steps:\n  %s\nreplay: go test ./test/sim -run TestReplaySeed -sim.seed=%d%s",
		v.Seed, v.Step, v.Invariant, v.Detail, strings.Join(v.Trace, "\n  "), v.Seed, mut)
}

// Outbox row states (outbox.Status*).
const (
	stNew = iota
	stProcessing
	stSent
	stFailed
	stParked
)

type version struct {
	v       int64
	deleted bool
	content int64
}

type outRow struct {
	id       int
	key      int
	ev       version
	status   int
	token    int
	due      int64 // due time (FAILED), lease end (PROCESSING)
	attempts int
}

type msg struct {
	id  int // broker message id
	key int
	ev  version
}

type claimed struct {
	row   int
	token int
	ev    version
	key   int
	acked bool // publish acknowledged
	tried bool // publish attempted
}

type relay struct {
	skew    int64
	claims  []claimed
	stalled int // steps left of a stall (GC pause, slow network)
}

type consumer struct {
	epoch    int
	alive    bool
	retired  bool // saw its epoch below the floor
	buf      []msg
	checked  bool // the floor check of buf passed
	inserted bool
}

type row struct {
	key   int
	ev    version
	epoch int
	seq   int // insertion order
}

type replayRec struct {
	key  int
	v    int64
	step int
}

// World is the simulated platform.
type World struct {
	cfg  Config
	rng  *rand.Rand
	now  int64
	step int

	src       []version           // current source state per key
	open      []int               // the records not deleted
	committed []map[int64]version // every committed version per key
	outbox    []outRow
	byEvent   map[[2]int64]int // (key, version) -> outbox row index
	active    []int            // ascending indices of the rows that may not be SENT
	nextToken int

	pending []msg       // broker: not yet delivered
	unacked map[int]msg // broker: delivered, not acknowledged
	nextMsg int
	relays  []*relay
	cons    []*consumer

	proj       []row
	best       []row   // visible row per key
	has        []bool  // key has a visible row
	visible    []int64 // highest visible version seen per key (monotonic check)
	liveV      []int64 // highest version inserted per key at an epoch >= the floor
	dirty      []int   // keys whose source or visible row changed since the last check
	lostAt     []int   // step a key's projection rows were last lost
	replays    []replayRec
	floor      int
	epoch      int // the live epoch
	rebuilt    bool
	seq        int
	lastCommit []int // step of each key's last commit

	trace []string
	// counters
	Stats Stats
}

// Stats counts what a run did.
type Stats struct {
	Steps, Writes, Claims, Published, Duplicates, Inserted, Replays, Faults int
}

// New returns a world for cfg.
func New(cfg Config) *World {
	w := &World{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), byEvent: map[[2]int64]int{},
		unacked: map[int]msg{}}
	for range cfg.Keys {
		w.addKey()
	}
	for range cfg.Relays {
		w.relays = append(w.relays, &relay{skew: w.rng.Int64N(2*cfg.MaxSkew+1) - cfg.MaxSkew})
	}
	w.cons = []*consumer{{epoch: 0, alive: true}, {epoch: 0, alive: true}}
	return w
}

func (w *World) logf(format string, args ...any) {
	if w.cfg.TraceLen == 0 {
		return
	}
	w.trace = append(w.trace, fmt.Sprintf("%d: ", w.step)+fmt.Sprintf(format, args...))
	if len(w.trace) > w.cfg.TraceLen {
		w.trace = w.trace[len(w.trace)-w.cfg.TraceLen:]
	}
}

func (w *World) violation(inv, format string, args ...any) *Violation {
	return &Violation{Seed: w.cfg.Seed, Mutant: w.cfg.Mutant, Step: w.step, Invariant: inv, Detail: fmt.Sprintf(format, args...), Trace: slices.Clone(w.trace)}
}

// ---- the source and its outbox ----

// addKey adds a new record (not yet written) to the records that take
// writes; a deleted record is replaced by a new one, so the run keeps
// cfg.Keys records open however many it deletes.
func (w *World) addKey() {
	k := len(w.src)
	w.src = append(w.src, version{})
	w.committed = append(w.committed, map[int64]version{})
	w.visible = append(w.visible, 0)
	w.liveV = append(w.liveV, 0)
	w.best, w.has = append(w.best, row{}), append(w.has, false)
	w.lostAt = append(w.lostAt, -1)
	w.lastCommit = append(w.lastCommit, 0)
	w.open = append(w.open, k)
}

// anyKey picks a record for a fault or a repair: half the time any record
// (deleted ones included: their tombstones are lost and repaired too), else
// one a relay holds a claim on (its completion may be pending), else an open
// one (where the writes race the repair).
func (w *World) anyKey() int {
	switch w.rng.IntN(4) {
	case 0, 1:
		return w.rng.IntN(len(w.src))
	case 2: // a record a relay holds a claim on (a completion may be pending)
		r := w.relays[w.rng.IntN(len(w.relays))]
		if len(r.claims) > 0 {
			return r.claims[w.rng.IntN(len(r.claims))].key
		}
	}
	return w.open[w.rng.IntN(len(w.open))]
}

// writeOpen writes the open record at index i of w.open (a deletion with
// del), replacing it with a new record once deleted.
func (w *World) writeOpen(i int, del bool) {
	w.write(w.open[i], del)
	if del {
		w.open = slices.Delete(w.open, i, i+1)
		w.addKey()
	}
}

func (w *World) write(key int, del bool) {
	cur := w.src[key]
	if cur.deleted {
		return // a deleted record takes no more changes
	}
	ev := version{v: cur.v + 1, deleted: del, content: w.rng.Int64N(1 << 40)}
	w.src[key] = ev
	w.dirty = append(w.dirty, key)
	w.committed[key][ev.v] = ev
	w.lastCommit[key] = w.step
	w.addRow(key, ev)
	w.Stats.Writes++
	w.logf("write key %d v%d deleted=%t", key, ev.v, del)
}

func (w *World) addRow(key int, ev version) {
	w.outbox = append(w.outbox, outRow{id: len(w.outbox), key: key, ev: ev, status: stNew, due: w.now})
	w.active = append(w.active, len(w.outbox)-1)
	w.byEvent[[2]int64{int64(key), ev.v}] = len(w.outbox) - 1
}

// activeRows drops the SENT rows from w.active and returns it: the rows a
// claim, a replay or quiescence must look at (the outbox's index on status).
func (w *World) activeRows() []int {
	w.active = slices.DeleteFunc(w.active, func(i int) bool { return w.outbox[i].status == stSent })
	return w.active
}

// rearm puts a SENT row back among the active rows, in id order.
func (w *World) rearm(i int) {
	at, found := slices.BinarySearch(w.activeRows(), i)
	if !found {
		w.active = slices.Insert(w.active, at, i)
	}
}

// ---- relays ----

// claim is one relay's claim on one shard's outbox (a record lives on shard
// key % Shards; the relay claims from each of its stores in turn).
func (w *World) claim(r *relay, idx int) {
	now := w.now + r.skew
	shard := w.rng.IntN(max(w.cfg.Shards, 1))
	n := 0
	for _, i := range w.activeRows() {
		if n == 8 {
			break
		}
		o := &w.outbox[i]
		if o.key%max(w.cfg.Shards, 1) != shard {
			continue
		}
		switch {
		case o.status == stProcessing && o.due < now:
			// an expired lease costs an attempt
			if o.attempts+1 >= w.cfg.Attempts {
				o.status, o.token = stParked, 0
				o.attempts++
				w.logf("relay %d parks row %d (lease expired, attempts %d)", idx, o.id, o.attempts)
				continue
			}
		case o.status == stNew || o.status == stFailed && o.due <= now:
		default:
			continue
		}
		w.nextToken++
		o.status, o.token, o.due = stProcessing, w.nextToken, now+w.cfg.Lease
		o.attempts++
		r.claims = append(r.claims, claimed{row: i, token: o.token, ev: o.ev, key: o.key})
		n++
	}
	if n > 0 {
		w.Stats.Claims++
		w.logf("relay %d claims %d rows", idx, n)
	}
}

func (w *World) publish(r *relay, idx int, fault bool) {
	for i := range r.claims {
		c := &r.claims[i]
		if c.tried {
			continue
		}
		c.tried = true
		outcome := 0 // 0 acked, 1 failed (not stored), 2 stored with the ack lost
		if fault {
			outcome = 1 + w.rng.IntN(2)
		}
		if outcome != 1 {
			w.nextMsg++
			w.pending = append(w.pending, msg{id: w.nextMsg, key: c.key, ev: c.ev})
			w.Stats.Published++
		}
		c.acked = outcome == 0
	}
	w.logf("relay %d publishes (fault=%t)", idx, fault)
}

// complete records the claim's outcome; with lostReply the database applied
// it but the relay never saw the reply (a lost SENT update acknowledgment):
// it keeps its claims and completes them again later.
func (w *World) complete(r *relay, idx int, lostReply bool) {
	now := w.now + r.skew
	for _, c := range r.claims {
		if !c.tried {
			continue
		}
		o := &w.outbox[c.row]
		if o.token != c.token && w.cfg.Mutant != CompleteAnyToken {
			continue // reclaimed, re-armed or parked since: not this claimant's
		}
		if o.status != stProcessing && w.cfg.Mutant != CompleteAnyToken {
			continue
		}
		if c.acked || w.cfg.Mutant == SentWithoutAck {
			o.status, o.token = stSent, 0
			continue
		}
		if o.status == stSent {
			w.rearm(c.row) // only with CompleteAnyToken
		}
		o.attempts++
		o.token = 0
		if o.attempts >= w.cfg.Attempts {
			o.status = stParked
		} else {
			o.status, o.due = stFailed, now+int64(1+w.rng.IntN(4))
		}
	}
	if lostReply {
		w.logf("relay %d completes; the reply is lost, it will complete again", idx)
		return
	}
	r.claims = r.claims[:0]
	w.logf("relay %d completes", idx)
}

// ---- broker and consumers ----

func (w *World) receive(c *consumer, ci int, reorder bool) {
	if len(w.pending) == 0 || len(c.buf) >= 6 || c.checked {
		return
	}
	i := 0
	if reorder {
		i = w.rng.IntN(len(w.pending))
	}
	m := w.pending[i]
	w.pending = slices.Delete(w.pending, i, i+1)
	w.unacked[m.id] = m
	c.buf = append(c.buf, m)
	w.logf("consumer %d receives key %d v%d (msg %d)", ci, m.key, m.ev.v, m.id)
	if w.cfg.Mutant == AckBeforeInsert {
		delete(w.unacked, m.id)
	}
}

// check is the epoch floor check before an insert (consumer.checkEpoch).
func (w *World) check(c *consumer, ci int) {
	if len(c.buf) == 0 || c.checked {
		return
	}
	if c.epoch < w.floor {
		c.retired = true
		w.logf("consumer %d sees its epoch %d retired (floor %d)", ci, c.epoch, w.floor)
		if w.cfg.Mutant != IgnoreEpochFloor {
			w.crashConsumer(c, ci) // ErrEpochRetired ends Run: nothing inserted or acknowledged
			return
		}
	}
	c.checked = true
}

func (w *World) insert(c *consumer, ci int) *Violation {
	if !c.checked || c.inserted {
		return nil
	}
	if c.retired && w.cfg.Mutant != IgnoreEpochFloor {
		return nil
	}
	for _, m := range c.buf {
		w.put(row{key: m.key, ev: m.ev, epoch: c.epoch})
		w.Stats.Inserted++
		if c.retired {
			return w.violation("a retired epoch never writes", "consumer %d at retired epoch %d (floor %d) inserted key %d v%d after seeing the floor",
				ci, c.epoch, w.floor, m.key, m.ev.v)
		}
	}
	c.inserted = true
	w.logf("consumer %d inserts %d rows at epoch %d", ci, len(c.buf), c.epoch)
	return nil
}

func (w *World) ack(c *consumer, ci int, lost bool) {
	if !c.inserted {
		return
	}
	if !lost {
		for _, m := range c.buf {
			delete(w.unacked, m.id)
		}
	}
	w.logf("consumer %d acknowledges %d (lost=%t)", ci, len(c.buf), lost)
	c.buf, c.checked, c.inserted = c.buf[:0], false, false
}

// crashConsumer loses the consumer's batch; the broker redelivers what was
// not acknowledged (consumer crash, or reconnect after lost acknowledgments).
func (w *World) crashConsumer(c *consumer, ci int) {
	c.buf, c.checked, c.inserted = c.buf[:0], false, false
	w.redeliver()
	if c.retired {
		c.alive = false
	}
	w.logf("consumer %d crashes", ci)
}

// redeliver hands every unacknowledged message not held by a live consumer
// back to the subscription.
func (w *World) redeliver() {
	held := map[int]bool{}
	for _, c := range w.cons {
		for _, m := range c.buf {
			held[m.id] = true
		}
	}
	ids := make([]int, 0, len(w.unacked))
	for id := range w.unacked {
		if !held[id] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		w.pending = append(w.pending, w.unacked[id])
		delete(w.unacked, id)
		w.Stats.Duplicates++
	}
}

// ---- projection ----

// current returns the visible row of key: the highest row_version (the
// last inserted with LastWriteWins), kept up to date by put and loseKey.
func (w *World) current(key int) (row, bool) { return w.best[key], w.has[key] }

// ranks says whether r outranks the visible row b.
func (w *World) ranks(r, b row) bool {
	switch w.cfg.Mutant {
	case LastWriteWins:
		return r.seq > b.seq
	case VersionWithoutEpoch:
		return r.ev.v > b.ev.v || r.ev.v == b.ev.v && r.seq > b.seq
	}
	return r.ev.v<<16|int64(r.epoch) > b.ev.v<<16|int64(b.epoch)
}

// put inserts a projection row.
func (w *World) put(r row) {
	w.seq++
	r.seq = w.seq
	w.proj = append(w.proj, r)
	if r.epoch >= w.floor && r.ev.v > w.liveV[r.key] {
		w.liveV[r.key] = r.ev.v
	}
	if !w.has[r.key] || w.ranks(r, w.best[r.key]) {
		w.best[r.key], w.has[r.key] = r, true
		w.dirty = append(w.dirty, r.key)
	}
}

// ---- repair ----

// replay is replay.Replayer.Replay of key: the authoritative state at its
// existing version, through the outbox.
func (w *World) replay(key int) {
	cur := w.src[key]
	if cur.v == 0 {
		return
	}
	w.Stats.Replays++
	w.replays = append(w.replays, replayRec{key: key, v: cur.v, step: w.step})
	if w.cfg.Mutant == RepairTimeVersion {
		ev := cur
		ev.v = cur.v + 1000 + int64(w.step)
		w.addRow(key, ev)
		w.logf("replay key %d at repair-time version v%d", key, ev.v)
		return
	}
	i, ok := w.byEvent[[2]int64{int64(key), cur.v}]
	switch {
	case !ok:
		w.addRow(key, cur)
	case w.outbox[i].status == stProcessing:
		// being delivered: its token is its claimant's
	default:
		o := &w.outbox[i]
		if o.status == stSent {
			w.rearm(i)
		}
		o.status, o.attempts, o.token, o.due = stNew, 0, 0, w.now
	}
	w.logf("replay key %d v%d", key, cur.v)
}

// needsRepair: the projection differs from the source and nothing of the
// key is in flight (what a reconciliation run then reports).
func (w *World) needsRepair(key int) bool {
	cur := w.src[key]
	r, ok := w.current(key)
	if ok && r.ev == cur {
		return false
	}
	if cur.v == 0 {
		return false
	}
	for _, i := range w.activeRows() {
		if o := w.outbox[i]; o.key == key && (o.status == stNew || o.status == stProcessing || o.status == stFailed) {
			return false
		}
	}
	for _, m := range w.pending {
		if m.key == key {
			return false
		}
	}
	for _, m := range w.unacked {
		if m.key == key {
			return false
		}
	}
	return true
}

// rebuild builds the scope anew at epoch+1 from the source, moves the live
// consumers to the new epoch and raises the floor; one consumer of the old
// epoch may be forgotten (a fault: its floor check must stop it).
func (w *World) rebuild(forget bool) {
	e := w.epoch + 1
	for k := range w.src {
		if w.src[k].v > 0 {
			w.put(row{key: k, ev: w.src[k], epoch: e})
		}
	}
	old := w.cons
	w.cons = nil
	for i, c := range old {
		if forget && i == 0 && c.alive {
			w.cons = append(w.cons, c) // keeps running at the retired epoch
			continue
		}
		c.buf, c.checked, c.inserted = nil, false, false
	}
	w.redeliver()
	w.cons = append(w.cons, &consumer{epoch: e, alive: true}, &consumer{epoch: e, alive: true})
	w.epoch, w.floor, w.rebuilt = e, e, true
	for k := range w.liveV { // only the rows of the new epoch are live now
		w.liveV[k] = 0
		w.dirty = append(w.dirty, k)
	}
	for _, r := range w.proj {
		if r.epoch >= w.floor && r.ev.v > w.liveV[r.key] {
			w.liveV[r.key] = r.ev.v
		}
	}
	w.logf("rebuild at epoch %d; floor %d; forgotten old consumer=%t", e, e, forget)
}

// describe is the visible row of key, for a report.
func (w *World) describe(key int) string {
	r, ok := w.current(key)
	if !ok {
		return "nothing"
	}
	return fmt.Sprintf("v%d deleted=%t content %d at epoch %d", r.ev.v, r.ev.deleted, r.ev.content, r.epoch)
}

// loseKey drops every projection row of key (ClickHouse lost a part).
func (w *World) loseKey(key int) {
	w.proj = slices.DeleteFunc(w.proj, func(r row) bool { return r.key == key })
	w.has[key] = false
	w.lostAt[key], w.visible[key], w.liveV[key] = w.step, 0, 0
	w.dirty = append(w.dirty, key)
	w.logf("the projection loses key %d", key)
}

// ---- invariants ----

// checkSafety checks the keys changed since the last check (the others
// cannot have broken an invariant since).
func (w *World) checkSafety() *Violation {
	dirty := w.dirty
	w.dirty = w.dirty[:0]
	for _, k := range dirty {
		r, ok := w.current(k)
		if !ok {
			continue
		}
		if want, committed := w.committed[k][r.ev.v]; !committed || want != r.ev {
			return w.violation("no invented versions", "key %d shows v%d deleted=%t content %d at epoch %d; the source committed %+v at that version (committed=%t)",
				k, r.ev.v, r.ev.deleted, r.ev.content, r.epoch, want, committed)
		}
		if r.ev.v > w.src[k].v {
			return w.violation("the projection is never ahead of the source", "key %d shows v%d, the source is at v%d", k, r.ev.v, w.src[k].v)
		}
		if r.epoch < w.floor && w.liveV[k] >= r.ev.v {
			return w.violation("a retired epoch never wins", "key %d shows v%d at retired epoch %d over v%d at a live epoch (floor %d)",
				k, r.ev.v, r.epoch, w.liveV[k], w.floor)
		}
		if r.ev.v < w.visible[k] {
			return w.violation("a visible version never goes back", "key %d showed v%d, now v%d (an older row outranked a newer version)", k, w.visible[k], r.ev.v)
		}
		w.visible[k] = r.ev.v
	}
	return nil
}

func (w *World) checkLiveness() *Violation {
	for _, rp := range w.replays {
		if w.lostAt[rp.key] > rp.step {
			continue // lost again after the replay: a new repair's job
		}
		if r, ok := w.current(rp.key); !ok || r.ev.v < rp.v {
			return w.violation("every replay becomes visible", "the replay of key %d v%d at step %d never became visible (the projection shows %s)", rp.key, rp.v, rp.step, w.describe(rp.key))
		}
	}
	for k := range w.src {
		if w.src[k].v == 0 || w.lostAt[k] > w.lastCommit[k] {
			continue
		}
		if r, ok := w.current(k); !ok || r.ev.v < w.src[k].v {
			return w.violation("every committed version becomes visible", "key %d: source v%d, the projection shows %s", k, w.src[k].v, w.describe(k))
		}
	}
	return nil
}

func (w *World) checkConverged() *Violation {
	for k := range w.src {
		if w.src[k].v == 0 {
			continue
		}
		r, ok := w.current(k)
		if !ok || r.ev != w.src[k] || r.epoch < w.floor {
			return w.violation("the projection equals the source", "key %d: source %+v, the projection shows %s (floor %d)", k, w.src[k], w.describe(k), w.floor)
		}
	}
	return nil
}
