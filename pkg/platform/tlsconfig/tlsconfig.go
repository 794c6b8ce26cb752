// Package tlsconfig builds the *tls.Config of resultsync's servers and
// clients from PEM files: a certificate and key that are re-read when the
// files change (a certificate rotated by cert-manager is served by the next
// handshake, without a restart), an optional CA that verifies the peer, an
// optional requirement of client certificates (mutual TLS), TLS 1.2 at
// least, and peer verification that can be switched off only in the local
// profile, loudly.
//
// Contracts: Server and Client read every file once before they return, so
// a missing or malformed file fails start-up; later, a certificate/key pair
// that does not load (a rotation half written) is logged and the previous
// pair is kept. A server's CA file is re-read the same way, so a CA bundle
// that gains the next CA is trusted without a restart; a client's CA file
// is read once (a new CA bundle takes a restart of the client).
package tlsconfig

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/resultsync/resultsync/pkg/platform/config"
)

// MinVersion is the oldest protocol version any side accepts.
const MinVersion = tls.VersionTLS12

// Files are the TLS settings of one side of a connection.
type Files struct {
	// CertFile and KeyFile are this side's certificate (chain) and private
	// key, PEM: a server's serving certificate, or a client's certificate
	// for mutual TLS. Both or neither.
	CertFile, KeyFile string
	// CAFile holds the PEM CA certificates that verify the peer: for a
	// server, client certificates; for a client, the server's certificate
	// (empty: the system roots).
	CAFile string
	// ClientAuth (servers) requires a client certificate signed by CAFile
	// on every connection. Without it, a certificate a client offers is
	// still verified against CAFile when CAFile is set.
	ClientAuth bool
	// Enable (clients) turns TLS on with the system roots when no file is
	// given; any CAFile, CertFile or InsecureSkipVerify turns it on too.
	Enable bool
	// ServerName (clients) is the name the server's certificate must carry
	// (empty: the host dialed).
	ServerName string
	// InsecureSkipVerify (clients) accepts any server certificate. Allowed
	// only when Profile is the local profile, and logged at every start.
	InsecureSkipVerify bool
	// Profile is the configuration profile (config.ProfileLocal or
	// production), filled by ClientFlags' loader.
	Profile string
}

// ServerEnabled reports whether a server serves TLS: a certificate is set.
func (f Files) ServerEnabled() bool { return f.CertFile != "" || f.KeyFile != "" }

// ClientEnabled reports whether a client dials TLS.
func (f Files) ClientEnabled() bool {
	return f.Enable || f.CAFile != "" || f.CertFile != "" || f.KeyFile != "" || f.InsecureSkipVerify
}

// ServerFlags registers the serving TLS settings every server shares:
// --tls-cert-file, --tls-key-file, --tls-ca-file and --tls-client-auth
// (env RS_TLS_CERT_FILE, RS_TLS_KEY_FILE, RS_TLS_CA_FILE, RS_TLS_CLIENT_AUTH).
func (f *Files) ServerFlags(l *config.Loader) {
	l.String(&f.CertFile, "tls-cert-file", "RS_TLS_CERT_FILE", "", "PEM certificate served on gRPC and HTTP; with --tls-key-file turns TLS on (re-read when it changes)")
	l.String(&f.KeyFile, "tls-key-file", "RS_TLS_KEY_FILE", "", "PEM private key of --tls-cert-file")
	l.String(&f.CAFile, "tls-ca-file", "RS_TLS_CA_FILE", "", "PEM CA certificates that verify client certificates")
	l.Bool(&f.ClientAuth, "tls-client-auth", "RS_TLS_CLIENT_AUTH", false, "require a client certificate signed by --tls-ca-file (mutual TLS)")
}

// ClientFlags registers the settings of a client dialing what: --<name>-tls,
// --<name>-tls-ca-file, --<name>-tls-cert-file, --<name>-tls-key-file,
// --<name>-tls-server-name and --<name>-tls-insecure-skip-verify, with
// environment variables <envPrefix>_TLS, <envPrefix>_TLS_CA_FILE and so on.
// The loader fills Profile.
func (f *Files) ClientFlags(l *config.Loader, name, envPrefix, what string) {
	l.Bool(&f.Enable, name+"-tls", envPrefix+"_TLS", false, "dial "+what+" over TLS (implied by any other "+name+"-tls setting)")
	l.String(&f.CAFile, name+"-tls-ca-file", envPrefix+"_TLS_CA_FILE", "", "PEM CA certificates that verify "+what+" (empty: system roots)")
	l.String(&f.CertFile, name+"-tls-cert-file", envPrefix+"_TLS_CERT_FILE", "", "PEM client certificate presented to "+what+" (re-read when it changes)")
	l.String(&f.KeyFile, name+"-tls-key-file", envPrefix+"_TLS_KEY_FILE", "", "PEM private key of --"+name+"-tls-cert-file")
	l.String(&f.ServerName, name+"-tls-server-name", envPrefix+"_TLS_SERVER_NAME", "", "name "+what+"'s certificate must carry (empty: the host dialed)")
	l.Bool(&f.InsecureSkipVerify, name+"-tls-insecure-skip-verify", envPrefix+"_TLS_INSECURE_SKIP_VERIFY", false,
		"accept any certificate from "+what+" (local profile only)")
	l.ProfileTo(&f.Profile)
}

