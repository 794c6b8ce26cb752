// Command idle measures what the platform costs while nothing happens, and
// what the relay's idle backoff costs the events that end a quiet spell, on
// the local MySQL (or MariaDB, RS_MYSQL_ENGINE), Pulsar and ClickHouse:
//
//   - first events: one relay (relay.DefaultConfig: --poll-interval 20ms,
//     --max-idle-interval as -max-idle) over two fresh shards; after each
//     quiet spell of -quiet (its loops backed off to the longest wait), one
//     event is committed alone, -isolated times: commit-to-SENT of each
//     (p50 and max). The longest idle wait bounds this figure; it is the
//     price of claiming an idle shard less often;
//
//   - steady: -rate (1,000) events/s over the two shards for -steady with
//     the same relay: commit-to-SENT p50/p99 (target p99 <= 25 ms: under
//     traffic the loops find rows and never back off). Each of these two
//     phases starts once the engines are quiet (-quiet-limit): right after
//     bench/e2e, ClickHouse merges and MySQL purges for a while;
//
//   - idle platform: the six servers built from services/ (as `make build`
//     builds them) on a fresh stack (two shards, a control database, a
//     projection, a topic), each its own process, SERVING; after -settle,
//     -window (30 s) without traffic, measured in windows A with the
//     servers running and as many windows B with them stopped (SIGSTOP:
//     connections open, nothing asked), in the order A B B A (-rounds): the
//     CPU of each server and of the engines (utime+stime from
//     /proc/<pid>/stat), in percent of one core. The platform's figure
//     (judged: < 2% of a core) is the servers' CPU plus what each engine
//     used in the A windows above its own idle in the B windows of the same
//     run: the engines are shared with whatever else runs on the machine,
//     and alternating cancels the part of that load that moves slowly (a
//     loaded machine still makes the figure noisy: run it on a quiet one).
//
// It prints a table and SUMMARY lines (bench/run.sh collects them).
//
//	go run ./bench/idle -window 30s
package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/resultsync/resultsync/bench/internal/benchkit"
	"github.com/resultsync/resultsync/pkg/delivery/outbox"
	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/delivery/relay"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/outboxtest"
)

type options struct {
	maxIdle  time.Duration
	poll     time.Duration
	slots    int
	quietMax time.Duration
	quiet    time.Duration
	isolated int
	rate     int
	steady   time.Duration
	settle   time.Duration
	window   time.Duration
	rounds   int
	phases   string
}

func main() {
	var o options
	flag.DurationVar(&o.maxIdle, "max-idle", relay.DefaultMaxIdleInterval, "the relay's --max-idle-interval in the first-event and steady phases")
	flag.DurationVar(&o.poll, "poll-interval", relay.DefaultConfig().PollInterval, "the relay's --poll-interval in the first-event and steady phases")
	flag.IntVar(&o.slots, "claim-slots", relay.DefaultClaimSlots, "the relay's --claim-slots in the first-event and steady phases")
	flag.DurationVar(&o.quietMax, "quiet-limit", 30*time.Second, "before the first-event and steady phases, wait at most this long for the engines to go quiet (0: do not wait)")
	flag.DurationVar(&o.quiet, "quiet", 3*time.Second, "quiet spell before each isolated event")
	flag.IntVar(&o.isolated, "isolated", 10, "isolated events (first-event phase)")
	flag.IntVar(&o.rate, "rate", 1000, "steady rate, events/s")
	flag.DurationVar(&o.steady, "steady", 10*time.Second, "steady phase duration")
	flag.DurationVar(&o.settle, "settle", 15*time.Second, "wait after the servers are SERVING before the idle window")
	flag.DurationVar(&o.window, "window", 30*time.Second, "idle time measured with the servers running (the same again with them stopped)")
	flag.IntVar(&o.rounds, "rounds", 3, "A B B A rounds of the idle windows (A: servers running, B: stopped)")
	flag.StringVar(&o.phases, "phases", "first,steady,platform", "phases to run")
	flag.Parse()
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "idle:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	phases := strings.Split(o.phases, ",")
	if slices.Contains(phases, "first") || slices.Contains(phases, "steady") {
		first, steady, err := relayPhases(ctx, o, slices.Contains(phases, "first"), slices.Contains(phases, "steady"))
		if err != nil {
			return err
		}
		if len(first) > 0 {
			fmt.Printf("first event after %s quiet, %d isolated events, --max-idle-interval %s: commit->SENT p50 %s, max %s\n",
				o.quiet, len(first), o.maxIdle, pct(first, 0.5).Round(time.Millisecond), slices.Max(first).Round(time.Millisecond))
			benchkit.Summary("idle", "first event after a quiet spell, commit->SENT max", slices.Max(first).Round(time.Millisecond).String(),
				"--max-idle-interval "+o.maxIdle.String(), "-", "<= max idle + 100ms", benchkit.Verdict(slices.Max(first) <= o.maxIdle+100*time.Millisecond))
		}
		if len(steady) > 0 {
			p99 := pct(steady, 0.99)
			fmt.Printf("steady %d events/s for %s (%d events), --max-idle-interval %s: commit->SENT p50 %s, p99 %s\n",
				o.rate, o.steady, len(steady), o.maxIdle, pct(steady, 0.5).Round(time.Millisecond), p99.Round(time.Millisecond))
			benchkit.Summary("idle", fmt.Sprintf("steady %d events/s, commit->SENT p99", o.rate), p99.Round(time.Millisecond).String(), "-", "-", "<= 25ms",
				benchkit.Verdict(p99 <= 25*time.Millisecond))
		}
	}
	if slices.Contains(phases, "platform") {
		return platformPhase(ctx, o)
	}
	return nil
}

