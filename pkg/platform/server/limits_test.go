package server_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/resultsync/resultsync/pkg/platform/config"
	"github.com/resultsync/resultsync/pkg/platform/server"
)

// A request larger than the server's receive limit fails with
// RESOURCE_EXHAUSTED; a smaller one passes.
func TestMaxReceiveMessageSize(t *testing.T) {
	hc, _, _ := runWithHTTP(t, server.Config{GRPC: server.GRPCLimits{MaxRecvMsgBytes: 64 << 10}}, nil, nil)
	waitServing(t, hc, "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: strings.Repeat("x", 100<<10)})
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a 100 KiB request to a 64 KiB limit: %v, want RESOURCE_EXHAUSTED", err)
	}
	_, err = hc.Check(ctx, &healthpb.HealthCheckRequest{Service: strings.Repeat("x", 32<<10)})
	if status.Code(err) != codes.NotFound { // an unknown service name: the request got through
		t.Errorf("a 32 KiB request: %v, want NOT_FOUND (unknown service)", err)
	}
}

// With MaxConcurrentStreams 2, two open streams take the connection's
// quota: a third call waits (here until its deadline), and goes through
// once one stream ends.
func TestMaxConcurrentStreams(t *testing.T) {
	hc, _, _ := runWithHTTP(t, server.Config{GRPC: server.GRPCLimits{MaxConcurrentStreams: 2}}, nil, nil)
	waitServing(t, hc, "")
	var cancels []context.CancelFunc
	for range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		cancels = append(cancels, cancel)
		w, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Recv(); err != nil { // the stream is open on the server
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
	cancel()
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("a third call while two streams are open: %v, want DEADLINE_EXCEEDED (waiting for stream quota)", err)
	}
	cancels[0]()
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Errorf("a call after one stream ended: %v", err)
	}
}

// A client that pings more often than KeepaliveMinTime is sent GOAWAY
// ENHANCE_YOUR_CALM "too_many_pings" and disconnected; the same pings to a
// server whose minimum is below their interval are answered.
func TestKeepaliveEnforcementSendsGoAway(t *testing.T) {
	for _, tc := range []struct {
		name    string
		minTime time.Duration
		goAway  bool
	}{{"too often", time.Minute, true}, {"tolerated", time.Millisecond, false}} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _, _, _ := runAt(t, server.Config{GRPC: server.GRPCLimits{KeepaliveMinTime: tc.minTime, KeepalivePermitWithoutStream: true}}, nil, nil)
			f, acks := pingRapidly(t, addr, 10, 10*time.Millisecond)
			switch {
			case tc.goAway && f == nil:
				t.Fatalf("no GOAWAY after 10 pings 10ms apart (%d answered)", acks)
			case tc.goAway && (f.ErrCode != http2.ErrCodeEnhanceYourCalm || string(f.DebugData()) != "too_many_pings"):
				t.Errorf("GOAWAY %v %q, want ENHANCE_YOUR_CALM too_many_pings", f.ErrCode, f.DebugData())
			case !tc.goAway && f != nil:
				t.Errorf("GOAWAY %v %q from a server tolerating pings every %s", f.ErrCode, f.DebugData(), tc.minTime)
			case !tc.goAway && acks != 10:
				t.Errorf("%d of 10 pings answered", acks)
			}
		})
	}
}

// pingRapidly opens a raw HTTP/2 connection to addr, sends n pings every
// gap, and returns the GOAWAY the server sent within a second after them
// (nil: none) and how many pings it answered.
func pingRapidly(t *testing.T, addr string, n int, gap time.Duration) (*http2.GoAwayFrame, int) {
	t.Helper()
	var d net.Dialer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	var wmu sync.Mutex // the framer's writes, from both goroutines
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var acks atomic.Int32
	goaway := make(chan *http2.GoAwayFrame, 1)
	go func() {
		defer close(goaway)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					wmu.Lock()
					_ = fr.WriteSettingsAck()
					wmu.Unlock()
				}
			case *http2.PingFrame:
				if f.IsAck() {
					acks.Add(1)
				}
			case *http2.GoAwayFrame:
				goaway <- f
				return
			}
		}
	}()
	for i := range n {
		wmu.Lock()
		err := fr.WritePing(false, [8]byte{byte(i)})
		wmu.Unlock()
		if err != nil {
			break // the server closed the connection
		}
		time.Sleep(gap)
	}
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	f := <-goaway
	return f, int(acks.Load())
}

func TestGRPCLimitsValidation(t *testing.T) {
	base := func(g server.GRPCLimits) server.Config {
		return server.Config{GRPCAddr: "127.0.0.1:0", ShutdownGrace: time.Second, GRPC: g}
	}
	for _, tc := range []struct {
		name string
		g    server.GRPCLimits
		want string // "" for valid
	}{
		{"defaults", server.GRPCLimits{}, ""},
		{"negative streams", server.GRPCLimits{MaxConcurrentStreams: -1}, "grpc-max-concurrent-streams must not be negative"},
		{"tiny message", server.GRPCLimits{MaxRecvMsgBytes: 100}, "at least 4096"},
		{"negative min time", server.GRPCLimits{KeepaliveMinTime: -time.Second}, "grpc-keepalive-min-time must not be negative"},
		{"keepalive time below 1s", server.GRPCLimits{KeepaliveTime: 10 * time.Millisecond}, "at least 1s"},
		{"negative age", server.GRPCLimits{MaxConnectionAge: -time.Second}, "grpc-max-connection-age must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base(tc.g)
			err := cfg.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

// The flags and environment variables set the limits, with the defaults
// otherwise, and a malformed environment value is reported.
func TestGRPCLimitsFlags(t *testing.T) {
	t.Setenv("RS_TEST_GRPC_MAX_RECV_BYTES", "65536")
	var g server.GRPCLimits
	l := config.NewLoader("test")
	g.Flags(l, "RS_TEST")
	if err := l.Parse([]string{"--grpc-keepalive-min-time=45s", "--grpc-max-connection-age=30m"}); err != nil {
		t.Fatal(err)
	}
	want := server.GRPCLimits{MaxConcurrentStreams: server.DefaultMaxConcurrentStreams, MaxRecvMsgBytes: 65536,
		MaxSendMsgBytes: server.DefaultMaxSendMsgBytes, KeepaliveMinTime: 45 * time.Second, KeepalivePermitWithoutStream: true,
		KeepaliveTime: server.DefaultKeepaliveTime, KeepaliveTimeout: server.DefaultKeepaliveTimeout, MaxConnectionAge: 30 * time.Minute}
	if g != want {
		t.Errorf("limits = %+v, want %+v", g, want)
	}
	t.Setenv("RS_TEST_GRPC_MAX_CONCURRENT_STREAMS", "many")
	l = config.NewLoader("test")
	g.Flags(l, "RS_TEST")
	if err := l.Parse(nil); err == nil || !strings.Contains(err.Error(), "RS_TEST_GRPC_MAX_CONCURRENT_STREAMS") {
		t.Errorf("a malformed environment value: %v", err)
	}
}
