package gatewaysvc_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/service/gatewaysvc"
	"github.com/resultsync/resultsync/pkg/testkit/configtest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

// edgeGateway runs a gateway whose results backend is resultsAddr and whose
// other backends are down, with extra flags; it returns the API's base URL.
func edgeGateway(t *testing.T, resultsAddr string, flags ...string) string {
	t.Helper()
	openapi, err := filepath.Abs("../../../gen/openapiv2/resultsync.swagger.json")
	if err != nil {
		t.Fatal(err)
	}
	configtest.ClearEnv(t)
	cfg, err := gatewaysvc.Load(append([]string{"--grpc-addr=127.0.0.1:0", "--http-addr=", "--api-addr=127.0.0.1:0", "--shutdown-grace=1s",
		"--profile=local", "--auth-tokens=" + auth.DevTokens, "--openapi-file=" + openapi,
		"--results-addr=" + resultsAddr, "--relay-addr=" + deadAddr(t), "--consumer-addr=" + deadAddr(t),
		"--reconcile-addr=" + deadAddr(t), "--repair-addr=" + deadAddr(t)}, flags...))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := gatewaysvc.New(t.Context(), slog.New(slog.NewTextHandler(io.Discard, nil)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	servertest.Start(t, svc)
	return "http://" + svc.APIAddr()
}

func post(t *testing.T, url string, body io.Reader, length int64) (int, string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = length
	req.Header.Set("Authorization", "Bearer dev-operator")
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), time.Since(start)
}

// A 20 MB body is answered 413 with a JSON error at once, whether its
// Content-Length says so or it comes chunked; a body under the limit
// reaches the backend.
func TestBodyLimit(t *testing.T) {
	addr, _ := backend(t)
	api := edgeGateway(t, addr, "--max-body-bytes=1048576")
	big := bytes.Repeat([]byte("x"), 20<<20)
	for _, tc := range []struct {
		name   string
		body   io.Reader
		length int64
	}{
		{"content-length", bytes.NewReader(big), int64(len(big))},
		{"chunked", io.MultiReader(strings.NewReader(`{"request_id":"`), bytes.NewReader(big)), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, took := post(t, api+"/v1/results", tc.body, tc.length)
			t.Logf("20 MB %s body: %d in %s: %s", tc.name, code, took.Round(time.Millisecond), body)
			if code != http.StatusRequestEntityTooLarge || body != `{"code":8,"message":"request body larger than the limit of 1048576 bytes","details":[]}` {
				t.Errorf("20 MB body = %d %s, want 413 with the JSON error", code, body)
			}
			if took > 2*time.Second {
				t.Errorf("413 after %s, want it at once", took)
			}
		})
	}
	// Under the limit: read, decoded and forwarded (the fake results
	// backend does not implement the write: UNIMPLEMENTED, 501).
	code, body, _ := post(t, api+"/v1/results", strings.NewReader(`{"request_id":"r-1"}`), -1)
	if code != http.StatusNotImplemented {
		t.Errorf("a small body = %d %s, want 501 from the backend", code, body)
	}
}

// A body that trickles in slower than the read timeout is answered 408
// (JSON error) soon after the timeout, and the connection closed.
func TestSlowBodyTimesOut(t *testing.T) {
	addr, _ := backend(t)
	api := edgeGateway(t, addr, "--api-read-timeout=1s", "--api-read-header-timeout=500ms")
	conn, err := net.Dial("tcp", strings.TrimPrefix(api, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /v1/results HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer dev-operator\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"request_id\":")
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	took := time.Since(start)
	t.Logf("stalled body: %d after %s: %s", resp.StatusCode, took.Round(time.Millisecond), b)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), `"code":4`) {
		t.Errorf("stalled body = %d %s, want 408 with the JSON error", resp.StatusCode, b)
	}
	if took < 800*time.Millisecond || took > 4*time.Second {
		t.Errorf("answered after %s, want just after the 1s read timeout", took)
	}
}

// A backend that is down answers 503 whose body names no internal address
// (gRPC's transport error says "dial tcp 127.0.0.1:<port>"), and /healthz
// reports it without one.
func TestBackendDownNamesNoAddress(t *testing.T) {
	dead := deadAddr(t)
	api := edgeGateway(t, dead)
	code, body := get(t, api+"/v1/schools/7/results/900001", "Authorization", "Bearer dev-viewer")
	host, _, _ := net.SplitHostPort(dead)
	if code != http.StatusServiceUnavailable || strings.Contains(body, host) || strings.Contains(body, dead) {
		t.Errorf("GET with the results backend down = %d %s, want 503 without %s", code, body, dead)
	}
	t.Logf("backend down: %d %s", code, body)
	if code, body := get(t, api+"/healthz"); code != http.StatusServiceUnavailable || strings.Contains(body, host) {
		t.Errorf("/healthz = %d %q, want 503 without addresses", code, body)
	}
}

func TestAPILimitsValidation(t *testing.T) {
	configtest.Load(t, gatewaysvc.Load, []configtest.Case{
		{Name: "impossible limits", Args: []string{"--profile=local", "--max-body-bytes=-1", "--api-read-timeout=1s", "--api-read-header-timeout=5s",
			"--api-idle-timeout=-1s"},
			WantErr: []string{"max-body-bytes must not be negative", "must not exceed api-read-timeout", "api-idle-timeout must not be negative"}},
	}, func(*testing.T, gatewaysvc.Config) {})
}
