package tlsconfig_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/platform/config"
	"github.com/resultsync/resultsync/pkg/platform/tlsconfig"
	"github.com/resultsync/resultsync/pkg/testkit/tlstest"
)

func logger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// serve runs a TLS server with cfg on 127.0.0.1:0 that completes each
// handshake and writes "ok\n"; handshake errors are sent on the returned
// channel.
func serve(t *testing.T, cfg *tls.Config) (string, <-chan error) {
	t.Helper()
	var lc net.ListenConfig
	lis, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lis.Close() })
	errc := make(chan error, 16)
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				tc := tls.Server(c, cfg)
				if err := tc.Handshake(); err != nil {
					select {
					case errc <- err:
					default:
					}
					return
				}
				_, _ = tc.Write([]byte("ok\n"))
			}()
		}
	}()
	return lis.Addr().String(), errc
}

// dial completes a handshake with cfg and returns the server certificate's
// common name (after reading the server's "ok", so a refused client
// certificate shows as an error here too).
func dial(t *testing.T, addr string, cfg *tls.Config) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d := tls.Dialer{Config: cfg}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 3)
	if _, err := io.ReadFull(c, buf); err != nil {
		return "", err
	}
	return c.(*tls.Conn).ConnectionState().PeerCertificates[0].Subject.CommonName, nil
}

