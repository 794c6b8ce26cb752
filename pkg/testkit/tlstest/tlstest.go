// Package tlstest makes the certificates TLS tests need, in the test: a
// private CA, and server or client certificates it signs (valid, expired,
// for another name), written as PEM files the way an operator or
// cert-manager would provide them.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a private certificate authority.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// File is the CA certificate, PEM.
	File string
}

// NewCA makes a CA named name and writes its certificate to dir/<name>.pem.
func NewCA(t testing.TB, dir, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{Cert: cert, key: key, File: filepath.Join(dir, name+".pem")}
	writePEM(t, ca.File, "CERTIFICATE", der)
	return ca
}

// Leaf is a certificate and key as files.
type Leaf struct{ CertFile, KeyFile string }

// Options shape an issued certificate.
type Options struct {
	// NotBefore and NotAfter default to an hour ago and a day ahead.
	NotBefore, NotAfter time.Time
	// DNSNames and IPs default to localhost, 127.0.0.1 and ::1.
	DNSNames []string
	IPs      []net.IP
}

// Issue signs a certificate named cn, usable by servers and clients, and
// writes it and its key to dir/<cn>.pem and dir/<cn>-key.pem.
func (ca *CA) Issue(t testing.TB, dir, cn string, o Options) Leaf {
	t.Helper()
	l := Leaf{CertFile: filepath.Join(dir, cn+".pem"), KeyFile: filepath.Join(dir, cn+"-key.pem")}
	ca.Write(t, l, cn, o)
	return l
}

// Write signs a new certificate named cn and (over)writes l's files with it
// and its new key: a rotation.
func (ca *CA) Write(t testing.TB, l Leaf, cn string, o Options) {
	t.Helper()
	if o.NotBefore.IsZero() {
		o.NotBefore = time.Now().Add(-time.Hour)
	}
	if o.NotAfter.IsZero() {
		o.NotAfter = time.Now().Add(24 * time.Hour)
	}
	if o.DNSNames == nil && o.IPs == nil {
		o.DNSNames = []string{"localhost"}
		o.IPs = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	}
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    o.NotBefore,
		NotAfter:     o.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     o.DNSNames,
		IPAddresses:  o.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, l.KeyFile, "PRIVATE KEY", kder)
	writePEM(t, l.CertFile, "CERTIFICATE", der)
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func writePEM(t testing.TB, file, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// LoadCA is the CA of certFile and keyFile (PEM; the key PKCS#8 or SEC 1
// EC, as openssl writes them), e.g. deploy/local/tls.sh's local CA, so a
// test can issue certificates the local servers trust: an expired one, one
// for another name.
func LoadCA(t testing.TB, certFile, keyFile string) *CA {
	t.Helper()
	block := func(file string) *pem.Block {
		t.Helper()
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := pem.Decode(raw)
		if b == nil {
			t.Fatalf("%s holds no PEM block", file)
		}
		return b
	}
	cert, err := x509.ParseCertificate(block(certFile).Bytes)
	if err != nil {
		t.Fatalf("CA certificate %s: %v", certFile, err)
	}
	kb := block(keyFile)
	var key *ecdsa.PrivateKey
	if k, err := x509.ParsePKCS8PrivateKey(kb.Bytes); err == nil {
		ek, ok := k.(*ecdsa.PrivateKey)
		if !ok {
			t.Fatalf("CA key %s is a %T, not an EC key", keyFile, k)
		}
		key = ek
	} else if key, err = x509.ParseECPrivateKey(kb.Bytes); err != nil {
		t.Fatalf("CA key %s: %v", keyFile, err)
	}
	return &CA{Cert: cert, key: key, File: certFile}
}
