package auth

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Algorithms are the JWT signature algorithms a verifier may be pinned to:
// asymmetric only. "none" and the HMAC algorithms (HS256...) are refused,
// so a public key can never be used as an HMAC secret.
var Algorithms = []string{"ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA"}

// DefaultAlgorithms are the algorithms accepted unless configured otherwise.
const DefaultAlgorithms = "ES256,RS256,EdDSA"

// JWTConfig configures the verification of signed bearer tokens (JWTs).
type JWTConfig struct {
	// KeysFile holds the verification keys: PEM public keys ("PUBLIC KEY"
	// blocks, or certificates; a "kid" PEM header names the key) or a JWKS
	// JSON document ({"keys": [...]}, EC, RSA and OKP/Ed25519 keys). It is
	// read again when it changes, so keys rotate without a restart.
	KeysFile string
	// Audience is the required "aud" (one of the token's audiences).
	Audience string
	// Issuer, when set, is the required "iss".
	Issuer string
	// Algorithms is the comma-separated list of accepted algorithms (a
	// subset of Algorithms); empty means DefaultAlgorithms.
	Algorithms string
	// Leeway is the clock skew allowed on "exp" and "nbf".
	Leeway time.Duration
	// ReloadEvery bounds how often the key file is looked at (0: 1s).
	ReloadEvery time.Duration
}

// Claims are the claims of a resultsync bearer token besides the registered
// ones (sub, aud, iss, exp, nbf): the role, and the schools the caller acts
// for, or platform for every school.
type Claims struct {
	jwt.RegisteredClaims
	Role     string  `json:"role"`
	Schools  []int64 `json:"schools,omitempty"`
	Platform bool    `json:"platform,omitempty"`
}

