package auth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/config"
)

// signer is a private key with its kid and algorithm.
type signer struct {
	kid  string
	alg  jwt.SigningMethod
	priv crypto.Signer
}

func newES256(t *testing.T, kid string) signer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signer{kid: kid, alg: jwt.SigningMethodES256, priv: k}
}

func newEd25519(t *testing.T, kid string) signer {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return signer{kid: kid, alg: jwt.SigningMethodEdDSA, priv: k}
}

func newRS256(t *testing.T, kid string) signer {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return signer{kid: kid, alg: jwt.SigningMethodRS256, priv: k}
}

func b64u(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// jwks is the JWKS document of the signers' public keys.
func jwks(t *testing.T, ss ...signer) []byte {
	t.Helper()
	var keys []map[string]string
	for _, s := range ss {
		switch p := s.priv.Public().(type) {
		case *ecdsa.PublicKey:
			b, err := p.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, map[string]string{"kty": "EC", "crv": "P-256", "kid": s.kid, "x": b64u(b[1:33]), "y": b64u(b[33:])})
		case ed25519.PublicKey:
			keys = append(keys, map[string]string{"kty": "OKP", "crv": "Ed25519", "kid": s.kid, "x": b64u(p)})
		case *rsa.PublicKey:
			keys = append(keys, map[string]string{"kty": "RSA", "kid": s.kid, "n": b64u(p.N.Bytes()), "e": b64u([]byte{1, 0, 1})})
		}
	}
	b, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pemKeys is the PEM file of the signers' public keys, each with its kid header.
func pemKeys(t *testing.T, ss ...signer) []byte {
	t.Helper()
	var out []byte
	for _, s := range ss {
		der, err := x509.MarshalPKIXPublicKey(s.priv.Public())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Headers: map[string]string{"kid": s.kid}, Bytes: der})...)
	}
	return out
}

// writeKeys writes data to path with a modification time later than any
// before, so that the verifier sees a new version.
func writeKeys(t *testing.T, path string, data []byte, version int) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", data, 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Duration(version) * time.Minute)
	if err := os.Chtimes(path+".tmp", at, at); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

type claims = auth.Claims

func valid() claims {
	now := time.Now()
	return claims{RegisteredClaims: jwt.RegisteredClaims{Subject: "teacher-anna", Audience: jwt.ClaimStrings{"resultsync"},
		Issuer: "https://idp.example", ExpiresAt: jwt.NewNumericDate(now.Add(5 * time.Minute)), NotBefore: jwt.NewNumericDate(now.Add(-time.Minute))},
		Role: "operator", Schools: []int64{7}}
}

