package gatewaysvc_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/resultsync/resultsync/pkg/service/gatewaysvc"
	"github.com/resultsync/resultsync/pkg/service/resultssvc"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/configtest"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

// Two results servers on the real shards behind one DNS name, as the pods of
// a headless Service are: a DNS server (in the test, on loopback UDP)
// answers the name with both servers' addresses, 127.0.0.1 and 127.0.0.2 on
// the same port, and the gateway is given the name alone. The teacher's
// records, recorded through the gateway's JSON API one call after the
// other, reach both servers, each taking its share, as each server's own
// /metrics shows; with gRPC's default pick_first every call went to one of
// them.
func TestCallsSpreadOverEveryAddressOfTheName(t *testing.T) {
	shards := twoShards(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	port := twoLoopbackPort(t)
	var servers []*resultssvc.Service
	for _, ip := range []string{"127.0.0.1", "127.0.0.2"} {
		configtest.ClearEnv(t)
		cfg, err := resultssvc.Load([]string{"--profile=local", "--grpc-addr=" + net.JoinHostPort(ip, port), "--http-addr=127.0.0.1:0",
			"--shutdown-grace=1s", "--shards=" + shards})
		if err != nil {
			t.Fatal(err)
		}
		srv, err := resultssvc.New(t.Context(), log, cfg)
		if err != nil {
			t.Fatalf("results server on %s: %v", ip, err)
		}
		servertest.Start(t, srv).WaitHealthAll(t,
			map[string]healthpb.HealthCheckResponse_ServingStatus{"": healthpb.HealthCheckResponse_SERVING}, 30*time.Second)
		servers = append(servers, srv)
	}
	const name = "results.balance.test"
	dns := serveDNS(t, name+".", [][4]byte{{127, 0, 0, 1}, {127, 0, 0, 2}})

	openapi, err := filepath.Abs("../../../gen/openapiv2/resultsync.swagger.json")
	if err != nil {
		t.Fatal(err)
	}
	configtest.ClearEnv(t)
	gcfg, err := gatewaysvc.Load([]string{"--profile=local", "--grpc-addr=127.0.0.1:0", "--http-addr=", "--api-addr=127.0.0.1:0", "--shutdown-grace=1s",
		"--openapi-file=" + openapi, "--results-addr=dns://" + dns.String() + "/" + net.JoinHostPort(name, port),
		"--relay-addr=" + deadAddr(t), "--consumer-addr=" + deadAddr(t), "--reconcile-addr=" + deadAddr(t), "--repair-addr=" + deadAddr(t)})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gatewaysvc.New(t.Context(), log, gcfg)
	if err != nil {
		t.Fatal(err)
	}
	servertest.Start(t, gw).WaitHealthAll(t,
		map[string]healthpb.HealthCheckResponse_ServingStatus{"dependency/results": healthpb.HealthCheckResponse_SERVING}, 30*time.Second)

	before := make([]int, len(servers))
	for i, s := range servers {
		before[i] = recordCalls(t, s.HTTPAddr())
	}
	const calls = 40
	client := &http.Client{Timeout: 20 * time.Second}
	for i := range calls {
		body := fmt.Sprintf(`{"requestId":"balance-%d","dataId":"%d","detectId":"10001","userId":"4","projectId":"3","schoolId":"7","grade":5,"result":"2.21","unit":"m"}`,
			i, 920001+i)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+gw.APIAddr()+"/v1/results", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer dev-operator")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("record %d through the gateway: %v", i, err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("record %d through the gateway = %d %s", i, resp.StatusCode, raw)
		}
	}
	got := make([]int, len(servers))
	total := 0
	for i, s := range servers {
		got[i] = recordCalls(t, s.HTTPAddr()) - before[i]
		total += got[i]
	}
	t.Logf("%d records through the gateway: %d on 127.0.0.1:%s, %d on 127.0.0.2:%s", calls, got[0], port, got[1], port)
	if total != calls {
		t.Errorf("the servers handled %d RecordResult calls, want %d", total, calls)
	}
	for i, n := range got {
		// Round robin alternates once both connections are ready; the first
		// calls may all go to the connection that was ready first.
		if n < calls/4 {
			t.Errorf("server %d handled %d of %d calls: want at least %d (round robin over every address of the name)", i, n, calls, calls/4)
		}
	}
	if queries := dns.Load(); queries == 0 {
		t.Error("the gateway never asked the DNS server")
	}
}

