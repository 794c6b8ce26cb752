package tlsconfig_test

import (
	"context"
	"crypto/tls"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/platform/tlsconfig"
)

// runTLSScript runs deploy/local/tls.sh with args into dir.
func runTLSScript(t *testing.T, dir string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		if os.Getenv("CI") != "" || os.Getenv("RS_REQUIRE_INFRA") != "" {
			t.Fatalf("openssl is missing: %v", err)
		}
		t.Skipf("openssl is missing: %v", err)
	}
	script, err := filepath.Abs("../../../deploy/local/tls.sh")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.Env = append(os.Environ(), "RS_TLS_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tls.sh %v: %v\n%s", args, err, out)
	}
}

// The local CA of deploy/local/tls.sh: its server certificate serves mutual
// TLS to its client certificate (and to the server certificate as a client:
// the gateway), env.sh names the files, and --renew issues certificates a
// running server serves from its next handshake.
func TestLocalCAScript(t *testing.T) {
	dir := t.TempDir()
	runTLSScript(t, dir)
	file := func(name string) string { return filepath.Join(dir, name) }
	scfg := mustServer(t, tlsconfig.Files{CertFile: file("server.pem"), KeyFile: file("server-key.pem"), CAFile: file("ca.pem"), ClientAuth: true})
	addr, _ := serve(t, scfg)
	serial := func(cfg *tls.Config) string {
		t.Helper()
		var got string
		cfg = cfg.Clone()
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			got = cs.PeerCertificates[0].SerialNumber.String()
			return nil
		}
		if cn, err := dial(t, addr, cfg); err != nil || cn != "localhost" {
			t.Fatalf("handshake with the local CA's certificates: server %q, %v", cn, err)
		}
		return got
	}
	client := mustClient(t, tlsconfig.Files{CAFile: file("ca.pem"), CertFile: file("client.pem"), KeyFile: file("client-key.pem")})
	gateway := mustClient(t, tlsconfig.Files{CAFile: file("ca.pem"), CertFile: file("server.pem"), KeyFile: file("server-key.pem")})
	before := serial(client)
	serial(gateway)
	if _, err := dial(t, addr, mustClient(t, tlsconfig.Files{CAFile: file("ca.pem")})); err == nil {
		t.Error("a client without a certificate was served")
	}

	env, err := os.ReadFile(file("env.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"RS_TLS_CERT_FILE=" + file("server.pem"), "RS_TLS_KEY_FILE=" + file("server-key.pem"),
		"RS_TLS_CA_FILE=" + file("ca.pem"), "RS_TLS_CLIENT_AUTH=true", "RS_GATEWAY_BACKEND_TLS_CA_FILE=" + file("ca.pem")} {
		if !strings.Contains(string(env), want) {
			t.Errorf("env.sh does not set %s:\n%s", want, env)
		}
	}

	runTLSScript(t, dir) // idempotent: nothing reissued
	if got := serial(client); got != before {
		t.Errorf("a second run without --renew reissued the server certificate (%s -> %s)", before, got)
	}
	runTLSScript(t, dir, "--renew")
	if got := serial(client); got == before {
		t.Errorf("after --renew the running server still serves serial %s", got)
	}
}
