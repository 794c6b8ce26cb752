package infratest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// PulsarTokenKey is the HS256 key of the local broker's token
// authentication (deploy/local/pulsar.sh makes it; RS_PULSAR_TOKEN_KEY
// names it). A missing key is an unavailable broker: a failure under
// RS_REQUIRE_INFRA or CI, a skip otherwise.
func PulsarTokenKey(t testing.TB) []byte {
	t.Helper()
	path := os.Getenv("RS_PULSAR_TOKEN_KEY")
	if path == "" {
		root, err := RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		path = filepath.Join(root, ".local", "pulsar", "token-hs256.key")
	}
	key, err := os.ReadFile(path)
	if err != nil {
		Unavailable(t, "the Pulsar broker's token key (deploy/local/pulsar.sh start makes it)", "pulsar.log", err)
	}
	return key
}

// SignPulsarToken returns a JWT for subject signed with key (HS256), as
// Pulsar's `tokens create --secret-key` makes one.
func SignPulsarToken(t testing.TB, key []byte, subject string) string {
	t.Helper()
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"HS256"}`))
	claims, err := json.Marshal(map[string]string{"sub": subject})
	if err != nil {
		t.Fatal(err)
	}
	signing := header + "." + enc.EncodeToString(claims)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(signing))
	return signing + "." + enc.EncodeToString(mac.Sum(nil))
}
