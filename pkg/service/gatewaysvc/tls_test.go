package gatewaysvc_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/platform/tlsconfig"
	"github.com/resultsync/resultsync/pkg/service/gatewaysvc"
	"github.com/resultsync/resultsync/pkg/testkit/configtest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
	"github.com/resultsync/resultsync/pkg/testkit/tlstest"
)

func TestLoadTLS(t *testing.T) {
	configtest.Load(t, gatewaysvc.Load, []configtest.Case{
		{Name: "skip verify outside the local profile", Args: []string{"--auth-tokens=a=b:viewer", "--backend-tls-insecure-skip-verify"},
			WantErr: []string{"insecure-skip-verify is allowed only with --profile=local"}},
		{Name: "skip verify in the local profile", Args: []string{"--profile=local", "--backend-tls-insecure-skip-verify"}},
		{Name: "client certificate without key, serving key without certificate",
			Args:    []string{"--profile=local", "--backend-tls-cert-file=c.pem", "--tls-key-file=k.pem"},
			WantErr: []string{"backend TLS: the TLS client certificate and key files go together", "server TLS: the TLS certificate and key files go together"}},
		{Name: "client auth without a CA", Args: []string{"--profile=local", "--tls-cert-file=c.pem", "--tls-key-file=k.pem", "--tls-client-auth"},
			WantErr: []string{"needs a CA file"}},
	}, func(t *testing.T, c gatewaysvc.Config) {
		if !c.BackendTLS.InsecureSkipVerify || c.BackendTLS.Profile != "local" {
			t.Errorf("backend TLS %+v; want skip verify in the local profile", c.BackendTLS)
		}
	})
}

// tlsBackend serves the stand-in ResultService through the shared server
// bootstrap with TLS f.
func tlsBackend(t *testing.T, f tlsconfig.Files) (string, *server.Server) {
	t.Helper()
	srv, err := server.New(slog.New(slog.NewTextHandler(io.Discard, nil)),
		server.Config{GRPCAddr: "127.0.0.1:0", ShutdownGrace: time.Second, LogLevel: "info", TLS: f})
	if err != nil {
		t.Fatal(err)
	}
	fitnessv1.RegisterResultServiceServer(srv.GRPC(), results{})
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return srv.GRPCAddr(), srv
}

// The gateway serves its JSON API and gRPC health over TLS and calls a
// backend that requires client certificates over mutual TLS; a gateway
// without the client certificate, or trusting another CA, is refused by the
// backend, and a plaintext caller is refused by the gateway.
func TestGatewayOverMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	other := tlstest.NewCA(t, dir, "other-ca")
	backendCert := ca.Issue(t, dir, "results", tlstest.Options{})
	gatewayCert := ca.Issue(t, dir, "gateway", tlstest.Options{})
	resultsAddr, _ := tlsBackend(t, tlsconfig.Files{CertFile: backendCert.CertFile, KeyFile: backendCert.KeyFile, CAFile: ca.File, ClientAuth: true})
	openapi, err := filepath.Abs("../../../gen/openapiv2/resultsync.swagger.json")
	if err != nil {
		t.Fatal(err)
	}
	caClient, err := tlsconfig.Client(slog.New(slog.NewTextHandler(io.Discard, nil)), tlsconfig.Files{CAFile: ca.File}, "gateway")
	if err != nil {
		t.Fatal(err)
	}

	gateway := func(t *testing.T, backendTLS ...string) (*gatewaysvc.Service, *servertest.Running) {
		t.Helper()
		configtest.ClearEnv(t)
		args := append([]string{"--grpc-addr=127.0.0.1:0", "--http-addr=", "--api-addr=127.0.0.1:0", "--shutdown-grace=1s",
			"--profile=local", "--openapi-file=" + openapi, "--tls-cert-file=" + gatewayCert.CertFile, "--tls-key-file=" + gatewayCert.KeyFile,
			"--results-addr=" + resultsAddr, "--relay-addr=" + deadAddr(t), "--consumer-addr=" + deadAddr(t),
			"--reconcile-addr=" + deadAddr(t), "--repair-addr=" + deadAddr(t)}, backendTLS...)
		cfg, err := gatewaysvc.Load(args)
		if err != nil {
			t.Fatal(err)
		}
		svc, err := gatewaysvc.New(t.Context(), slog.New(slog.NewTextHandler(io.Discard, nil)), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return svc, servertest.StartWith(t, svc, credentials.NewTLS(caClient.Clone()))
	}
	https := &http.Client{Transport: &http.Transport{TLSClientConfig: caClient.Clone()}}
	call := func(t *testing.T, c *http.Client, url string) (int, string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer dev-viewer")
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	const route = "/v1/schools/7/results/900001"

	t.Run("mutual TLS", func(t *testing.T) {
		svc, r := gateway(t, "--backend-tls-ca-file="+ca.File, "--backend-tls-cert-file="+gatewayCert.CertFile, "--backend-tls-key-file="+gatewayCert.KeyFile)
		r.WaitHealthAll(t, map[string]healthpb.HealthCheckResponse_ServingStatus{"": healthpb.HealthCheckResponse_SERVING,
			"dependency/results": healthpb.HealthCheckResponse_SERVING}, 20*time.Second)
		code, body, err := call(t, https, "https://"+svc.APIAddr()+route)
		if err != nil || code != http.StatusOK || !strings.Contains(body, `"dataId":"900001"`) {
			t.Fatalf("GET over TLS = %d %s %v; want 200 from the results backend over mTLS", code, body, err)
		}
		if code, body, err := call(t, http.DefaultClient, "http://"+svc.APIAddr()+route); err == nil && code == http.StatusOK {
			t.Errorf("a plaintext GET was answered 200: %s", body)
		}
		other, err := tlsconfig.Client(slog.New(slog.NewTextHandler(io.Discard, nil)), tlsconfig.Files{CAFile: other.File}, "gateway")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := call(t, &http.Client{Transport: &http.Transport{TLSClientConfig: other}}, "https://"+svc.APIAddr()+route); err == nil ||
			!strings.Contains(err.Error(), "unknown authority") {
			t.Errorf("GET trusting another CA: %v; want an unknown authority", err)
		}
	})
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no client certificate", []string{"--backend-tls-ca-file=" + ca.File}},
		{"trusting another CA", []string{"--backend-tls-ca-file=" + other.File, "--backend-tls-cert-file=" + gatewayCert.CertFile, "--backend-tls-key-file=" + gatewayCert.KeyFile}},
		{"plaintext", nil},
	} {
		t.Run("backend refuses a gateway with "+tc.name, func(t *testing.T) {
			svc, r := gateway(t, tc.args...)
			r.WaitHealthAll(t, map[string]healthpb.HealthCheckResponse_ServingStatus{"": healthpb.HealthCheckResponse_SERVING,
				"dependency/results": healthpb.HealthCheckResponse_NOT_SERVING}, 20*time.Second)
			if code, body, err := call(t, https, "https://"+svc.APIAddr()+route); err != nil || code != http.StatusServiceUnavailable {
				t.Errorf("GET = %d %s %v; want 503 (the backend refuses the connection)", code, body, err)
			}
		})
	}
}
