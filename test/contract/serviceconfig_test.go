package contract

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// Every client ships resultsync's gRPC service config: the Go client embeds
// the canonical clients/go/serviceconfig/service_config.json, and the
// Python, TypeScript and Java clients carry a copy that their generate.sh
// makes (`make generate`). A copy that differs from the canonical file by
// one byte fails here, so no client retries by another policy.
func TestClientsShipTheCanonicalServiceConfig(t *testing.T) {
	root, err := infratest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	canonical, err := os.ReadFile(filepath.Join(root, "clients", "go", "serviceconfig", "service_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, copyPath := range []string{
		"clients/python/src/resultsync_client/service_config.json",
		"clients/typescript/src/service_config.json",
		"clients/java/src/main/resources/io/github/resultsync/client/service_config.json",
	} {
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(copyPath)))
		if err != nil {
			t.Errorf("%s: %v (make generate copies it)", copyPath, err)
			continue
		}
		if !bytes.Equal(got, canonical) {
			t.Errorf("%s differs from clients/go/serviceconfig/service_config.json: run make generate", copyPath)
		}
	}
}