func mustServer(t *testing.T, f tlsconfig.Files) *tls.Config {
	t.Helper()
	cfg, err := tlsconfig.Server(logger(), f)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func mustClient(t *testing.T, f tlsconfig.Files) *tls.Config {
	t.Helper()
	cfg, err := tlsconfig.Client(logger(), f, "test server")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestRotationIsServedWithoutRestart(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	srv := ca.Issue(t, dir, "server-one", tlstest.Options{})
	cli := ca.Issue(t, dir, "client-one", tlstest.Options{})
	addr, _ := serve(t, mustServer(t, tlsconfig.Files{CertFile: srv.CertFile, KeyFile: srv.KeyFile, CAFile: ca.File, ClientAuth: true}))
	client := mustClient(t, tlsconfig.Files{CAFile: ca.File, CertFile: cli.CertFile, KeyFile: cli.KeyFile})

	if cn, err := dial(t, addr, client); err != nil || cn != "server-one" {
		t.Fatalf("before rotation: server %q, %v; want server-one", cn, err)
	}
	// cert-manager writes a new certificate and key to the same files.
	ca.Write(t, srv, "server-two", tlstest.Options{})
	if cn, err := dial(t, addr, client); err != nil || cn != "server-two" {
		t.Fatalf("after rotation: server %q, %v; want server-two", cn, err)
	}
	// The client's certificate rotates the same way: an expired one
	// written in place is what the client presents next (and is refused).
	ca.Write(t, cli, "client-two", tlstest.Options{NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	if _, err := dial(t, addr, client); err == nil {
		t.Fatal("the client's expired certificate, written in place, was accepted: the client did not re-read it")
	}
}

func TestHalfWrittenRotationKeepsThePreviousCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	srv := ca.Issue(t, dir, "server-one", tlstest.Options{})
	other := ca.Issue(t, dir, "other", tlstest.Options{})
	addr, _ := serve(t, mustServer(t, tlsconfig.Files{CertFile: srv.CertFile, KeyFile: srv.KeyFile}))
	client := mustClient(t, tlsconfig.Files{CAFile: ca.File})
	if cn, err := dial(t, addr, client); err != nil || cn != "server-one" {
		t.Fatalf("server %q, %v; want server-one", cn, err)
	}
	// Only the certificate is replaced so far: it does not match the key.
	copyFile(t, other.CertFile, srv.CertFile)
	if cn, err := dial(t, addr, client); err != nil || cn != "server-one" {
		t.Fatalf("during a half-written rotation: server %q, %v; want the previous server-one", cn, err)
	}
	copyFile(t, other.KeyFile, srv.KeyFile)
	if cn, err := dial(t, addr, client); err != nil || cn != "other" {
		t.Fatalf("after the rotation completed: server %q, %v; want other", cn, err)
	}
}

func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	otherCA := tlstest.NewCA(t, dir, "other-ca")
	srv := ca.Issue(t, dir, "server", tlstest.Options{})
	expired := ca.Issue(t, dir, "expired", tlstest.Options{NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	cli := ca.Issue(t, dir, "client", tlstest.Options{})
	foreignCli := otherCA.Issue(t, dir, "foreign-client", tlstest.Options{})
	wrongName := ca.Issue(t, dir, "wrong-name", tlstest.Options{DNSNames: []string{"elsewhere.example"}})

	mtls, mtlsErrs := serve(t, mustServer(t, tlsconfig.Files{CertFile: srv.CertFile, KeyFile: srv.KeyFile, CAFile: ca.File, ClientAuth: true}))
	expiredSrv, _ := serve(t, mustServer(t, tlsconfig.Files{CertFile: expired.CertFile, KeyFile: expired.KeyFile}))
	wrongNameSrv, _ := serve(t, mustServer(t, tlsconfig.Files{CertFile: wrongName.CertFile, KeyFile: wrongName.KeyFile}))

	good := tlsconfig.Files{CAFile: ca.File, CertFile: cli.CertFile, KeyFile: cli.KeyFile}
	if _, err := dial(t, mtls, mustClient(t, good)); err != nil {
		t.Fatalf("the right CA and client certificate: %v", err)
	}
	for _, tc := range []struct {
		name   string
		addr   string
		client tlsconfig.Files
		want   string // in the client's error
		server string // in the mTLS server's handshake error, when set
	}{
		{"client trusts another CA", mtls, tlsconfig.Files{CAFile: otherCA.File, CertFile: cli.CertFile, KeyFile: cli.KeyFile}, "unknown authority", ""},
		{"server certificate expired", expiredSrv, tlsconfig.Files{CAFile: ca.File}, "expired", ""},
		{"server certificate for another name", wrongNameSrv, tlsconfig.Files{CAFile: ca.File}, "cannot validate certificate for 127.0.0.1", ""},
		{"client without certificate, mTLS required", mtls, tlsconfig.Files{CAFile: ca.File}, "certificate required", ""},
		{"client certificate from another CA", mtls, tlsconfig.Files{CAFile: ca.File, CertFile: foreignCli.CertFile, KeyFile: foreignCli.KeyFile}, "bad certificate", "unknown authority"},
		{"client certificate expired", mtls, tlsconfig.Files{CAFile: ca.File, CertFile: expired.CertFile, KeyFile: expired.KeyFile}, "bad certificate", "expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drainErrs(mtlsErrs)
			cn, err := dial(t, tc.addr, mustClient(t, tc.client))
			if err == nil {
				t.Fatalf("connected to %q; want a refusal", cn)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if tc.server == "" {
				return
			}
			select {
			case serr := <-mtlsErrs:
				if !strings.Contains(serr.Error(), tc.server) {
					t.Errorf("server's handshake error %q does not say %q", serr, tc.server)
				}
			case <-time.After(5 * time.Second):
				t.Error("the server reported no handshake failure")
			}
		})
	}
}

func drainErrs(c <-chan error) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// A server's CA file is re-read when it changes: a client whose CA joins
// the bundle is accepted without a restart, and refused again once it
// leaves; a bundle that does not load keeps the CAs before.
func TestServerCARotationWithoutRestart(t *testing.T) {
	dir := t.TempDir()
	oldCA := tlstest.NewCA(t, dir, "old-ca")
	newCA := tlstest.NewCA(t, dir, "new-ca")
	srv := oldCA.Issue(t, dir, "server", tlstest.Options{})
	bundle := dir + "/bundle.pem"
	copyFile(t, oldCA.File, bundle)
	addr, _ := serve(t, mustServer(t, tlsconfig.Files{CertFile: srv.CertFile, KeyFile: srv.KeyFile, CAFile: bundle, ClientAuth: true}))
	oldCli := oldCA.Issue(t, dir, "old-client", tlstest.Options{})
	newCli := newCA.Issue(t, dir, "new-client", tlstest.Options{})
	client := func(l tlstest.Leaf) *tls.Config {
		return mustClient(t, tlsconfig.Files{CAFile: oldCA.File, CertFile: l.CertFile, KeyFile: l.KeyFile})
	}
	if _, err := dial(t, addr, client(oldCli)); err != nil {
		t.Fatalf("a client of the old CA: %v", err)
	}
	if _, err := dial(t, addr, client(newCli)); err == nil {
		t.Fatal("a client of the new CA was accepted before the bundle named it")
	}
	old, err := os.ReadFile(oldCA.File)
	if err != nil {
		t.Fatal(err)
	}
	next, err := os.ReadFile(newCA.File)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bundle, append(append([]byte{}, old...), next...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := dial(t, addr, client(newCli)); err != nil {
		t.Fatalf("a client of the new CA after the bundle gained it: %v", err)
	}
	if err := os.WriteFile(bundle, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := dial(t, addr, client(newCli)); err != nil {
		t.Fatalf("a broken bundle did not keep the previous CAs: %v", err)
	}
	copyFile(t, newCA.File, bundle)
	if _, err := dial(t, addr, client(oldCli)); err == nil {
		t.Fatal("a client of the old CA was accepted after the bundle dropped it")
	}
}

func TestPlaintextClientIsRefused(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	srv := ca.Issue(t, dir, "server", tlstest.Options{})
	addr, errc := serve(t, mustServer(t, tlsconfig.Files{CertFile: srv.CertFile, KeyFile: srv.KeyFile}))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(c)
	if strings.Contains(string(got), "ok") {
		t.Errorf("a plaintext client was answered: %q", got)
	}
	select {
	case err := <-errc:
		var rh tls.RecordHeaderError
		if !errors.As(err, &rh) {
			t.Errorf("server handshake error %v; want a record header error (not TLS)", err)
		}
	case <-ctx.Done():
		t.Fatal("the server reported no handshake failure")
	}
}

func TestChecks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		wantOK bool
		want   string
	}{
		{"server cert without key", tlsconfig.Files{CertFile: "c"}.CheckServer("s"), false, "go together"},
		{"server client auth without CA", tlsconfig.Files{CertFile: "c", KeyFile: "k", ClientAuth: true}.CheckServer("s"), false, "needs a CA file"},
		{"server CA without certificate", tlsconfig.Files{CAFile: "ca"}.CheckServer("s"), false, "need TLS"},
		{"server off", tlsconfig.Files{}.CheckServer("s"), true, ""},
		{"server mutual", tlsconfig.Files{CertFile: "c", KeyFile: "k", CAFile: "ca", ClientAuth: true}.CheckServer("s"), true, ""},
		{"client key without cert", tlsconfig.Files{KeyFile: "k"}.CheckClient("c"), false, "go together"},
		{"client skip verify in production", tlsconfig.Files{InsecureSkipVerify: true}.CheckClient("c"), false, "only with --profile=local"},
		{"client skip verify in the local profile", tlsconfig.Files{InsecureSkipVerify: true, Profile: config.ProfileLocal}.CheckClient("c"), true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wantOK {
				if tc.err != nil {
					t.Fatalf("error %v; want none", tc.err)
				}
				return
			}
			if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
				t.Fatalf("error %v; want one saying %q", tc.err, tc.want)
			}
		})
	}
}

func TestMissingOrMalformedFilesFailAtStart(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	srv := ca.Issue(t, dir, "server", tlstest.Options{})
	if _, err := tlsconfig.Server(logger(), tlsconfig.Files{CertFile: srv.CertFile, KeyFile: dir + "/missing.pem"}); err == nil {
		t.Error("a missing key file was accepted")
	}
	if _, err := tlsconfig.Server(logger(), tlsconfig.Files{CertFile: srv.CertFile, KeyFile: srv.KeyFile, CAFile: srv.KeyFile}); err == nil {
		t.Error("a CA file without certificates was accepted")
	}
	if _, err := tlsconfig.Client(logger(), tlsconfig.Files{CAFile: dir + "/missing.pem"}, "x"); err == nil {
		t.Error("a missing CA file was accepted")
	}
}

func TestMinimumVersion(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	srv := ca.Issue(t, dir, "server", tlstest.Options{})
	addr, _ := serve(t, mustServer(t, tlsconfig.Files{CertFile: srv.CertFile, KeyFile: srv.KeyFile}))
	old := mustClient(t, tlsconfig.Files{CAFile: ca.File})
	old.MinVersion, old.MaxVersion = tls.VersionTLS11, tls.VersionTLS11 //nolint:gosec // the refusal under test
	if _, err := dial(t, addr, old); err == nil {
		t.Fatal("a TLS 1.1 client was served")
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
