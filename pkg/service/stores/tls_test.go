package stores_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/platform/config"
	"github.com/resultsync/resultsync/pkg/platform/tlsconfig"
	"github.com/resultsync/resultsync/pkg/service/stores"
	"github.com/resultsync/resultsync/pkg/testkit/configtest"
	"github.com/resultsync/resultsync/pkg/testkit/tlstest"
)

// The TLS settings of the stores: a DSN selects the registered MySQL
// configuration with tls=resultsync, and the two must go together; skip
// verify is only for the local profile.
func TestTLSSettingsChecks(t *testing.T) {
	const (
		plain  = "a=u:p@tcp(h:1)/a,b=u:p@tcp(h:1)/b"
		tlsMap = "a=u:p@tcp(h:1)/a?tls=resultsync,b=u:p@tcp(h:1)/b?tls=resultsync"
		ctl    = "u:p@tcp(h:1)/c"
		ctlTLS = "u:p@tcp(h:1)/c?tls=resultsync"
	)
	ca := tlsconfig.Files{CAFile: "ca.pem"}
	for _, tc := range []struct {
		name string
		s    stores.Settings
		want []string // none: valid
	}{
		{"MySQL TLS on every DSN", stores.Settings{Shards: tlsMap, ControlDSN: ctlTLS, MySQLTLS: ca, CHAddr: "h:9440", CHDatabase: "d", CHTLS: ca}, nil},
		{"system roots (tls=true) need no setting", stores.Settings{Shards: "a=u:p@tcp(h:1)/a?tls=true,b=u:p@tcp(h:1)/b?tls=true", ControlDSN: ctl, CHAddr: "h:9000", CHDatabase: "d"}, nil},
		{"a DSN selects tls=resultsync without settings", stores.Settings{Shards: tlsMap, ControlDSN: ctlTLS, CHAddr: "h:9000", CHDatabase: "d"},
			[]string{"shard a: the DSN selects tls=resultsync but no MySQL TLS setting", "shard b:", "control-dsn: the DSN selects"}},
		{"settings a DSN does not select", stores.Settings{Shards: "a=u:p@tcp(h:1)/a?tls=resultsync,b=u:p@tcp(h:1)/b", ControlDSN: ctl, MySQLTLS: ca, CHAddr: "h:9000", CHDatabase: "d"},
			[]string{"shard b: MySQL TLS settings are given but the DSN does not select them", "control-dsn: MySQL TLS settings"}},
		{"skip verify in production", stores.Settings{Shards: tlsMap, ControlDSN: ctlTLS, MySQLTLS: tlsconfig.Files{InsecureSkipVerify: true},
			CHAddr: "h:9440", CHDatabase: "d", CHTLS: tlsconfig.Files{InsecureSkipVerify: true}},
			[]string{"mysql TLS: TLS insecure-skip-verify is allowed only with --profile=local", "clickhouse TLS: TLS insecure-skip-verify"}},
		{"skip verify in the local profile", stores.Settings{Shards: tlsMap, ControlDSN: ctlTLS, MySQLTLS: tlsconfig.Files{InsecureSkipVerify: true, Profile: config.ProfileLocal},
			CHAddr: "h:9440", CHDatabase: "d", CHTLS: tlsconfig.Files{InsecureSkipVerify: true, Profile: config.ProfileLocal}}, nil},
		{"client certificate without key", stores.Settings{Shards: tlsMap, ControlDSN: ctlTLS, MySQLTLS: tlsconfig.Files{CertFile: "c.pem"},
			CHAddr: "h:9440", CHDatabase: "d", CHTLS: tlsconfig.Files{KeyFile: "k.pem"}},
			[]string{"mysql TLS: the TLS client certificate and key files go together", "clickhouse TLS: the TLS client certificate"}},
		{"plain", stores.Settings{Shards: plain, ControlDSN: ctl, CHAddr: "h:9000", CHDatabase: "d"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Check(stores.All, false)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("= %v, want valid", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// The flags and environment variables of the stores' TLS settings, and the
// profile that allows skip verify.
func TestTLSFlags(t *testing.T) {
	configtest.ClearEnv(t)
	t.Setenv("RS_CH_TLS_CA_FILE", "/etc/rs/ch-ca.pem")
	l := config.NewLoader("test")
	var s stores.Settings
	s.Flags(l, stores.All, stores.Help{})
	if err := l.Parse([]string{"--profile=local", "--mysql-tls-ca-file=/etc/rs/ca.pem", "--mysql-tls-cert-file=/etc/rs/c.pem",
		"--mysql-tls-key-file=/etc/rs/k.pem", "--mysql-tls-server-name=mysql.internal", "--clickhouse-tls-insecure-skip-verify"}); err != nil {
		t.Fatal(err)
	}
	want := tlsconfig.Files{CAFile: "/etc/rs/ca.pem", CertFile: "/etc/rs/c.pem", KeyFile: "/etc/rs/k.pem", ServerName: "mysql.internal", Profile: "local"}
	if s.MySQLTLS != want {
		t.Errorf("MySQL TLS %+v; want %+v", s.MySQLTLS, want)
	}
	wantCH := tlsconfig.Files{CAFile: "/etc/rs/ch-ca.pem", InsecureSkipVerify: true, Profile: "local"}
	if s.CHTLS != wantCH {
		t.Errorf("ClickHouse TLS %+v; want %+v", s.CHTLS, wantCH)
	}
}

// ClickHouse connections dial TLS with the private CA and present the client
// certificate (against a TLS endpoint: the local ClickHouse has no secure
// port), and refuse a server certificate of another CA.
func TestClickHouseDialsTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	other := tlstest.NewCA(t, dir, "other-ca")
	srv := ca.Issue(t, dir, "clickhouse", tlstest.Options{})
	cli := ca.Issue(t, dir, "consumer", tlstest.Options{})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	scfg, err := tlsconfig.Server(log, tlsconfig.Files{CertFile: srv.CertFile, KeyFile: srv.KeyFile, CAFile: ca.File, ClientAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	addr, got := tlstest.Handshakes(t, scfg)
	ping := func(f tlsconfig.Files) error {
		p, err := stores.Open(stores.Settings{CHAddr: addr, CHDatabase: "d", CHTLS: f}, stores.ClickHouse, stores.Options{Log: log, CHDialTimeout: 2 * time.Second})
		if err != nil {
			return err
		}
		defer p.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		return p.CH.Ping(ctx)
	}
	next := func() string {
		select {
		case s := <-got:
			return s
		case <-time.After(5 * time.Second):
			return "no connection"
		}
	}
	_ = ping(tlsconfig.Files{CAFile: ca.File, CertFile: cli.CertFile, KeyFile: cli.KeyFile})
	if s := next(); s != "client consumer" {
		t.Errorf("the ClickHouse client's handshake: %s; want one presenting the consumer certificate", s)
	}
	err = ping(tlsconfig.Files{CAFile: other.File, CertFile: cli.CertFile, KeyFile: cli.KeyFile})
	if err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Errorf("a server of another CA: %v; want an unknown authority", err)
	}
}

func TestPulsarTLSFlags(t *testing.T) {
	configtest.ClearEnv(t)
	t.Setenv("RS_PULSAR_TLS_CA_FILE", "/etc/rs/ca.pem")
	l := config.NewLoader("test")
	var f tlsconfig.Files
	stores.PulsarTLSFlags(l, &f)
	if err := l.Parse([]string{"--pulsar-tls-cert-file=/etc/rs/relay.pem", "--pulsar-tls-key-file=/etc/rs/relay-key.pem"}); err != nil {
		t.Fatal(err)
	}
	if want := (tlsconfig.Files{CAFile: "/etc/rs/ca.pem", CertFile: "/etc/rs/relay.pem", KeyFile: "/etc/rs/relay-key.pem"}); f != want {
		t.Errorf("Pulsar TLS %+v; want %+v", f, want)
	}
}
