package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// stack is the platform under chaos: fresh databases on the local MySQL
// (two shards, control) and ClickHouse, a fresh 4-partition topic on the
// local Pulsar, the server binaries as processes, and the proxies the
// faults cut or pause.
type stack struct {
	dir     string
	shards  []*infratest.MySQLDatabase // direct: the checker reads through these
	control *infratest.MySQLDatabase
	ch      *infratest.ClickHouseDatabase
	topic   string
	drops   []func()

	// Paths the faults act on: shard-1 for every server; the relays' and the
	// consumers' broker; the consumers' ClickHouse.
	shard1, relayBroker, consumerBroker, consumerCH *infratest.Proxy

	mu    sync.Mutex
	procs map[string]*proc
}

// proc is one server process, restarted with the same arguments.
type proc struct {
	name, bin, addr string
	args            []string
	cmd             *exec.Cmd
	done            chan struct{}
	starts          int
}

func newStack(ctx context.Context, dir string) (*stack, error) {
	s := &stack{dir: dir, procs: map[string]*proc{}}
	fail := func(err error) (*stack, error) {
		s.close(false)
		return nil, err
	}
	for range 2 {
		d, drop, err := infratest.CreateMySQLDatabase(ctx, "rs_chaos", schema.Shard, 8)
		if err != nil {
			return fail(err)
		}
		s.shards, s.drops = append(s.shards, d), append(s.drops, drop)
	}
	var err error
	var drop func()
	if s.control, drop, err = infratest.CreateMySQLDatabase(ctx, "rs_chaos", schema.Control, 4); err != nil {
		return fail(err)
	}
	s.drops = append(s.drops, drop)
	if s.ch, drop, err = infratest.CreateClickHouseDatabase(ctx, "rs_chaos", true); err != nil {
		return fail(err)
	}
	s.drops = append(s.drops, drop)
	s.topic = pulsarbus.Topic("public", "default", "chaos-"+infratest.Suffix())
	if err := adminPartitions(ctx, http.MethodPut, s.topic, "4"); err != nil {
		return fail(err)
	}
	s.drops = append(s.drops, func() { _ = adminPartitions(context.Background(), http.MethodDelete, s.topic+"?force=true", "") })

	mysqlAddr := infratest.Env("RS_MYSQL_HOST", "127.0.0.1") + ":" + infratest.Env("RS_MYSQL_PORT", "13306")
	for _, px := range []struct {
		p      **infratest.Proxy
		target string
	}{{&s.shard1, mysqlAddr}, {&s.relayBroker, infratest.PulsarAddr()}, {&s.consumerBroker, infratest.PulsarAddr()}, {&s.consumerCH, infratest.ClickHouseAddr()}} {
		if *px.p, err = infratest.StartProxy(px.target); err != nil {
			return fail(err)
		}
	}
	shardMap := fmt.Sprintf("shard-0=%s,shard-1=%s", s.shards[0].DSN,
		strings.Replace(s.shards[1].DSN, "tcp("+mysqlAddr+")", "tcp("+s.shard1.Addr()+")", 1))
	common := []string{"--http-addr=", "--shutdown-grace=3s", "--log-level=info", "--auth-tokens=" + auth.DevTokens}
	withShards := append(append([]string{}, common...), "--shards="+shardMap)
	ch := []string{"--clickhouse-addr=" + infratest.ClickHouseAddr(), "--clickhouse-database=" + s.ch.Name}
	add := func(name, bin string, args ...string) error {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		s.procs[name] = &proc{name: name, bin: bin, addr: addr, args: append([]string{"--grpc-addr=" + addr}, args...)}
		return nil
	}
	steps := []error{
		add("results", "results", withShards...),
		add("relay-1", "relay", append(withShards, "--control-dsn="+s.control.DSN, "--pulsar-url=pulsar://"+s.relayBroker.Addr(), "--topic="+s.topic,
			"--poll-interval=50ms", "--lease=10s", "--publish-timeout=3s", "--completion-timeout=2s", "--probe-interval=1s")...),
		add("relay-2", "relay", append(withShards, "--control-dsn="+s.control.DSN, "--pulsar-url=pulsar://"+s.relayBroker.Addr(), "--topic="+s.topic,
			"--poll-interval=50ms", "--lease=10s", "--publish-timeout=3s", "--completion-timeout=2s", "--probe-interval=1s")...),
		add("consumer-1", "consumer", append(append([]string{}, common...), "--pulsar-url=pulsar://"+s.consumerBroker.Addr(), "--topic="+s.topic,
			"--clickhouse-addr="+s.consumerCH.Addr(), "--clickhouse-database="+s.ch.Name, "--batch-wait=50ms", "--probe-interval=1s")...),
		add("consumer-2", "consumer", append(append([]string{}, common...), "--pulsar-url=pulsar://"+s.consumerBroker.Addr(), "--topic="+s.topic,
			"--clickhouse-addr="+s.consumerCH.Addr(), "--clickhouse-database="+s.ch.Name, "--batch-wait=50ms", "--probe-interval=1s")...),
		add("reconcile", "reconcile", append(append(withShards, ch...), "--control-dsn="+s.control.DSN, "--grace=1s", "--catch-up-wait=10s")...),
		add("repair", "repair", append(append(withShards, ch...), "--control-dsn="+s.control.DSN, "--pulsar-url="+infratest.PulsarURL(), "--topic="+s.topic,
			"--poll=200ms", "--lease=3s", "--verify-poll=500ms", "--verify-timeout=2m")...),
	}
	if err := errors.Join(steps...); err != nil {
		return fail(err)
	}
	apiAddr, err := freeAddr()
	if err != nil {
		return fail(err)
	}
	if err := add("gateway", "gateway", append(append([]string{}, common...), "--api-addr="+apiAddr, "--results-addr="+s.procs["results"].addr,
		"--relay-addr="+s.procs["relay-1"].addr, "--consumer-addr="+s.procs["consumer-1"].addr, "--reconcile-addr="+s.procs["reconcile"].addr,
		"--repair-addr="+s.procs["repair"].addr)...); err != nil {
		return fail(err)
	}
	for _, name := range s.names() {
		if err := s.start(name); err != nil {
			return fail(err)
		}
	}
	for _, name := range s.names() {
		if err := s.waitServing(ctx, name, 90*time.Second); err != nil {
			return fail(err)
		}
	}
	return s, nil
}

