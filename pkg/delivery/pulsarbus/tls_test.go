package pulsarbus_test

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/platform/config"
	"github.com/resultsync/resultsync/pkg/platform/tlsconfig"
	"github.com/resultsync/resultsync/pkg/testkit/tlstest"
)

func TestTLSOptionsValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    pulsarbus.Options
		want string // "": valid
	}{
		{"TLS files with pulsar://", pulsarbus.Options{URL: "pulsar://h:6650", TLS: tlsconfig.Files{CAFile: "ca.pem"}}, "need a pulsar+ssl:// URL"},
		{"skip verify in production", pulsarbus.Options{URL: "pulsar+ssl://h:6651", TLS: tlsconfig.Files{InsecureSkipVerify: true}}, "only with --profile=local"},
		{"server name", pulsarbus.Options{URL: "pulsar+ssl://h:6651", TLS: tlsconfig.Files{ServerName: "x"}}, "not supported"},
		{"certificate without key", pulsarbus.Options{URL: "pulsar+ssl://h:6651", TLS: tlsconfig.Files{CertFile: "c.pem"}}, "go together"},
		{"private CA and client certificate", pulsarbus.Options{URL: "pulsar+ssl://h:6651", TLS: tlsconfig.Files{CAFile: "ca.pem", CertFile: "c.pem", KeyFile: "k.pem"}}, ""},
		{"skip verify in the local profile", pulsarbus.Options{URL: "pulsar+ssl://h:6651", TLS: tlsconfig.Files{InsecureSkipVerify: true, Profile: config.ProfileLocal}}, ""},
		{"system roots", pulsarbus.Options{URL: "pulsar+ssl://h:6651"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("= %v; want valid", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("= %v; want an error saying %q", err, tc.want)
			}
		})
	}
}

// A pulsar+ssl:// client verifies the broker against the private CA and its
// host name and presents its client certificate (against a TLS endpoint:
// the local broker serves no TLS port).
func TestClientDialsTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	other := tlstest.NewCA(t, dir, "other-ca")
	srv := ca.Issue(t, dir, "broker", tlstest.Options{})
	cli := ca.Issue(t, dir, "relay", tlstest.Options{})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	scfg, err := tlsconfig.Server(log, tlsconfig.Files{CertFile: srv.CertFile, KeyFile: srv.KeyFile, CAFile: ca.File, ClientAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	url, got := tlsEndpoint(t, scfg)
	wrongName := ca.Issue(t, dir, "wrong-name", tlstest.Options{DNSNames: []string{"broker.internal"}})
	wcfg, err := tlsconfig.Server(log, tlsconfig.Files{CertFile: wrongName.CertFile, KeyFile: wrongName.KeyFile})
	if err != nil {
		t.Fatal(err)
	}
	wrongURL, wrongGot := tlsEndpoint(t, wcfg)
	connect := func(url string, f tlsconfig.Files) {
		t.Helper()
		c, err := pulsarbus.NewClient(log, pulsarbus.Options{URL: url, TLS: f, OperationTimeout: 2 * time.Second, ConnectionTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: pulsarbus.Topic("public", "default", "tls-probe")})
		if err == nil {
			p.Close()
			t.Fatal("a producer was created against a TLS endpoint that speaks no Pulsar")
		}
	}
	next := func(got <-chan string) string {
		select {
		case s := <-got:
			return s
		case <-time.After(5 * time.Second):
			return "no connection"
		}
	}
	connect(url, tlsconfig.Files{CAFile: ca.File, CertFile: cli.CertFile, KeyFile: cli.KeyFile})
	if s := next(got); s != "client relay" {
		t.Errorf("the client's handshake: %s; want one presenting the relay certificate", s)
	}
	drain(got)
	connect(url, tlsconfig.Files{CAFile: other.File, CertFile: cli.CertFile, KeyFile: cli.KeyFile})
	if s := next(got); !strings.HasPrefix(s, "error: ") {
		t.Errorf("a client trusting another CA: %s; want the handshake refused", s)
	}
	connect(wrongURL, tlsconfig.Files{CAFile: ca.File})
	if s := next(wrongGot); !strings.HasPrefix(s, "error: ") {
		t.Errorf("a broker certificate for another host: %s; want the handshake refused (host name validated)", s)
	}
}

// tlsEndpoint is a tlstest.Handshakes endpoint (it speaks no Pulsar) by
// its pulsar+ssl:// URL with the name localhost.
func tlsEndpoint(t *testing.T, cfg *tls.Config) (string, <-chan string) {
	t.Helper()
	addr, got := tlstest.Handshakes(t, cfg)
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return "pulsar+ssl://localhost:" + port, got
}

func drain(c <-chan string) {
	for {
		select {
		case <-c:
		case <-time.After(100 * time.Millisecond):
			return
		}
	}
}
