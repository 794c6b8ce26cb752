package relay_test

import (
	"context"

	"errors"
	"github.com/apache/pulsar-client-go/pulsar"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/outboxtest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// shard is a fresh shard database with its outbox repo.
type shard struct {
	db   *infratest.MySQLDatabase
	repo *outbox.Repo
}

func newShard(t *testing.T, id string) shard {
	t.Helper()
	db := infratest.NewMySQLDatabase(t, schema.Shard)
	return shard{db: db, repo: outbox.NewRepo(id, db.DB)}
}

func (s shard) fill(t *testing.T, first int64, n int) []string {
	t.Helper()
	ids, err := outboxtest.Fill(context.Background(), s.db.DB, s.repo.ShardID(), first, n)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func (s shard) counts(t *testing.T) map[string]int {
	t.Helper()
	c, err := outboxtest.StatusCounts(context.Background(), s.db.DB)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitCounts polls until cond holds for the status counts, or fails.
func (s shard) waitCounts(t *testing.T, timeout time.Duration, what string, cond func(map[string]int) bool) map[string]int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c := s.counts(t)
		if cond(c) {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox of %s never reached %s: %v", s.repo.ShardID(), what, c)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func allSent(n int) func(map[string]int) bool {
	return func(c map[string]int) bool { return c[outbox.StatusSent] == n }
}

// pulsarPublisher returns a real publisher on a fresh topic and a collector
// of that topic.
func pulsarPublisher(t *testing.T, timeout time.Duration) (*relay.PulsarPublisher, *infratest.Collector) {
	t.Helper()
	tp := newTopic(t)
	return tp.publisher(t, timeout), tp.col
}

// topic is a fresh topic on the real broker with a collector subscribed.
type topic struct {
	client pulsar.Client
	name   string
	col    *infratest.Collector
}

func newTopic(t *testing.T) topic {
	t.Helper()
	client := infratest.NewPulsarClient(t)
	name := infratest.Topic(t, "relay")
	return topic{client: client, name: name, col: infratest.Collect(t, client, name)}
}

// publisher returns a new producer (as a separate relay instance has) on the topic.
func (tp topic) publisher(t *testing.T, timeout time.Duration) *relay.PulsarPublisher {
	t.Helper()
	pub, err := relay.NewPulsarPublisher(tp.client, tp.name, timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	return pub
}

// faultPublisher sits in front of the real publisher.
type faultPublisher struct {
	next relay.Publisher
	// down: the broker is unreachable; nothing is sent.
	down atomic.Bool
	// lostAcks > 0: the next batches are really published but their
	// acknowledgments are lost on the way back.
	lostAcks atomic.Int32
}

var errBrokerDown = errors.New("broker unreachable (injected)")

func (f *faultPublisher) Publish(ctx context.Context, msgs []relay.Message) []error {
	errs := make([]error, len(msgs))
	if f.down.Load() {
		for i := range errs {
			errs[i] = errBrokerDown
		}
		return errs
	}
	errs = f.next.Publish(ctx, msgs)
	if f.lostAcks.Add(-1) >= 0 {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = relay.ErrNoAck
			}
		}
	}
	return errs
}

// deadDB returns a pool to a MySQL address where nothing listens: every
// statement fails as with a database that is down.
func deadDB(t *testing.T) *outbox.Repo {
	t.Helper()
	db, err := mysqldb.OpenLazy("x:y@tcp(127.0.0.1:1)/none?timeout=500ms", mysqldb.Options{MaxOpen: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return outbox.NewRepo("dead", db)
}

// claimLog records claims and completions to check that no row is ever held
// by two live leases at once.
type claimLog struct {
	mu       sync.Mutex
	claims   map[string][]claimSpan // shard/id -> spans
	inFlight map[string]int         // shard -> claims not completed yet
	maxInFl  map[string]int         // shard -> most claims in flight at once
}

type claimSpan struct {
	token        string
	start, lease time.Time
	end          time.Time // completion time; zero until completed
}

func newClaimLog() *claimLog {
	return &claimLog{claims: map[string][]claimSpan{}, inFlight: map[string]int{}, maxInFl: map[string]int{}}
}

// maxInFlight is the most claims of shard that were in flight at once.
func (l *claimLog) maxInFlight(shard string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.maxInFl[shard]
}

func key(shard string, id int64) string { return shard + "/" + strconv.FormatInt(id, 10) }

func (l *claimLog) Claimed(shard string, c outbox.Claim) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.inFlight[shard]++
	l.maxInFl[shard] = max(l.maxInFl[shard], l.inFlight[shard])
	for _, r := range c.Rows {
		k := key(shard, r.ID)
		l.claims[k] = append(l.claims[k], claimSpan{token: c.Token, start: now, lease: c.Lease})
	}
}

func (l *claimLog) Completed(shard string, c outbox.Claim, _, _, _ int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.inFlight[shard]--
	for _, r := range c.Rows {
		spans := l.claims[key(shard, r.ID)]
		for i := range spans {
			if spans[i].token == c.Token {
				spans[i].end = now
			}
		}
	}
}

// overlaps returns rows claimed by a second claimant while an earlier claim
// was still live (not completed and lease not expired).
func (l *claimLog) overlaps() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var bad []string
	for k, spans := range l.claims {
		for i := 1; i < len(spans); i++ {
			prev := spans[i-1]
			liveUntil := prev.lease
			if !prev.end.IsZero() && prev.end.Before(liveUntil) {
				liveUntil = prev.end
			}
			if spans[i].start.Before(liveUntil) {
				bad = append(bad, k)
			}
		}
	}
	return bad
}

func (l *claimLog) rows() (rows, claims int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.claims {
		rows++
		claims += len(s)
	}
	return rows, claims
}
