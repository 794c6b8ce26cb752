package server_test

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/platform/tlsconfig"
	"github.com/resultsync/resultsync/pkg/testkit/tlstest"
)

// startTLS serves a server with TLS files f on :0 until the test ends.
func startTLS(t *testing.T, f tlsconfig.Files) (grpcAddr, httpAddr string) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := server.New(log, server.Config{GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", ShutdownGrace: time.Second, LogLevel: "info", TLS: f})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return srv.GRPCAddr(), srv.HTTPAddr()
}

// check is one health check over creds, bounded by 5s.
func check(t *testing.T, addr string, creds credentials.TransportCredentials) error {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err == nil && resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health %s over TLS; want SERVING", resp.GetStatus())
	}
	return err
}

func clientCreds(t *testing.T, f tlsconfig.Files) credentials.TransportCredentials {
	t.Helper()
	c, err := tlsconfig.Client(slog.New(slog.NewTextHandler(io.Discard, nil)), f, "test server")
	if err != nil {
		t.Fatal(err)
	}
	return credentials.NewTLS(c)
}

func TestServerServesTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	other := tlstest.NewCA(t, dir, "other-ca")
	srvCert := ca.Issue(t, dir, "server", tlstest.Options{})
	cli := ca.Issue(t, dir, "client", tlstest.Options{})
	foreign := other.Issue(t, dir, "foreign", tlstest.Options{})
	grpcAddr, httpAddr := startTLS(t, tlsconfig.Files{CertFile: srvCert.CertFile, KeyFile: srvCert.KeyFile, CAFile: ca.File, ClientAuth: true})

	if err := check(t, grpcAddr, clientCreds(t, tlsconfig.Files{CAFile: ca.File, CertFile: cli.CertFile, KeyFile: cli.KeyFile})); err != nil {
		t.Fatalf("gRPC over mTLS with the right CA and a client certificate: %v", err)
	}
	for _, tc := range []struct {
		name  string
		creds credentials.TransportCredentials
	}{
		{"plaintext client", insecure.NewCredentials()},
		{"client trusting another CA", clientCreds(t, tlsconfig.Files{CAFile: other.File, CertFile: cli.CertFile, KeyFile: cli.KeyFile})},
		{"client without a certificate", clientCreds(t, tlsconfig.Files{CAFile: ca.File})},
		{"client certificate of another CA", clientCreds(t, tlsconfig.Files{CAFile: ca.File, CertFile: foreign.CertFile, KeyFile: foreign.KeyFile})},
	} {
		t.Run("gRPC refuses "+tc.name, func(t *testing.T) {
			if err := check(t, grpcAddr, tc.creds); err == nil {
				t.Fatal("the health check succeeded; want a refusal")
			}
		})
	}

	// The metrics and health listener: TLS with the CA, no client
	// certificate needed (probes, scrapers).
	get := func(c *http.Client, url string) (int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	caOnly, err := tlsconfig.Client(slog.New(slog.NewTextHandler(io.Discard, nil)), tlsconfig.Files{CAFile: ca.File}, "metrics")
	if err != nil {
		t.Fatal(err)
	}
	if code, err := get(&http.Client{Transport: &http.Transport{TLSClientConfig: caOnly}}, "https://"+httpAddr+"/metrics"); err != nil || code != http.StatusOK {
		t.Fatalf("GET https /metrics with the CA = %d, %v; want 200", code, err)
	}
	if code, err := get(http.DefaultClient, "http://"+httpAddr+"/metrics"); err == nil && code == http.StatusOK {
		t.Error("GET http /metrics in plaintext was answered 200")
	}
	otherOnly, err := tlsconfig.Client(slog.New(slog.NewTextHandler(io.Discard, nil)), tlsconfig.Files{CAFile: other.File}, "metrics")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := get(&http.Client{Transport: &http.Transport{TLSClientConfig: otherOnly}}, "https://"+httpAddr+"/healthz"); err == nil ||
		!strings.Contains(err.Error(), "unknown authority") {
		t.Errorf("GET https /healthz trusting another CA: %v; want an unknown authority", err)
	}
}

func TestServerTLSRotationNeedsNoRestart(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	srvCert := ca.Issue(t, dir, "server-one", tlstest.Options{})
	grpcAddr, _ := startTLS(t, tlsconfig.Files{CertFile: srvCert.CertFile, KeyFile: srvCert.KeyFile})

	servedName := func() string {
		var got string
		c, err := tlsconfig.Client(slog.New(slog.NewTextHandler(io.Discard, nil)), tlsconfig.Files{CAFile: ca.File}, "server")
		if err != nil {
			t.Fatal(err)
		}
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			got = cs.PeerCertificates[0].Subject.CommonName
			return nil
		}
		if err := check(t, grpcAddr, credentials.NewTLS(c)); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := servedName(); got != "server-one" {
		t.Fatalf("served %q; want server-one", got)
	}
	ca.Write(t, srvCert, "server-two", tlstest.Options{})
	if got := servedName(); got != "server-two" {
		t.Fatalf("after the files changed, served %q; want server-two", got)
	}
}

func TestConfigTLSValidation(t *testing.T) {
	base := server.Config{GRPCAddr: "127.0.0.1:0", ShutdownGrace: time.Second}
	for _, tc := range []struct {
		name string
		tls  tlsconfig.Files
		want string
	}{
		{"certificate without key", tlsconfig.Files{CertFile: "c.pem"}, "go together"},
		{"client auth without CA", tlsconfig.Files{CertFile: "c.pem", KeyFile: "k.pem", ClientAuth: true}, "needs a CA file"},
		{"client auth without TLS", tlsconfig.Files{CAFile: "ca.pem", ClientAuth: true}, "need TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.TLS = tc.tls
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v; want an error saying %q", err, tc.want)
			}
		})
	}
	c := base
	c.TLS = tlsconfig.Files{CertFile: "/nonexistent/c.pem", KeyFile: "/nonexistent/k.pem"}
	if _, err := server.New(slog.New(slog.NewTextHandler(io.Discard, nil)), c); err == nil {
		t.Fatal("New with missing certificate files succeeded")
	}
}