// CheckServer reports impossible serving settings (without reading files).
func (f Files) CheckServer(what string) error {
	var errs []error
	if (f.CertFile == "") != (f.KeyFile == "") {
		errs = append(errs, fmt.Errorf("%s: the TLS certificate and key files go together (cert %q, key %q)", what, f.CertFile, f.KeyFile))
	}
	if f.ClientAuth && f.CAFile == "" {
		errs = append(errs, fmt.Errorf("%s: requiring client certificates needs a CA file to verify them", what))
	}
	if (f.ClientAuth || f.CAFile != "") && !f.ServerEnabled() {
		errs = append(errs, fmt.Errorf("%s: client certificates need TLS: set the certificate and key files", what))
	}
	return errors.Join(errs...)
}

// CheckClient reports impossible client settings (without reading files).
func (f Files) CheckClient(what string) error {
	var errs []error
	if (f.CertFile == "") != (f.KeyFile == "") {
		errs = append(errs, fmt.Errorf("%s: the TLS client certificate and key files go together (cert %q, key %q)", what, f.CertFile, f.KeyFile))
	}
	if f.InsecureSkipVerify && f.Profile != config.ProfileLocal {
		errs = append(errs, fmt.Errorf("%s: TLS insecure-skip-verify is allowed only with --profile=local", what))
	}
	return errors.Join(errs...)
}

// Server returns the configuration of a TLS server for valid settings with
// ServerEnabled: the certificate re-read on change, TLS 1.2 at least, and
// client certificates verified against CAFile (required with ClientAuth).
func Server(log *slog.Logger, f Files) (*tls.Config, error) {
	if err := f.CheckServer("server"); err != nil {
		return nil, err
	}
	if !f.ServerEnabled() {
		return nil, errors.New("server TLS: no certificate and key files")
	}
	kp, err := newKeyPair(log, f.CertFile, f.KeyFile)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		MinVersion:     MinVersion,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return kp.get() },
	}
	if f.CAFile != "" {
		// Client certificates are verified against the CA file as it is
		// now (re-read when it changes), not a pool fixed at start-up.
		ca, err := newCAPool(log, f.CAFile)
		if err != nil {
			return nil, err
		}
		cfg.ClientAuth = tls.RequestClientCert
		if f.ClientAuth {
			cfg.ClientAuth = tls.RequireAnyClientCert
		}
		cfg.VerifyConnection = ca.verifyClient // every handshake, resumed ones too
	}
	log.Info("TLS serving", "cert_file", f.CertFile, "ca_file", f.CAFile, "client_auth", f.ClientAuth)
	return cfg, nil
}

// Client returns the configuration of a TLS client for valid settings: the
// server verified against CAFile (or the system roots) and ServerName, the
// client certificate re-read on change, TLS 1.2 at least. With
// InsecureSkipVerify (local profile only) it logs a warning saying the
// peer is not verified.
func Client(log *slog.Logger, f Files, what string) (*tls.Config, error) {
	if err := f.CheckClient(what); err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: MinVersion, ServerName: f.ServerName}
	if f.CAFile != "" {
		pool, err := loadPool(f.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		cfg.RootCAs = pool
	}
	if f.CertFile != "" {
		kp, err := newKeyPair(log, f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return kp.get() }
	}
	if f.InsecureSkipVerify {
		log.Warn("TLS PEER VERIFICATION IS OFF: any certificate is accepted, so the connection is encrypted but not authenticated; local profile only",
			"peer", what)
		cfg.InsecureSkipVerify = true //nolint:gosec // allowed only in the local profile (CheckClient), and logged
	}
	return cfg, nil
}

// OptionalClientCert makes a server configuration of Server verify a
// client certificate only when one is offered (a listener for probes and
// scrapers next to a mutual-TLS one).
func OptionalClientCert(c *tls.Config) {
	if c.ClientAuth == tls.RequireAnyClientCert {
		c.ClientAuth = tls.RequestClientCert
	}
}