func sign(t *testing.T, s signer, c claims) string {
	t.Helper()
	tok := jwt.NewWithClaims(s.alg, c)
	if s.kid != "" {
		tok.Header["kid"] = s.kid
	}
	raw, err := tok.SignedString(s.priv)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func verifier(t *testing.T, path string, algs string) *auth.Verifier {
	t.Helper()
	v, err := auth.NewVerifier(nil, auth.JWTConfig{KeysFile: path, Audience: "resultsync", Issuer: "https://idp.example",
		Algorithms: algs, Leeway: 10 * time.Second, ReloadEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVerifyJWT(t *testing.T) {
	es, ed, rs := newES256(t, "es-1"), newEd25519(t, "ed-1"), newRS256(t, "rs-1")
	other := newES256(t, "es-1") // the same kid, another key
	dir := t.TempDir()
	jwksFile, pemFile := filepath.Join(dir, "jwks.json"), filepath.Join(dir, "keys.pem")
	writeKeys(t, jwksFile, jwks(t, es, ed, rs), 0)
	writeKeys(t, pemFile, pemKeys(t, es, ed, rs), 0)
	mod := func(f func(*claims)) claims {
		c := valid()
		f(&c)
		return c
	}
	tampered := func(raw string) string {
		i := strings.LastIndex(raw, ".")
		sig := []byte(raw[i+1:])
		if sig[3] == 'A' {
			sig[3] = 'B'
		} else {
			sig[3] = 'A'
		}
		return raw[:i+1] + string(sig)
	}
	pub, err := x509.MarshalPKIXPublicKey(es.priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	hsWithPublicKey := func() string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, valid())
		tok.Header["kid"] = "es-1"
		raw, err := tok.SignedString(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	none := func() string {
		raw, err := jwt.NewWithClaims(jwt.SigningMethodNone, valid()).SignedString(jwt.UnsafeAllowNoneSignatureType)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	tests := []struct {
		name, raw, algs string
		want            string // "" accepted; else part of the error
	}{
		{"valid ES256", sign(t, es, valid()), "", ""},
		{"valid EdDSA", sign(t, ed, valid()), "", ""},
		{"valid RS256", sign(t, rs, valid()), "", ""},
		{"platform-wide", sign(t, es, mod(func(c *claims) { c.Schools, c.Platform = nil, true })), "", ""},
		{"expired", sign(t, es, mod(func(c *claims) { c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-time.Minute)) })), "", "expired"},
		{"expired within the leeway", sign(t, es, mod(func(c *claims) { c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(-3 * time.Second)) })), "", ""},
		{"without exp", sign(t, es, mod(func(c *claims) { c.ExpiresAt = nil })), "", "exp"},
		{"not yet valid", sign(t, es, mod(func(c *claims) { c.NotBefore = jwt.NewNumericDate(time.Now().Add(time.Minute)) })), "", "not valid yet"},
		{"wrong audience", sign(t, es, mod(func(c *claims) { c.Audience = jwt.ClaimStrings{"another-service"} })), "", "aud"},
		{"wrong issuer", sign(t, es, mod(func(c *claims) { c.Issuer = "https://evil.example" })), "", "iss"},
		{"algorithm not pinned", sign(t, rs, valid()), "ES256,EdDSA", "signing method RS256 is invalid"},
		{"HS256 with the public key as secret", hsWithPublicKey(), "", "signing method HS256 is invalid"},
		{"alg none", none(), "", "signing method none is invalid"},
		{"unknown key id", sign(t, newES256(t, "es-9"), valid()), "", "unknown JWT key id"},
		{"a key of the same kid", sign(t, other, valid()), "", "signature is invalid"},
		{"tampered signature", tampered(sign(t, es, valid())), "", "signature"},
		{"tampered claims", func() string {
			raw := sign(t, es, valid())
			parts := strings.Split(raw, ".")
			body, _ := json.Marshal(mod(func(c *claims) { c.Schools = []int64{8} }))
			return parts[0] + "." + b64u(body) + "." + parts[2]
		}(), "", "signature is invalid"},
		{"no role", sign(t, es, mod(func(c *claims) { c.Role = "" })), "", "role"},
		{"no school", sign(t, es, mod(func(c *claims) { c.Schools = nil })), "", "no school"},
		{"no subject", sign(t, es, mod(func(c *claims) { c.Subject = "" })), "", "sub"},
	}
	for _, file := range []string{jwksFile, pemFile} {
		for _, tc := range tests {
			t.Run(filepath.Ext(file)+"/"+tc.name, func(t *testing.T) {
				p, err := verifier(t, file, tc.algs).Verify(context.Background(), tc.raw)
				if tc.want == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					if p.Subject != "teacher-anna" || p.Role != auth.RoleOperator || (!p.Platform && !slices.Equal(p.Schools, []int64{7})) {
						t.Errorf("principal %+v", p)
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want one naming %q (principal %+v)", err, tc.want, p)
				}
			})
		}
	}
}

// TestKeyRotation: a key added to the file is used without a restart, and a
// key removed from it is refused.
func TestKeyRotation(t *testing.T) {
	oldKey, newKey := newES256(t, "2026-11"), newEd25519(t, "2026-12")
	path := filepath.Join(t.TempDir(), "jwks.json")
	writeKeys(t, path, jwks(t, oldKey), 0)
	v := verifier(t, path, "")
	if _, err := v.Verify(context.Background(), sign(t, oldKey, valid())); err != nil {
		t.Fatalf("old key before rotation: %v", err)
	}
	if _, err := v.Verify(context.Background(), sign(t, newKey, valid())); err == nil {
		t.Fatal("new key accepted before it is published")
	}
	writeKeys(t, path, jwks(t, oldKey, newKey), 1)
	waitFor(t, func() error { _, err := v.Verify(context.Background(), sign(t, newKey, valid())); return err })
	writeKeys(t, path, jwks(t, newKey), 2)
	waitFor(t, func() error {
		if _, err := v.Verify(context.Background(), sign(t, oldKey, valid())); err == nil {
			return errors.New("retired key still accepted")
		}
		return nil
	})
	// A broken file keeps the keys read before.
	writeKeys(t, path, []byte(`{"keys": [`), 3)
	time.Sleep(30 * time.Millisecond) // past ReloadEvery: the next Verify reads the broken file
	if _, err := v.Verify(context.Background(), sign(t, newKey, valid())); err != nil {
		t.Fatalf("a broken key file dropped the keys: %v", err)
	}
}

func waitFor(t *testing.T, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestKeyFileRefusals(t *testing.T) {
	es := newES256(t, "k")
	priv, err := x509.MarshalPKCS8PrivateKey(es.priv)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"empty":                  nil,
		"private PEM":            pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: priv}),
		"private JWK":            []byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + b64u(make([]byte, 32)) + `","d":"AA"}]}`),
		"HMAC JWK":               []byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`),
		"EC point off the curve": []byte(`{"keys":[{"kty":"EC","crv":"P-256","x":"` + b64u(make([]byte, 32)) + `","y":"` + b64u(make([]byte, 32)) + `"}]}`),
		"short RSA":              []byte(`{"keys":[{"kty":"RSA","n":"` + b64u(make([]byte, 128)) + `","e":"AQAB"}]}`),
	} {
		path := filepath.Join(t.TempDir(), "keys")
		writeKeys(t, path, data, 0)
		if _, err := auth.NewVerifier(nil, auth.JWTConfig{KeysFile: path, Audience: "a"}); err == nil {
			t.Errorf("%s: key file accepted", name)
		}
	}
	for _, algs := range []string{"none", "HS256", "ES256,HS512", " , "} {
		if err := (auth.JWTConfig{KeysFile: "x", Audience: "a", Algorithms: algs}).Validate(); err == nil {
			t.Errorf("algorithms %q accepted", algs)
		}
	}
	if err := (auth.JWTConfig{KeysFile: "x"}).Validate(); err == nil {
		t.Error("JWT keys without an audience accepted")
	}
}

// TestStaticTokensOnlyLocal: the static list is refused outside the local
// profile, with an error naming the JWT settings; the local profile
// defaults to the development tokens, platform-wide.
func TestStaticTokensOnlyLocal(t *testing.T) {
	err := auth.Settings{Tokens: auth.DevTokens}.Validate()
	if !errors.Is(err, auth.ErrStaticTokens) || !strings.Contains(err.Error(), "--auth-jwt-keys") {
		t.Errorf("static tokens in production: %v", err)
	}
	if _, err := auth.New(nil, auth.Settings{}); !errors.Is(err, auth.ErrNoAuth) {
		t.Errorf("nothing configured in production: %v", err)
	}
	a, err := auth.New(nil, auth.Settings{Profile: config.ProfileLocal})
	if err != nil {
		t.Fatal(err)
	}
	p, code := call(a, "/fitness.v1.RepairService/GetRepair", "Bearer dev-viewer")
	if code != 0 || !p.Platform || p.Role != auth.RoleViewer {
		t.Errorf("dev-viewer in the local profile: %+v %v", p, code)
	}
	a, err = auth.ParseTokens("school-seven-token=anna:operator@7|9")
	if err != nil {
		t.Fatal(err)
	}
	p, _ = call(a, "/fitness.v1.RepairService/GetRepair", "Bearer school-seven-token")
	if p.Platform || !p.ActsFor(7) || !p.ActsFor(9) || p.ActsFor(8) {
		t.Errorf("scoped static token: %+v", p)
	}
	for _, bad := range []string{"tokentoken=a:viewer@", "tokentoken=a:viewer@x", "tokentoken=a:viewer@-1", "tokentoken=a:viewer@7|"} {
		if _, err := auth.ParseTokens(bad); err == nil {
			t.Errorf("ParseTokens(%q) accepted", bad)
		}
	}
}