// names are the servers in start order.
func (s *stack) names() []string {
	return []string{"results", "relay-1", "relay-2", "consumer-1", "consumer-2", "reconcile", "repair", "gateway"}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// adminPartitions calls the broker's admin API on the topic's partitions.
func adminPartitions(ctx context.Context, method, topic, body string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	url := infratest.PulsarAdminURL() + "/admin/v2/" + strings.Replace(topic, "://", "/", 1)
	if i := strings.Index(url, "?"); i >= 0 {
		url = url[:i] + "/partitions" + url[i:]
	} else {
		url += "/partitions"
	}
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: HTTP %d", method, url, resp.StatusCode)
	}
	return nil
}

// start runs a server (again), its output appended to <dir>/<name>.log.
func (s *stack) start(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.procs[name]
	if p.cmd != nil {
		select {
		case <-p.done:
		default:
			return nil // running
		}
	}
	out, err := os.OpenFile(filepath.Join(s.dir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	bin, err := filepath.Abs(filepath.Join("bin", p.bin))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, p.args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "RS_PROFILE=local")
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	p.cmd, p.done, p.starts = cmd, make(chan struct{}), p.starts+1
	done := p.done
	go func() { _ = cmd.Wait(); out.Close(); close(done) }()
	return nil
}

// kill stops a server with SIGKILL (no drain, no cleanup) and waits for it.
func (s *stack) kill(name string) {
	s.mu.Lock()
	p := s.procs[name]
	s.mu.Unlock()
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// waitServing waits until the server answers its health check SERVING.
func (s *stack) waitServing(ctx context.Context, name string, timeout time.Duration) error {
	s.mu.Lock()
	p := s.procs[name]
	s.mu.Unlock()
	conn, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		r, err := hc.Check(cctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && r.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		last = err
		if err == nil {
			last = errors.New("health " + r.GetStatus().String())
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (see %s)", name, filepath.Join(s.dir, name+".log"))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not SERVING within %s: %w (see %s)", name, timeout, last, filepath.Join(s.dir, name+".log"))
}

// stopAll stops every server with SIGTERM (they drain), then SIGKILL.
func (s *stack) stopAll() {
	for _, name := range s.names() {
		s.mu.Lock()
		p := s.procs[name]
		s.mu.Unlock()
		if p == nil || p.cmd == nil {
			continue
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
		}
	}
}

// close stops the servers and proxies; with drop, the databases and the
// topic are dropped (kept otherwise, for investigation).
func (s *stack) close(drop bool) {
	s.stopAll()
	for _, px := range []*infratest.Proxy{s.shard1, s.relayBroker, s.consumerBroker, s.consumerCH} {
		if px != nil {
			px.Close()
		}
	}
	if drop {
		for i := len(s.drops) - 1; i >= 0; i-- {
			s.drops[i]()
		}
	}
}