func (c JWTConfig) algorithms() ([]string, error) {
	spec := c.Algorithms
	if strings.TrimSpace(spec) == "" {
		spec = DefaultAlgorithms
	}
	var out []string
	for _, a := range strings.Split(spec, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if !slices.Contains(Algorithms, a) {
			return nil, fmt.Errorf("JWT algorithm %q: want some of %s (never none or HS*)", a, strings.Join(Algorithms, ","))
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, errors.New("no JWT algorithm configured")
	}
	return out, nil
}

// Validate rejects an impossible JWT configuration (without reading the key file).
func (c JWTConfig) Validate() error {
	if c.KeysFile == "" {
		return nil
	}
	var errs []error
	if strings.TrimSpace(c.Audience) == "" {
		errs = append(errs, errors.New("--auth-jwt-audience is required with --auth-jwt-keys"))
	}
	if _, err := c.algorithms(); err != nil {
		errs = append(errs, err)
	}
	if c.Leeway < 0 || c.Leeway > 5*time.Minute {
		errs = append(errs, fmt.Errorf("auth-jwt-leeway %s: want 0 to 5m", c.Leeway))
	}
	return errors.Join(errs...)
}

// key is one verification key.
type key struct {
	id  string // empty: matches a token without kid, or any kid-less lookup
	pub crypto.PublicKey
}

// fileStamp identifies a version of the key file.
type fileStamp struct {
	mod  time.Time
	size int64
}

// Verifier verifies signed bearer tokens with the keys of a file, read again
// when the file changes.
type Verifier struct {
	cfg    JWTConfig
	log    *slog.Logger
	parser *jwt.Parser
	algs   []string

	mu      sync.Mutex
	keys    []key
	stamp   fileStamp
	checked time.Time // when the file was last looked at
}

// NewVerifier reads the key file and returns its verifier.
func NewVerifier(log *slog.Logger, cfg JWTConfig) (*Verifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.KeysFile == "" {
		return nil, errors.New("no JWT key file")
	}
	algs, err := cfg.algorithms()
	if err != nil {
		return nil, err
	}
	if cfg.ReloadEvery <= 0 {
		cfg.ReloadEvery = time.Second
	}
	opts := []jwt.ParserOption{jwt.WithValidMethods(algs), jwt.WithAudience(cfg.Audience), jwt.WithLeeway(cfg.Leeway),
		jwt.WithExpirationRequired()}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	v := &Verifier{cfg: cfg, log: log, parser: jwt.NewParser(opts...), algs: algs}
	if err := v.reload(true); err != nil {
		return nil, err
	}
	return v, nil
}

// reload reads the key file when it changed since the last read (always
// when force). A file that cannot be read or parsed keeps the keys read
// before (and is reported), except at start.
func (v *Verifier) reload(force bool) error {
	fi, err := os.Stat(v.cfg.KeysFile)
	if err != nil {
		return fmt.Errorf("JWT key file: %w", err)
	}
	st := fileStamp{mod: fi.ModTime(), size: fi.Size()}
	if !force && st == v.stamp {
		return nil
	}
	data, err := os.ReadFile(v.cfg.KeysFile)
	if err != nil {
		return fmt.Errorf("JWT key file: %w", err)
	}
	keys, err := parseKeys(data)
	if err != nil {
		return fmt.Errorf("JWT key file %s: %w", v.cfg.KeysFile, err)
	}
	v.keys, v.stamp = keys, st
	if !force && v.log != nil {
		v.log.Info("JWT verification keys reloaded", "file", v.cfg.KeysFile, "keys", len(keys))
	}
	return nil
}

// current returns the keys, looking at the file again if it is due (or if
// force, at most every ReloadEvery either way).
func (v *Verifier) current(force bool) []key {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := time.Now()
	if now.Sub(v.checked) >= v.cfg.ReloadEvery || (force && now.Sub(v.checked) >= v.cfg.ReloadEvery/4) {
		v.checked = now
		if err := v.reload(false); err != nil && v.log != nil {
			v.log.Warn("JWT key file not reloaded; keeping the keys read before", "err", err)
		}
	}
	return v.keys
}

// ErrUnknownKey is returned for a token whose key id no configured key has.
var ErrUnknownKey = errors.New("unknown JWT key id")

// Verify checks raw's signature, algorithm, exp, nbf, aud and iss, and
// returns the caller it names.
func (v *Verifier) Verify(_ context.Context, raw string) (Principal, error) {
	var c Claims
	keyFunc := func(force bool) jwt.Keyfunc {
		return func(t *jwt.Token) (any, error) {
			kid, _ := t.Header["kid"].(string)
			var set jwt.VerificationKeySet
			for _, k := range v.current(force) {
				if (kid == "" || k.id == kid) && fits(t.Method.Alg(), k.pub) {
					set.Keys = append(set.Keys, k.pub)
				}
			}
			if len(set.Keys) == 0 {
				if kid != "" {
					return nil, fmt.Errorf("%w %q", ErrUnknownKey, kid)
				}
				return nil, fmt.Errorf("no key for algorithm %s", t.Method.Alg())
			}
			return set, nil
		}
	}
	_, err := v.parser.ParseWithClaims(raw, &c, keyFunc(false))
	if errors.Is(err, ErrUnknownKey) {
		// A key added to the file since the last look: look again now.
		c = Claims{}
		_, err = v.parser.ParseWithClaims(raw, &c, keyFunc(true))
	}
	if err != nil {
		return Principal{}, err
	}
	return c.principal()
}

func (c Claims) principal() (Principal, error) {
	if c.Subject == "" {
		return Principal{}, errors.New("token without sub")
	}
	r, err := ParseRole(c.Role)
	if err != nil {
		return Principal{}, fmt.Errorf("token role: %w", err)
	}
	p := Principal{Subject: c.Subject, Role: r, Platform: c.Platform}
	for _, s := range c.Schools {
		if s <= 0 {
			return Principal{}, fmt.Errorf("token school %d: want positive", s)
		}
		p.Schools = append(p.Schools, s)
	}
	if !p.Platform && len(p.Schools) == 0 {
		return Principal{}, errors.New("token names no school (schools) and is not platform-wide (platform)")
	}
	return p, nil
}

// fits reports whether pub is a key of algorithm alg.
func fits(alg string, pub crypto.PublicKey) bool {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		switch alg {
		case "ES256":
			return k.Curve == elliptic.P256()
		case "ES384":
			return k.Curve == elliptic.P384()
		case "ES512":
			return k.Curve == elliptic.P521()
		}
	case *rsa.PublicKey:
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case ed25519.PublicKey:
		return alg == "EdDSA"
	}
	return false
}

