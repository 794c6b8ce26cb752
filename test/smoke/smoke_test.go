// Package smoke builds every server binary and checks that each starts,
// reports SERVING over grpc.health.v1, and stops cleanly on SIGTERM.
package smoke

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rs-smoke-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	cmd := exec.Command("go", "build", "-o", dir+"/", "../../services/...")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building services:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a started server binary whose JSON log is scanned for addresses.
type proc struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs []string
	addr chan string // gRPC address from the "server started" line
	api  chan string // gateway JSON API address
	done chan error
	// exited is closed once the process was waited for.
	exited chan struct{}
}

func startBinary(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, addr: make(chan string, 1), api: make(chan string, 1), done: make(chan error, 1), exited: make(chan struct{})}
	p.cmd = exec.Command(filepath.Join(binDir, name), args...)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.logs = append(p.logs, line)
			p.mu.Unlock()
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			switch rec["msg"] {
			case "server started":
				p.addr <- fmt.Sprint(rec["grpc_addr"])
			case "JSON API listening":
				p.api <- fmt.Sprint(rec["addr"])
			}
		}
		err := p.cmd.Wait()
		close(p.exited)
		p.done <- err
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
		}
	})
	return p
}

func (p *proc) logTail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := max(0, len(p.logs)-20)
	return strings.Join(p.logs[n:], "\n")
}

func (p *proc) grpcAddr(t *testing.T) string {
	t.Helper()
	select {
	case a := <-p.addr:
		return a
	case err := <-p.done:
		t.Fatalf("%s exited before serving: %v\n%s", p.name, err, p.logTail())
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not log its address\n%s", p.name, p.logTail())
	}
	return ""
}

func (p *proc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("signalling %s: %v", p.name, err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("%s exited with %v after SIGTERM\n%s", p.name, err, p.logTail())
		}
		if !strings.Contains(p.logTail(), `"server stopped"`) {
			t.Errorf("%s did not log a clean stop\n%s", p.name, p.logTail())
		}
	case <-time.After(30 * time.Second):
		t.Errorf("%s still running 30s after SIGTERM\n%s", p.name, p.logTail())
	}
}

// waitHealth polls service's health on addr until it is want (a server
// turns SERVING once its dependency probes passed) or 15s pass.
func waitHealth(t *testing.T, name, addr, service string, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		cancel()
		if err == nil && resp.GetStatus() == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s health of %q = %v, %v; want %v", name, service, resp.GetStatus(), err, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func checkServing(t *testing.T, name, addr string) {
	t.Helper()
	waitHealth(t, name, addr, "", healthpb.HealthCheckResponse_SERVING)
}

// The results server's health follows its shards: one shard down shows on
// dependency/<shard> only (the other shard's records are still served);
// every shard down takes the server NOT_SERVING.
func TestResultsHealthFollowsTheShards(t *testing.T) {
	common := []string{"--profile=local", "--grpc-addr=127.0.0.1:0", "--http-addr=", "--shutdown-grace=3s"}
	dead := "resultsync:resultsync@tcp(127.0.0.1:1)/rs_shard_%d?timeout=300ms"
	live := os.Getenv("RS_SHARDS")
	if live == "" {
		live = "shard-0=resultsync:resultsync@tcp(127.0.0.1:13306)/rs_shard_0,shard-1=resultsync:resultsync@tcp(127.0.0.1:13306)/rs_shard_1"
	}
	liveShard0 := strings.Split(live, ",")[0]

	half := startBinary(t, "results", append(common, "--shards="+liveShard0+",shard-1="+fmt.Sprintf(dead, 1))...)
	addr := half.grpcAddr(t)
	waitHealth(t, "results with shard-1 down", addr, "dependency/shard-1", healthpb.HealthCheckResponse_NOT_SERVING)
	waitHealth(t, "results with shard-1 down", addr, "dependency/shard-0", healthpb.HealthCheckResponse_SERVING)
	waitHealth(t, "results with shard-1 down", addr, "", healthpb.HealthCheckResponse_SERVING)
	half.stop(t)

	none := startBinary(t, "results", append(common, "--shards=shard-0="+fmt.Sprintf(dead, 0)+",shard-1="+fmt.Sprintf(dead, 1))...)
	addr = none.grpcAddr(t)
	waitHealth(t, "results with every shard down", addr, "", healthpb.HealthCheckResponse_NOT_SERVING)
	waitHealth(t, "results with every shard down", addr, "dependency/shards", healthpb.HealthCheckResponse_NOT_SERVING)
	none.stop(t)
}

