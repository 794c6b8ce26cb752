package relay_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/storage/mysqldb"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// The crashing relay of TestRelayCrashesAfterClaimEveryTime is this test
// binary started again with these variables: it runs a real relay instance
// (relay.New, Run) on the shard database, publishing to the real broker, and
// the process dies (exit status crashExit) whenever a batch it claimed holds
// the poison event — after the claim committed, before any outcome is
// recorded.
const (
	envCrashDSN    = "RS_RELAY_CRASH_CHILD_DSN"
	envCrashShard  = "RS_RELAY_CRASH_CHILD_SHARD"
	envCrashTopic  = "RS_RELAY_CRASH_CHILD_TOPIC"
	envCrashPoison = "RS_RELAY_CRASH_CHILD_POISON"
	envCrashMax    = "RS_RELAY_CRASH_CHILD_MAX_ATTEMPTS"
	crashExit      = 3
)

func TestMain(m *testing.M) {
	if os.Getenv(envCrashDSN) != "" {
		os.Exit(crashingRelay())
	}
	os.Exit(m.Run())
}

// crashConfig is the relay configuration of the crash test: short leases so
// that reclaims come quickly, and one claim loop per shard, so that the
// rows a crash takes down with the poison event are exactly its batch (a
// crash also costs an attempt to whatever the process's other loops had in
// flight, which with a limit of 3 could park a bystander).
func crashConfig(maxAttempts int) relay.Config {
	cfg := testConfig()
	cfg.Lease, cfg.PublishTimeout, cfg.CompletionTimeout = time.Second, 300*time.Millisecond, 300*time.Millisecond
	cfg.MaxAttempts = maxAttempts
	cfg.ClaimSlots = 1
	return cfg
}

// diesOn is the fault at the broker boundary: publishing the poison event
// takes the whole process down, as a client library crashing on it would.
type diesOn struct {
	next   relay.Publisher
	poison string
}

func (d diesOn) Publish(ctx context.Context, msgs []relay.Message) []error {
	for _, m := range msgs {
		if m.EventID == d.poison {
			fmt.Fprintf(os.Stderr, "crashing on %s with %d claimed events\n", m.EventID, len(msgs))
			os.Exit(crashExit)
		}
	}
	return d.next.Publish(ctx, msgs)
}

// crashingRelay is the child process: a relay instance that runs until
// SIGTERM or until it crashes on the poison event.
func crashingRelay() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	maxAttempts, err := strconv.Atoi(os.Getenv(envCrashMax))
	if err != nil {
		fmt.Fprintln(os.Stderr, "max attempts:", err)
		return 2
	}
	db, err := mysqldb.OpenLazy(os.Getenv(envCrashDSN), mysqldb.Options{MaxOpen: 4})
	if err != nil {
		fmt.Fprintln(os.Stderr, "shard:", err)
		return 2
	}
	defer db.Close()
	client, err := pulsarbus.NewClient(quiet, pulsarbus.Options{URL: infratest.PulsarURL()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "pulsar:", err)
		return 2
	}
	defer client.Close()
	cfg := crashConfig(maxAttempts)
	pub, err := relay.NewPulsarPublisher(client, os.Getenv(envCrashTopic), cfg.PublishTimeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "producer:", err)
		return 2
	}
	defer pub.Close()
	repo := outbox.NewRepo(os.Getenv(envCrashShard), db)
	r, err := relay.New(quiet, cfg, diesOn{next: pub, poison: os.Getenv(envCrashPoison)}, []relay.Store{repo}, nil, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return 2
	}
	if err := r.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "run:", err)
		return 1
	}
	return 0
}