// ---- the relay's first events and steady stream ----

func relayPhases(ctx context.Context, o options, first, steady bool) (firsts, steadies []time.Duration, err error) {
	st, err := benchkit.NewStack(ctx, "bench-idle-", 8)
	if err != nil {
		return nil, nil, err
	}
	defer st.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	client, err := pulsarbus.NewClient(log, pulsarbus.Options{URL: infratest.PulsarURL()})
	if err != nil {
		return nil, nil, err
	}
	defer client.Close()
	pub, err := relay.NewPulsarPublisher(client, st.Topic, 10*time.Second)
	if err != nil {
		return nil, nil, err
	}
	defer pub.Close()
	cfg := relay.DefaultConfig()
	cfg.MaxIdleInterval, cfg.PollInterval, cfg.ClaimSlots = o.maxIdle, o.poll, o.slots
	var stores []relay.Store
	for i, sh := range st.Map.Shards {
		stores = append(stores, outbox.NewRepo(sh.ID, st.DBs[i]))
	}
	r, err := relay.New(log, cfg, pub, stores, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = r.Run(rctx) }()
	defer func() { cancel(); wg.Wait() }()

	id := int64(60_000_000)
	commit := func(i int) error {
		now := time.Now().UTC()
		ev := outboxtest.Event(st.Map.Shards[i%2].ID, id, now)
		id++
		return outbox.Write(ctx, st.DBs[i%2], ev, now.Truncate(time.Millisecond))
	}
	// The engines finish what came before (the last benchmark's merges and
	// purges, the stack's set-up) before a phase measures the relay.
	engines := benchkit.StackMeter("engine", "pulsar", "clickhouse")
	if first {
		fmt.Printf("first-event phase: the engines went quiet after %s\n", engines.Settle(ctx, o.quietMax).Round(100*time.Millisecond))
		for i := range o.isolated {
			// A random share of a further second, so events do not fall in
			// step with the loops' waits.
			time.Sleep(o.quiet + rand.N(time.Second))
			if err := commit(i); err != nil {
				return nil, nil, err
			}
			if err := waitSent(ctx, st.DBs, i+1, 30*time.Second); err != nil {
				return nil, nil, err
			}
		}
		if firsts, err = commitToSent(ctx, st.DBs); err != nil {
			return nil, nil, err
		}
	}
	if steady {
		for _, db := range st.DBs {
			if _, err := db.ExecContext(ctx, "TRUNCATE TABLE outbox_event"); err != nil {
				return nil, nil, err
			}
		}
		fmt.Printf("steady phase: the engines went quiet after %s\n", engines.Settle(ctx, o.quietMax).Round(100*time.Millisecond))
		n, err := produce(ctx, st, o.rate, o.steady)
		if err != nil {
			return nil, nil, err
		}
		if err := waitSent(ctx, st.DBs, n, time.Minute); err != nil {
			return nil, nil, err
		}
		if steadies, err = commitToSent(ctx, st.DBs); err != nil {
			return nil, nil, err
		}
	}
	return firsts, steadies, nil
}