func TestEveryServerStartsServesAndStops(t *testing.T) {
	common := []string{"--profile=local", "--grpc-addr=127.0.0.1:0", "--http-addr=127.0.0.1:0", "--shutdown-grace=3s"}
	backends := map[string]string{}
	var procs []*proc
	// A projection database and a topic of this test's own: the local
	// stack's shared ones may hold anything (make run's demo retires epoch
	// 0 there, which a consumer at the default epoch refuses to write over).
	projection := "--clickhouse-database=" + infratest.NewClickHouseDatabase(t, true).Name
	topic := infratest.Topic(t, "smoke-every")
	extra := map[string][]string{
		"relay":     {"--topic=" + topic},
		"consumer":  {projection, "--topic=" + topic, "--dead-letter-topic=" + topic + "-DLQ"},
		"reconcile": {projection},
		"repair":    {projection, "--topic=" + topic},
	}
	for _, name := range []string{"results", "relay", "consumer", "reconcile", "repair"} {
		p := startBinary(t, name, append(append([]string{}, common...), extra[name]...)...)
		procs = append(procs, p)
		backends[name] = p.grpcAddr(t)
		checkServing(t, name, backends[name])
	}

	openapi, err := filepath.Abs("../../gen/openapiv2/resultsync.swagger.json")
	if err != nil {
		t.Fatal(err)
	}
	gw := startBinary(t, "gateway", append(common,
		"--api-addr=127.0.0.1:0", "--openapi-file="+openapi,
		"--results-addr="+backends["results"], "--relay-addr="+backends["relay"],
		"--consumer-addr="+backends["consumer"], "--reconcile-addr="+backends["reconcile"],
		"--repair-addr="+backends["repair"])...)
	checkServing(t, "gateway", gw.grpcAddr(t))
	var api string
	select {
	case api = <-gw.api:
	case <-time.After(30 * time.Second):
		t.Fatalf("gateway did not log its API address\n%s", gw.logTail())
	}
	for path, want := range map[string]string{"/healthz": "results SERVING", "/openapiv2/": `"swagger"`} {
		resp, err := http.Get("http://" + api + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s = %d %q; want 200 containing %q", path, resp.StatusCode, body, want)
		}
	}

	gw.stop(t)
	for _, p := range procs {
		p.stop(t)
	}
}

func TestBadConfigFailsFast(t *testing.T) {
	p := startBinary(t, "relay", "--profile=local", "--grpc-addr=nonsense")
	select {
	case err := <-p.done:
		if err == nil {
			t.Fatal("relay accepted --grpc-addr=nonsense")
		}
		if !strings.Contains(p.logTail(), "grpc-addr") {
			t.Errorf("error does not name the bad flag:\n%s", p.logTail())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("relay kept running with an invalid address")
	}
}

// cleanEnv is the environment without any resultsync setting: a binary
// started with it sees only what the test passes.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "RS_") {
			env = append(env, e)
		}
	}
	return append(env, extra...)
}

// run starts a binary to completion and returns its exit error and output.
func run(t *testing.T, env []string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, name), args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Configuration fails closed: without settings and without the local
// profile every server refuses to start, naming every missing setting at
// once; --help never prints a secret's value.
func TestServersRefuseToStartWithoutSettings(t *testing.T) {
	required := map[string][]string{
		"results":   {"--shards", "--auth-jwt-keys"},
		"relay":     {"--shards", "--control-dsn", "--pulsar-url", "--auth-jwt-keys"},
		"consumer":  {"--pulsar-url", "--clickhouse-addr", "--auth-jwt-keys"},
		"reconcile": {"--shards", "--control-dsn", "--clickhouse-addr", "--auth-jwt-keys"},
		"repair":    {"--pulsar-url", "--auth-jwt-keys"},
		"gateway":   {"--auth-jwt-keys"},
		"migrate":   {"--shards", "--control-dsn", "--clickhouse-addr"},
	}
	for name, want := range required {
		t.Run(name, func(t *testing.T) {
			out, err := run(t, cleanEnv(), name, "--grpc-addr=127.0.0.1:0")
			if name == "migrate" {
				out, err = run(t, cleanEnv(), name)
			}
			if err == nil {
				t.Fatalf("%s started without any setting:\n%s", name, out)
			}
			for _, flag := range want {
				if !strings.Contains(out, flag) {
					t.Errorf("%s's refusal does not name %s:\n%s", name, flag, out)
				}
			}
			if strings.Contains(out, "server started") {
				t.Errorf("%s served before refusing:\n%s", name, out)
			}

			const pw = "Sup3rSecretPw"
			env := cleanEnv("RS_SHARDS=shard-0=u:"+pw+"@tcp(127.0.0.1:1)/a,shard-1=u:"+pw+"@tcp(127.0.0.1:1)/b",
				"RS_CONTROL_DSN=u:"+pw+"@tcp(127.0.0.1:1)/c", "RS_AUTH_TOKENS=t"+pw+"=ops:admin")
			help, _ := run(t, env, name, "--help")
			if strings.Contains(help, pw) {
				t.Errorf("%s --help prints a secret:\n%s", name, help)
			}
			if !strings.Contains(help, "-profile") {
				t.Errorf("%s --help lacks the profile flag:\n%s", name, help)
			}
		})
	}
}