// Failure point: the relay process crashes after claiming, before
// recording the outcome — every time, because one event takes it down.
// Each expired lease counts as an attempt and an expired row is claimed
// alone, so after MaxAttempts crashes the poison event is PARKED (visible,
// counted, replayable), while the events that shared its batch are
// published and never parked. Every relay here is a separate process,
// stopped by the crash itself.
func TestRelayCrashesAfterClaimEveryTime(t *testing.T) {
	const maxAttempts, n = 3, 30
	s := newShard(t, "shard-0")
	ids := s.fill(t, 900000, n)
	poison := canonical.EventID(900010, 1)
	tp := newTopic(t)

	crashes := 0
	deadline := time.Now().Add(2 * time.Minute)
	for done := false; !done; {
		if time.Now().After(deadline) {
			t.Fatalf("after %d crashes the outbox is %v, want %d SENT and 1 PARKED", crashes, s.counts(t), n-1)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Env = append(os.Environ(), envCrashDSN+"="+s.db.DSN, envCrashShard+"="+s.repo.ShardID(),
			envCrashTopic+"="+tp.name, envCrashPoison+"="+poison, envCrashMax+"="+strconv.Itoa(maxAttempts))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() }) // no-op once it exited
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
	watch:
		for {
			select {
			case err := <-exited:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != crashExit {
					t.Fatalf("relay process ended with %v, want the crash (status %d):\n%s", err, crashExit, out.String())
				}
				crashes++
				if crashes > maxAttempts {
					t.Fatalf("the relay crashed %d times on the poison event, want it parked after %d:\n%s", crashes, maxAttempts, out.String())
				}
				break watch
			case <-time.After(100 * time.Millisecond):
				if c := s.counts(t); c[outbox.StatusSent] == n-1 && c[outbox.StatusParked] == 1 {
					_ = cmd.Process.Signal(syscall.SIGTERM)
					if err := <-exited; err != nil {
						t.Errorf("the surviving relay process stopped with %v:\n%s", err, out.String())
					}
					done = true
					break watch
				}
			}
		}
	}
	if crashes != maxAttempts {
		t.Errorf("the relay crashed %d times before the event was parked, want %d (max attempts)", crashes, maxAttempts)
	}

	// Visible: the parked row names the cause and carries its attempts.
	rows, err := s.repo.List(context.Background(), outbox.StatusParked, 0, 10)
	if err != nil || len(rows) != 1 {
		t.Fatalf("parked rows: %d, %v; want 1", len(rows), err)
	}
	if p := rows[0]; p.EventID != poison || p.Attempts != maxAttempts || p.LastError != outbox.LeaseExpiredError {
		t.Errorf("parked row %s: attempts %d, last error %q; want %s, %d, %q", p.EventID, p.Attempts, p.LastError, poison, maxAttempts, outbox.LeaseExpiredError)
	}
	// Its batch-mates spent at most the one attempt of the first crash.
	var worst int
	if err := s.db.DB.QueryRow("SELECT COALESCE(MAX(attempts), 0) FROM outbox_event WHERE status = 'SENT'").Scan(&worst); err != nil || worst > 1 {
		t.Errorf("a SENT event spent %d attempts (err %v), want at most 1", worst, err)
	}
	// Counted.
	st, err := s.repo.Stats(context.Background())
	if err != nil || st.Counts[outbox.StatusParked] != 1 {
		t.Errorf("stats count %d parked (err %v), want 1", st.Counts[outbox.StatusParked], err)
	}
	tp.col.WaitDistinct(t, n-1, 10*time.Second)
	for _, id := range ids {
		if got := len(tp.col.Payloads(id)); id != poison && got == 0 {
			t.Errorf("%s never reached the broker", id)
		}
	}
	if got := len(tp.col.Payloads(poison)); got != 0 {
		t.Errorf("the poison event reached the broker %d times before its replay", got)
	}

	// Replayable: once whatever crashed the relay is fixed, a replay
	// publishes it.
	if got, err := s.repo.ReplayParked(context.Background(), nil, 0, 10); err != nil || len(got) != 1 {
		t.Fatalf("replay: %v, %v", got, err)
	}
	runUntil(t, newRelay(t, crashConfig(maxAttempts), tp.publisher(t, time.Second), nil, s.repo))
	s.waitCounts(t, 20*time.Second, "all SENT after the replay", allSent(n))
	tp.col.WaitDistinct(t, n, 10*time.Second)
}