// producers is how many connections commit the steady stream: one
// transaction per event takes a few milliseconds on a loaded machine, so one
// connection could not keep 1,000 events/s.
const producers = 16

// produce commits rate events/s for d, alternating shards, one transaction
// per event (as the write path), from producers connections each on its own
// schedule; it returns how many it committed and fails when it fell more
// than 5% behind the rate.
func produce(ctx context.Context, st *benchkit.Stack, rate int, d time.Duration) (int, error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	total := 0
	start := time.Now()
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			interval := time.Second * producers / time.Duration(rate)
			next := start.Add(time.Duration(p) * interval / producers)
			n := 0
			for ; time.Since(start) < d; n++ {
				time.Sleep(time.Until(next))
				i := p + n*producers
				now := time.Now().UTC()
				ev := outboxtest.Event(st.Map.Shards[i%2].ID, int64(70_000_000+i), now)
				if err := outbox.Write(ctx, st.DBs[i%2], ev, now.Truncate(time.Millisecond)); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				next = next.Add(interval)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return total, fmt.Errorf("committing the steady stream: %w", err)
	}
	if want := float64(rate) * d.Seconds(); float64(total) < 0.95*want {
		return total, fmt.Errorf("committed %d events in %s, %.0f%% of %d/s: the machine cannot produce the rate", total, d, 100*float64(total)/want, rate)
	}
	return total, nil
}

// waitSent waits until want outbox rows of dbs are SENT.
func waitSent(ctx context.Context, dbs []*sql.DB, want int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		n := 0
		for _, db := range dbs {
			var k int
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM outbox_event WHERE status = 'SENT'").Scan(&k); err != nil {
				return fmt.Errorf("counting SENT rows: %w", err)
			}
			n += k
		}
		if n >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d events SENT after %s", n, want, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// commitToSent is every row's time from its commit to its SENT update, by