// caPool is a CA file re-read when its content changes.
type caPool struct {
	log  *slog.Logger
	file string

	mu   sync.Mutex
	pem  []byte
	pool *x509.CertPool
}

func newCAPool(log *slog.Logger, file string) (*caPool, error) {
	p := &caPool{log: log, file: file}
	if _, err := p.get(); err != nil {
		return nil, err
	}
	return p, nil
}

// get returns the pool of the file's current content; a file that no longer
// reads or holds no certificate keeps the previous pool (logged).
func (p *caPool) get() (*x509.CertPool, error) {
	pem, err := os.ReadFile(p.file)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil && p.pool != nil && bytes.Equal(pem, p.pem) {
		return p.pool, nil
	}
	if err == nil {
		pool := x509.NewCertPool()
		if pool.AppendCertsFromPEM(pem) {
			if p.pool != nil {
				p.log.Info("TLS CA file reloaded", "file", p.file)
			}
			p.pem, p.pool = pem, pool
			return pool, nil
		}
		err = fmt.Errorf("CA file %s holds no PEM certificate", p.file)
	}
	if p.pool == nil {
		return nil, fmt.Errorf("reading CA file: %w", err)
	}
	p.log.Warn("TLS CA file does not load; keeping the previous CAs", "err", err)
	return p.pool, nil
}

// verifyClient verifies an offered client certificate chain against the
// current CAs, for client authentication (tls.Config.VerifyConnection of a
// server asking for any certificate: it runs on resumed sessions too); no
// certificate passes (the ClientAuth mode decides whether one is required).
func (p *caPool) verifyClient(cs tls.ConnectionState) error {
	certs := cs.PeerCertificates
	if len(certs) == 0 {
		return nil
	}
	roots, err := p.get()
	if err != nil {
		return err
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	if _, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return fmt.Errorf("verifying the client certificate %q: %w", certs[0].Subject.CommonName, err)
	}
	return nil
}

func loadPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file) //nolint:gosec // the file is the operator's setting
	if err != nil {
		return nil, fmt.Errorf("reading CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA file %s holds no PEM certificate", file)
	}
	return pool, nil
}

// keyPair is a certificate and key re-read when either file's content
// changes.
type keyPair struct {
	log               *slog.Logger
	certFile, keyFile string

	mu        sync.Mutex
	certPEM   []byte
	keyPEM    []byte
	cert      *tls.Certificate
	lastError string
}

func newKeyPair(log *slog.Logger, certFile, keyFile string) (*keyPair, error) {
	kp := &keyPair{log: log, certFile: certFile, keyFile: keyFile}
	if _, err := kp.get(); err != nil {
		return nil, err
	}
	return kp, nil
}

// get returns the current pair: the files are read at every handshake (two
// small reads per connection) and parsed again only when their content
// changed. A pair that fails to load while an earlier one was loaded keeps
// the earlier one (logged once per distinct error).
func (k *keyPair) get() (*tls.Certificate, error) {
	certPEM, cerr := os.ReadFile(k.certFile)
	keyPEM, kerr := os.ReadFile(k.keyFile)
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := errors.Join(cerr, kerr); err != nil {
		return k.keep(fmt.Errorf("reading TLS certificate %s and key %s: %w", k.certFile, k.keyFile, err))
	}
	if k.cert != nil && bytes.Equal(certPEM, k.certPEM) && bytes.Equal(keyPEM, k.keyPEM) {
		return k.cert, nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return k.keep(fmt.Errorf("loading TLS certificate %s and key %s: %w", k.certFile, k.keyFile, err))
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return k.keep(fmt.Errorf("parsing TLS certificate %s: %w", k.certFile, err))
		}
	}
	first := k.cert == nil
	k.cert, k.certPEM, k.keyPEM, k.lastError = &cert, certPEM, keyPEM, ""
	msg := "TLS certificate loaded"
	if !first {
		msg = "TLS certificate reloaded"
	}
	k.log.Info(msg, "file", k.certFile, "subject", cert.Leaf.Subject.String(), "not_after", cert.Leaf.NotAfter)
	if time.Now().After(cert.Leaf.NotAfter) {
		k.log.Error("TLS certificate has expired: peers will refuse it", "file", k.certFile, "not_after", cert.Leaf.NotAfter)
	}
	return k.cert, nil
}

func (k *keyPair) keep(err error) (*tls.Certificate, error) {
	if k.cert == nil {
		return nil, err
	}
	if err.Error() != k.lastError {
		k.log.Warn("TLS certificate files do not load; keeping the previous certificate", "err", err)
		k.lastError = err.Error()
	}
	return k.cert, nil
}
