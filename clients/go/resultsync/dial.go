// Package resultsync is the Go client helper of resultsync's gRPC APIs,
// beside the generated code (github.com/resultsync/resultsync/gen/fitness/v1):
//
//   - Dial opens a connection with the bearer token sent on every call
//     (Options.Token, else $RS_TOKEN, as rsctl does), plaintext or TLS with
//     a private CA and a client certificate (mutual TLS), and the service
//     configuration every client ships (package serviceconfig: round robin
//     over every address of the target, retries of the idempotent methods
//     on UNAVAILABLE);
//   - Reason, RetryDelay, FieldViolations and VersionConflict read the typed
//     details of an error (docs/calling.md): match on the reason, never on
//     the message.
package resultsync

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/resultsync/resultsync/clients/go/serviceconfig"
)

// TokenEnv is the environment variable Dial reads the bearer token from
// when Options.Token is empty (rsctl's convention).
const TokenEnv = "RS_TOKEN"

// Options configure Dial. The zero value dials in plaintext with $RS_TOKEN
// (if set) and the default service configuration.
type Options struct {
	// Token is the bearer token sent as "authorization: Bearer <token>"
	// with every call, unary and streaming; empty: $RS_TOKEN; no token is
	// sent when both are empty.
	Token string
	// TLS dials over TLS when not nil; nil dials in plaintext (the local
	// stack without RS_TLS=1).
	TLS *TLS
	// ServiceConfig replaces serviceconfig.JSON (the default) when set.
	ServiceConfig string
	// DialOptions are appended to Dial's own (interceptors, keepalive, ...).
	DialOptions []grpc.DialOption
}

// TLS are the PEM files of a TLS connection.
type TLS struct {
	// CAFile holds the CA certificates that verify the server; empty: the
	// system roots.
	CAFile string
	// CertFile and KeyFile are the client certificate and its key, for
	// servers that require one (mutual TLS); both or neither. They are read
	// again at each handshake, so a rotated certificate is used without a
	// new Dial.
	CertFile, KeyFile string
	// ServerName is the name the server's certificate must carry; empty:
	// the host dialed.
	ServerName string
}

// Dial returns a connection to target ("host:port", or any gRPC target
// such as "dns:///results.resultsync.svc:7101" to balance over every
// address of the name). Like grpc.NewClient it connects lazily: a server
// that is down fails the first call (after the retries of a retried method)
// with UNAVAILABLE. Service configurations published in DNS are ignored:
// the policy is the client's.
func Dial(target string, o Options) (*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if o.TLS != nil {
		tc, err := o.TLS.Config()
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(tc)
	}
	sc := o.ServiceConfig
	if sc == "" {
		sc = serviceconfig.JSON
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds),
		grpc.WithDisableServiceConfig(), grpc.WithDefaultServiceConfig(sc)}
	token := o.Token
	if token == "" {
		token = os.Getenv(TokenEnv)
	}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(Bearer(token)))
	}
	conn, err := grpc.NewClient(target, append(opts, o.DialOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("resultsync: dialing %s: %w", target, err)
	}
	return conn, nil
}

// Bearer returns per-RPC credentials that send "authorization: Bearer
// <token>" with every call. They are allowed over plaintext (the local
// stack's development tokens); in production dial over TLS.
func Bearer(token string) credentials.PerRPCCredentials { return bearer(token) }

type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (bearer) RequireTransportSecurity() bool { return false }

// Config returns the crypto/tls configuration of these files: the CA read
// now, the client certificate read now (to fail early) and again at each
// handshake.
func (t *TLS) Config() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("resultsync: reading the CA: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("resultsync: %s holds no PEM certificate", t.CAFile)
		}
	}
	switch {
	case t.CertFile == "" && t.KeyFile == "":
	case t.CertFile == "" || t.KeyFile == "":
		return nil, errors.New("resultsync: a client certificate needs both CertFile and KeyFile")
	default:
		if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
			return nil, fmt.Errorf("resultsync: reading the client certificate: %w", err)
		}
		certFile, keyFile := t.CertFile, t.KeyFile
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				return nil, fmt.Errorf("resultsync: reading the client certificate: %w", err)
			}
			return &c, nil
		}
	}
	return tc, nil
}