// the database's clock.
func commitToSent(ctx context.Context, dbs []*sql.DB) ([]time.Duration, error) {
	var out []time.Duration
	for _, db := range dbs {
		rows, err := db.QueryContext(ctx, "SELECT TIMESTAMPDIFF(MICROSECOND, create_time, sent_time) FROM outbox_event WHERE status = 'SENT'")
		if err != nil {
			return nil, fmt.Errorf("reading commit->SENT: %w", err)
		}
		for rows.Next() {
			var us int64
			if err := rows.Scan(&us); err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, time.Duration(us)*time.Microsecond)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// ---- the idle platform ----

var servers = []string{"results", "relay", "consumer", "reconcile", "repair", "gateway"}

// proc is one server process.
type proc struct {
	name, grpc string
	cmd        *exec.Cmd
}

func platformPhase(ctx context.Context, o options) error {
	bin, err := os.MkdirTemp("", "rs-bench-idle-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(bin) }()
	//nolint:gosec // the bench's own fixed package list
	build := exec.CommandContext(ctx, "go", append([]string{"build", "-o", bin + "/"}, pkgs()...)...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the servers: %w", err)
	}
	st, err := benchkit.NewStack(ctx, "bench-idle-", 8)
	if err != nil {
		return err
	}
	defer st.Close()

	engines := enginePIDs()

	var shards []string
	for _, sh := range st.Map.Shards {
		shards = append(shards, sh.ID+"="+sh.DSN)
	}
	common := []string{"--profile=local", "--http-addr=", "--shutdown-grace=3s", "--log-level=warn", "--auth-tokens=" + auth.DevTokens}
	stores := []string{"--shards=" + strings.Join(shards, ","), "--control-dsn=" + st.Control.DSN,
		"--clickhouse-addr=" + infratest.ClickHouseAddr(), "--clickhouse-database=" + st.CH.Name}
	pulsar := []string{"--pulsar-url=" + infratest.PulsarURL(), "--topic=" + st.Topic}
	addr := map[string]string{}
	for _, s := range servers {
		if addr[s], err = freeAddr(ctx); err != nil {
			return err
		}
	}
	api, err := freeAddr(ctx)
	if err != nil {
		return err
	}
	args := map[string][]string{
		"results":   {"--shards=" + strings.Join(shards, ",")},
		"relay":     append([]string{"--shards=" + strings.Join(shards, ","), "--control-dsn=" + st.Control.DSN}, pulsar...),
		"consumer":  append([]string{"--clickhouse-addr=" + infratest.ClickHouseAddr(), "--clickhouse-database=" + st.CH.Name, "--dead-letter-topic=" + st.Topic + "-DLQ"}, pulsar...),
		"reconcile": stores,
		"repair":    append(slices.Clone(stores), pulsar...),
		"gateway": {"--api-addr=" + api, "--results-addr=" + addr["results"], "--relay-addr=" + addr["relay"], "--consumer-addr=" + addr["consumer"],
			"--reconcile-addr=" + addr["reconcile"], "--repair-addr=" + addr["repair"]},
	}
	var procs []*proc
	defer func() {
		for _, p := range procs {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
		for _, p := range procs {
			_ = p.cmd.Wait()
		}
	}()
	for _, s := range servers {
		//nolint:gosec // a server binary just built, with the bench's own flags
		cmd := exec.CommandContext(ctx, filepath.Join(bin, s), append(append(slices.Clone(common), "--grpc-addr="+addr[s]), args[s]...)...)
		cmd.Stdout, cmd.Stderr = prefixed(s), prefixed(s)
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting %s: %w", s, err)
		}
		procs = append(procs, &proc{name: s, grpc: addr[s], cmd: cmd})
	}
	for _, p := range procs {
		if err := benchkit.WaitServing(ctx, p.grpc, "", time.Minute); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	time.Sleep(o.settle)
	pids := map[string]int{}
	for _, p := range procs {
		pids[p.name] = p.cmd.Process.Pid
	}
	for k, v := range engines {
		pids[k] = v
	}
	// The engines' own idle, measured in the same run: in windows A the
	// servers run, in windows B they are stopped (SIGSTOP: their
	// connections stay open, nothing is asked), in the order A B B A, so
	// the load other work puts on the shared engines falls on both alike
	// and a linear drift cancels within a round.
	signal := func(sig syscall.Signal) {
		for _, p := range procs {
			_ = p.cmd.Process.Signal(sig)
		}
	}
	defer signal(syscall.SIGCONT) // a stopped server handles SIGTERM only once continued
	rounds := max(1, o.rounds)
	win := o.window / time.Duration(2*rounds)
	running, stopped := map[string]uint64{}, map[string]uint64{}
	lost := map[string]bool{}
	var runSecs, stopSecs float64
	for range rounds {
		for _, on := range []bool{true, false, false, true} {
			if on {
				signal(syscall.SIGCONT)
			} else {
				signal(syscall.SIGSTOP)
			}
			a := sample(pids)
			time.Sleep(win)
			b := sample(pids)
			into, secs := stopped, &stopSecs
			if on {
				into, secs = running, &runSecs
			}
			for name := range pids {
				x, okA := a.jiffies[name]
				y, okB := b.jiffies[name]
				if !okA || !okB || y < x {
					lost[name] = true // gone or replaced: its figures mean nothing
					continue
				}
				into[name] += y - x
			}
			*secs += b.at.Sub(a.at).Seconds()
		}
	}
	signal(syscall.SIGCONT)
	pctOf := func(j uint64, s float64) float64 { return 100 * float64(j) / clockTicks / s }

	fmt.Printf("\nidle platform: six servers and the engines without traffic after %s SERVING (%s, %d cores), %% of one core; "+
		"%s with the servers running, %s with them stopped (SIGSTOP), in windows of %s in the order A B B A x %d\n",
		o.settle, infratest.MySQLEngine(), runtime.NumCPU(), time.Duration(runSecs*float64(time.Second)).Round(time.Second),
		time.Duration(stopSecs*float64(time.Second)).Round(time.Second), win, rounds)
	fmt.Printf("%-12s %14s %22s\n", "process", "servers running", "servers stopped")
	var serversTotal float64
	engRun, engStop := map[string]float64{}, map[string]float64{}
	var problems []string
	for _, name := range append(slices.Clone(servers), engineNames...) {
		if _, ok := pids[name]; !ok {
			continue
		}
		if lost[name] {
			problems = append(problems, name+" exited or was replaced during the windows")
			fmt.Printf("%-12s %14s\n", name, "(gone)")
			continue
		}
		v := pctOf(running[name], runSecs)
		other := ""
		if slices.Contains(engineNames, name) {
			engRun[name], engStop[name] = v, pctOf(stopped[name], stopSecs)
			other = fmt.Sprintf("%.2f%%", engStop[name])
		} else {
			serversTotal += v
		}
		fmt.Printf("%-12s %13.2f%% %22s\n", name, v, other)
	}
	caused := benchkit.EngineExcess(engRun, engStop)
	var enginesTotal, enginesAlone float64
	for name := range engRun {
		enginesTotal, enginesAlone = enginesTotal+engRun[name], enginesAlone+engStop[name]
	}
	platform := serversTotal + caused
	fmt.Printf("%-12s %13.2f%%\n%-12s %13.2f%% %22s\n", "servers", serversTotal, "engines", enginesTotal, fmt.Sprintf("%.2f%%", enginesAlone))
	var ex []string
	for _, name := range engineNames {
		if _, ok := engRun[name]; ok {
			ex = append(ex, fmt.Sprintf("%s %+.2f%%", name, engRun[name]-engStop[name]))
		}
	}
	fmt.Printf("engines with the servers running minus stopped: %s (a negative difference counts as 0)\n", strings.Join(ex, ", "))
	fmt.Printf("%-12s %13.2f%%  (the servers, and what each engine used above its own idle measured with the servers stopped; target < 2%% of a core)\n", "platform", platform)
	benchkit.Summary("idle", fmt.Sprintf("idle platform CPU, six servers + engines' share (engines %.2f%% running vs %.2f%% with the servers stopped, A B B A x %d)", enginesTotal, enginesAlone, rounds),
		fmt.Sprintf("%.2f%%", platform), "-", "-", "< 2% of a core", benchkit.Verdict(platform < 2, problems...))
	return nil
}

func pkgs() []string {
	var out []string
	for _, s := range servers {
		out = append(out, "./services/"+s)
	}
	return out
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times (100 on
// every Linux this runs on).
const clockTicks = 100

var engineNames = []string{"mysqld", "mariadbd", "clickhouse", "pulsar"}

// enginePIDs finds the engines' processes: the one MySQL-family server the
// run uses, ClickHouse and Pulsar, those of the local stack ($RS_STATE in
// their command line, when set) and never a command that merely names them
// (a grep, another stack's engine).
func enginePIDs() map[string]int {
	state := os.Getenv("RS_STATE")
	want := "mysqld"
	if infratest.MySQLEngine() == "MariaDB" {
		want = "mariadbd"
	}
	out := map[string]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		c := string(cmd)
		if state != "" && !strings.Contains(c, state) {
			continue
		}
		switch {
		case want == "mysqld" && strings.Contains(c, "/mysqld\x00--defaults-file"):
			out["mysqld"] = pid
		case want == "mariadbd" && strings.Contains(c, "mariadbd\x00--defaults-file"):
			out["mariadbd"] = pid
		case strings.HasPrefix(c, "/usr/sbin/clickhouse-server") || strings.HasPrefix(c, "/usr/bin/clickhouse-server"):
			out["clickhouse"] = pid
		case strings.Contains(c, "PulsarStandaloneStarter") && strings.HasSuffix(strings.SplitN(c, "\x00", 2)[0], "/java"):
			out["pulsar"] = pid
		}
	}
	return out
}

// shot is utime+stime of each process at one time.
type shot struct {
	at      time.Time
	jiffies map[string]uint64
}

func sample(pids map[string]int) shot {
	s := shot{at: time.Now(), jiffies: map[string]uint64{}}
	for name, pid := range pids {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ...: utime and stime are the 12th and 13th
		// fields after the command, which may hold spaces.
		rest := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(rest) < 13 {
			continue
		}
		ut, _ := strconv.ParseUint(rest[11], 10, 64)
		st, _ := strconv.ParseUint(rest[12], 10, 64)
		s.jiffies[name] = ut + st
	}
	return s
}

// freeAddr is a loopback address free now, on a port below the kernel's
// ephemeral range (32768 on): a port the kernel handed out would be free
// only until some client's outgoing connection takes it (the tests of a
// shared machine open many), before the server started here listens on it.
func freeAddr(ctx context.Context) (string, error) {
	var lc net.ListenConfig
	for range 100 {
		l, err := lc.Listen(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", 20000+rand.N(12000)))
		if err != nil {
			continue
		}
		addr := l.Addr().String()
		if err := l.Close(); err != nil {
			return "", err
		}
		return addr, nil
	}
	return "", errors.New("no free loopback port in 20000-31999 after 100 tries")
}

// prefixed copies a server's output to stderr, each line prefixed by its name.
func prefixed(name string) io.Writer {
	r, w := io.Pipe()
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			fmt.Fprintf(os.Stderr, "%s: %s\n", name, sc.Text())
		}
	}()
	return w
}
