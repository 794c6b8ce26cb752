package platformtest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"google.golang.org/grpc/metadata"

	"github.com/resultsync/resultsync/pkg/platform/auth"
)

// Audience is the audience of the platform's signed tokens.
const Audience = "resultsync-test"

// signing is the platform's JWT issuer: an ES256 key whose public half
// every server reads from KeysFile (--auth-jwt-keys).
type signing struct {
	key      *ecdsa.PrivateKey
	KeysFile string
}

func newSigning(t *testing.T) *signing {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "jwt-keys.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Headers: map[string]string{"kid": "platformtest"}, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &signing{key: k, KeysFile: path}
}

// authArgs are the servers' JWT settings.
func (s *signing) authArgs() []string {
	return []string{"--auth-jwt-keys=" + s.KeysFile, "--auth-jwt-audience=" + Audience, "--auth-jwt-algorithms=ES256"}
}

var subjects atomic.Int64

// Token signs a JWT for subject with role, acting for schools (none:
// platform-wide), valid for ten minutes.
func (s *signing) Token(t *testing.T, subject string, role auth.Role, schools ...int64) string {
	t.Helper()
	now := time.Now()
	c := auth.Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: subject, Audience: jwt.ClaimStrings{Audience},
		ExpiresAt: jwt.NewNumericDate(now.Add(10 * time.Minute)), NotBefore: jwt.NewNumericDate(now.Add(-time.Minute)),
		ID: strconv.FormatInt(subjects.Add(1), 10)},
		Role: role.String(), Schools: schools, Platform: len(schools) == 0}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["kid"] = "platformtest"
	raw, err := tok.SignedString(s.key)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Token is a signed bearer token of the platform for subject with role,
// acting for schools (none: platform-wide).
func (p *Platform) Token(subject string, role auth.Role, schools ...int64) string {
	return p.jwt.Token(p.t, subject, role, schools...)
}

// AsSchool is the context of a caller presenting a signed token for subject
// with role, acting for schools (none: platform-wide).
func (p *Platform) AsSchool(subject string, role auth.Role, schools ...int64) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	_ = cancel // bounded by its timeout
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+p.Token(subject, role, schools...))
}