// A backend address is host:port (resolved by DNS, every address of the
// name a backend) or a dns:// target naming its DNS server; nothing else.
func TestBackendAddresses(t *testing.T) {
	configtest.Load(t, gatewaysvc.Load, []configtest.Case{
		{Name: "host:port and dns targets", Args: []string{"--profile=local", "--results-addr=results:7101",
			"--relay-addr=dns:///relay.resultsync.svc.cluster.local:7102", "--consumer-addr=dns://10.96.0.10:53/consumer:7103"}},
		{Name: "other schemes, no port, no host", Args: []string{"--profile=local", "--results-addr=unix:///run/results.sock",
			"--relay-addr=dns:///relay", "--consumer-addr=:7103", "--reconcile-addr=passthrough:///reconcile:7104"},
			WantErr: []string{`results-addr "unix:///run/results.sock"`, `relay-addr "dns:///relay"`, "consumer-addr", "reconcile-addr"}},
	}, nil)
}

// twoShards is the --shards value of two fresh shard databases on the real
// MySQL server, dropped with the test.
func twoShards(t *testing.T) string {
	t.Helper()
	var shards []string
	for _, id := range []string{"shard-0", "shard-1"} {
		shards = append(shards, id+"="+infratest.NewMySQLDatabase(t, schema.Shard).DSN)
	}
	return strings.Join(shards, ",")
}

// twoLoopbackPort returns a TCP port free on both 127.0.0.1 and 127.0.0.2.
func twoLoopbackPort(t *testing.T) string {
	t.Helper()
	var lc net.ListenConfig
	for range 20 {
		a, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(a.Addr().String())
		b, err := lc.Listen(t.Context(), "tcp", "127.0.0.2:"+port)
		_ = a.Close()
		if err == nil {
			_ = b.Close()
			return port
		}
	}
	t.Fatal("no port free on both 127.0.0.1 and 127.0.0.2 in 20 tries")
	return ""
}

// dnsServer counts the queries it answered; Load reads the count, String is
// its address.
type dnsServer struct {
	atomic.Int64
	addr string
}

func (d *dnsServer) String() string { return d.addr }

// serveDNS answers DNS queries over UDP on loopback until the test ends:
// name's A records are addrs, its other types have no record (NOERROR), any
// other name does not exist (NXDOMAIN).
func serveDNS(t *testing.T, name string, addrs [][4]byte) *dnsServer {
	t.Helper()
	var lc net.ListenConfig
	pc, err := lc.ListenPacket(t.Context(), "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	d := &dnsServer{addr: pc.LocalAddr().String()}
	want := dnsmessage.MustNewName(name)
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return // closed with the test
			}
			var q dnsmessage.Message
			if err := q.Unpack(buf[:n]); err != nil || len(q.Questions) != 1 {
				continue
			}
			d.Add(1)
			question := q.Questions[0]
			answer := dnsmessage.Message{
				Header:    dnsmessage.Header{ID: q.ID, Response: true, Authoritative: true, RCode: dnsmessage.RCodeNameError},
				Questions: q.Questions,
			}
			if strings.EqualFold(question.Name.String(), want.String()) {
				answer.RCode = dnsmessage.RCodeSuccess
				if question.Type == dnsmessage.TypeA {
					for _, a := range addrs {
						answer.Answers = append(answer.Answers, dnsmessage.Resource{
							Header: dnsmessage.ResourceHeader{Name: question.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 5},
							Body:   &dnsmessage.AResource{A: a},
						})
					}
				}
			}
			out, err := answer.Pack()
			if err != nil {
				t.Errorf("packing the DNS answer: %v", err)
				return
			}
			_, _ = pc.WriteTo(out, from)
		}
	}()
	return d
}

// recordCalls reads the RecordResult calls a results server answered with
// OK from its /metrics (go-grpc-middleware's grpc_server_handled_total).
func recordCalls(t *testing.T, httpAddr string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+httpAddr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("reading /metrics of %s: %v", httpAddr, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "grpc_server_handled_total{") || !strings.Contains(line, `grpc_method="RecordResult"`) ||
			!strings.Contains(line, `grpc_code="OK"`) {
			continue
		}
		f := strings.Fields(line)
		n, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		return int(n)
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return 0
}