// parseKeys reads a JWKS document or PEM blocks.
func parseKeys(data []byte) ([]key, error) {
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		return parseJWKS(t)
	}
	var keys []key
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		var pub crypto.PublicKey
		switch b.Type {
		case "PUBLIC KEY":
			k, err := x509.ParsePKIXPublicKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("PEM public key %d: %w", len(keys)+1, err)
			}
			pub = k
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("PEM certificate %d: %w", len(keys)+1, err)
			}
			pub = c.PublicKey
		default:
			return nil, fmt.Errorf("PEM block %q: want PUBLIC KEY or CERTIFICATE (never a private key)", b.Type)
		}
		if !fits("ES256", pub) && !fits("ES384", pub) && !fits("ES512", pub) && !fits("RS256", pub) && !fits("EdDSA", pub) {
			return nil, fmt.Errorf("PEM key %d: unsupported key type %T", len(keys)+1, pub)
		}
		keys = append(keys, key{id: b.Headers["kid"], pub: pub})
	}
	if len(keys) == 0 {
		return nil, errors.New("no public key (want PEM PUBLIC KEY blocks or a JWKS document)")
	}
	return keys, nil
}

type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	N   string `json:"n"`
	E   string `json:"e"`
	D   string `json:"d"`
}

func b64(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

func parseJWKS(data []byte) ([]key, error) {
	var doc struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	var keys []key
	for i, j := range doc.Keys {
		if j.Use != "" && j.Use != "sig" {
			continue
		}
		if j.D != "" {
			return nil, fmt.Errorf("JWKS key %d (%s): a private key; publish public keys only", i, j.Kid)
		}
		pub, err := j.public()
		if err != nil {
			return nil, fmt.Errorf("JWKS key %d (%s): %w", i, j.Kid, err)
		}
		keys = append(keys, key{id: j.Kid, pub: pub})
	}
	if len(keys) == 0 {
		return nil, errors.New("JWKS: no signing key")
	}
	return keys, nil
}

func (j jwk) public() (crypto.PublicKey, error) {
	switch j.Kty {
	case "EC":
		var curve elliptic.Curve
		switch j.Crv {
		case "P-256":
			curve = elliptic.P256()
		case "P-384":
			curve = elliptic.P384()
		case "P-521":
			curve = elliptic.P521()
		default:
			return nil, fmt.Errorf("EC curve %q", j.Crv)
		}
		x, err := b64(j.X)
		if err != nil {
			return nil, fmt.Errorf("x: %w", err)
		}
		y, err := b64(j.Y)
		if err != nil {
			return nil, fmt.Errorf("y: %w", err)
		}
		size := (curve.Params().BitSize + 7) / 8
		if len(x) != size || len(y) != size {
			return nil, errors.New("EC coordinates of the wrong length")
		}
		// The uncompressed point form, checked to be on the curve.
		k, err := ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
		if err != nil {
			return nil, fmt.Errorf("EC point: %w", err)
		}
		return k, nil
	case "RSA":
		n, err := b64(j.N)
		if err != nil {
			return nil, fmt.Errorf("n: %w", err)
		}
		e, err := b64(j.E)
		if err != nil {
			return nil, fmt.Errorf("e: %w", err)
		}
		if len(n)*8 < 2048 {
			return nil, errors.New("RSA key shorter than 2048 bits")
		}
		if len(e) == 0 || len(e) > 4 {
			return nil, errors.New("RSA exponent")
		}
		return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}, nil
	case "OKP":
		if j.Crv != "Ed25519" {
			return nil, fmt.Errorf("OKP curve %q", j.Crv)
		}
		x, err := b64(j.X)
		if err != nil {
			return nil, fmt.Errorf("x: %w", err)
		}
		if len(x) != ed25519.PublicKeySize {
			return nil, errors.New("Ed25519 key of the wrong length")
		}
		return ed25519.PublicKey(x), nil
	}
	return nil, fmt.Errorf("key type %q: want EC, RSA or OKP", j.Kty)
}
