package gatewaysvc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/resultsync/resultsync/pkg/platform/tlsconfig"
	"github.com/resultsync/resultsync/pkg/service/gatewaysvc"
	"github.com/resultsync/resultsync/pkg/service/resultssvc"
	"github.com/resultsync/resultsync/pkg/testkit/configtest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
	"github.com/resultsync/resultsync/pkg/testkit/tlstest"
)

// The teacher's correction through the gateway to the results server on the
// real shards, every resultsync hop over mutual TLS: the caller's HTTPS call
// to the gateway, and the gateway's gRPC call to the results server, which
// requires the gateway's client certificate. A plaintext gRPC client of the
// results server is refused.
func TestCorrectionThroughTheGatewayOverMutualTLS(t *testing.T) {
	shards := twoShards(t)
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	resultsCert := ca.Issue(t, dir, "results", tlstest.Options{})
	gatewayCert := ca.Issue(t, dir, "gateway", tlstest.Options{})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	configtest.ClearEnv(t)
	rcfg, err := resultssvc.Load([]string{"--profile=local", "--grpc-addr=127.0.0.1:0", "--http-addr=", "--shutdown-grace=1s",
		"--shards=" + shards, "--tls-cert-file=" + resultsCert.CertFile, "--tls-key-file=" + resultsCert.KeyFile,
		"--tls-ca-file=" + ca.File, "--tls-client-auth"})
	if err != nil {
		t.Fatal(err)
	}
	results, err := resultssvc.New(t.Context(), log, rcfg)
	if err != nil {
		t.Fatal(err)
	}
	mtls, err := tlsconfig.Client(log, tlsconfig.Files{CAFile: ca.File, CertFile: gatewayCert.CertFile, KeyFile: gatewayCert.KeyFile}, "results")
	if err != nil {
		t.Fatal(err)
	}
	servertest.StartWith(t, results, credentials.NewTLS(mtls)).WaitHealthAll(t,
		map[string]healthpb.HealthCheckResponse_ServingStatus{"": healthpb.HealthCheckResponse_SERVING}, 30*time.Second)
	plain, err := grpc.NewClient(results.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	pctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(plain).Check(pctx, &healthpb.HealthCheckRequest{}); err == nil {
		t.Error("a plaintext gRPC client of the results server was answered")
	}

	openapi, err := filepath.Abs("../../../gen/openapiv2/resultsync.swagger.json")
	if err != nil {
		t.Fatal(err)
	}
	gcfg, err := gatewaysvc.Load([]string{"--profile=local", "--grpc-addr=127.0.0.1:0", "--http-addr=", "--api-addr=127.0.0.1:0", "--shutdown-grace=1s",
		"--openapi-file=" + openapi, "--tls-cert-file=" + gatewayCert.CertFile, "--tls-key-file=" + gatewayCert.KeyFile,
		"--backend-tls-ca-file=" + ca.File, "--backend-tls-cert-file=" + gatewayCert.CertFile, "--backend-tls-key-file=" + gatewayCert.KeyFile,
		"--results-addr=" + results.GRPCAddr(), "--relay-addr=" + deadAddr(t), "--consumer-addr=" + deadAddr(t),
		"--reconcile-addr=" + deadAddr(t), "--repair-addr=" + deadAddr(t)})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gatewaysvc.New(t.Context(), log, gcfg)
	if err != nil {
		t.Fatal(err)
	}
	caOnly, err := tlsconfig.Client(log, tlsconfig.Files{CAFile: ca.File}, "gateway")
	if err != nil {
		t.Fatal(err)
	}
	servertest.StartWith(t, gw, credentials.NewTLS(caOnly.Clone())).WaitHealthAll(t,
		map[string]healthpb.HealthCheckResponse_ServingStatus{"dependency/results": healthpb.HealthCheckResponse_SERVING}, 30*time.Second)

	https := &http.Client{Transport: &http.Transport{TLSClientConfig: caOnly}, Timeout: 20 * time.Second}
	api := "https://" + gw.APIAddr()
	call := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), method, api+path, bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer dev-operator")
		resp, err := https.Do(req)
		if err != nil {
			t.Fatalf("%s %s over TLS: %v", method, path, err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var out map[string]any
		_ = json.Unmarshal(raw, &out)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, raw)
		}
		return resp.StatusCode, out
	}
	result := func(out map[string]any) (float64, string) {
		r, _ := out["result"].(map[string]any)
		s, _ := r["result"].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("result %v: %v", out, err)
		}
		version, _ := r["version"].(string)
		return v, version
	}
	call(http.MethodPost, "/v1/results", `{"requestId":"tls-record-1","dataId":"910001","detectId":"10001","userId":"4","projectId":"3","schoolId":"7","grade":5,"result":"2.21","unit":"m"}`)
	call(http.MethodPost, "/v1/schools/7/results/910001:correct", `{"requestId":"tls-correct-1","expectedVersion":"1","result":"2.31","unit":"m"}`)
	_, out := call(http.MethodGet, "/v1/schools/7/results/910001", "")
	if v, version := result(out); v != 2.31 || version != "2" {
		t.Errorf("after the correction over TLS: result %v version %q; want 2.31 at version 2 (%v)", v, version, out)
	}
}
