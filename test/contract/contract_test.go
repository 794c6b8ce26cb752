// Package contract checks that the fitness.v1 contracts are guarded against
// what users have: `buf breaking` with FILE rules against the last release's
// contracts (proto/releases), and a CHANGELOG section for every release.
package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// tools returns the repository root and its pinned buf (bin/buf, built by
// `make tools`); a missing buf fails under CI and skips otherwise.
func tools(t *testing.T) (root, buf string) {
	t.Helper()
	root, err := infratest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	buf = filepath.Join(root, "bin", "buf")
	if _, err := os.Stat(buf); err != nil {
		if infratest.Required() {
			t.Fatalf("bin/buf: %v (make tools builds it)", err)
		}
		t.Skipf("bin/buf: %v; run `make tools`", err)
	}
	return root, buf
}

// releases returns the release versions recorded in proto/releases, oldest
// first (semantic order).
func releases(t *testing.T, root string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, "proto", "releases", "fitness-v*.binpb"))
	if err != nil {
		t.Fatal(err)
	}
	var vs []string
	for _, p := range paths {
		vs = append(vs, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "fitness-"), ".binpb"))
	}
	slices.SortFunc(vs, compareVersions)
	if len(vs) == 0 {
		t.Fatal("proto/releases holds no release: buf breaking has nothing to compare with")
	}
	return vs
}

var semver = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)$`)

func compareVersions(a, b string) int {
	ma, mb := semver.FindStringSubmatch(a), semver.FindStringSubmatch(b)
	for i := 1; i <= 3 && ma != nil && mb != nil; i++ {
		if c := len(ma[i]) - len(mb[i]); c != 0 {
			return c
		}
		if c := strings.Compare(ma[i], mb[i]); c != 0 {
			return c
		}
	}
	return strings.Compare(a, b)
}

func runBuf(t *testing.T, dir, buf string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, buf, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// The tree's contracts pass buf breaking against the last release, with the
// rules buf.yaml names: FILE (wire, JSON and generated names).
func TestContractsCompatibleWithLastRelease(t *testing.T) {
	root, buf := tools(t)
	cfg, err := os.ReadFile(filepath.Join(root, "buf.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^breaking:\n  use:\n    - FILE$`).Match(cfg) {
		t.Fatalf("buf.yaml's breaking rules are not FILE:\n%s", cfg)
	}
	vs := releases(t, root)
	last := filepath.Join("proto", "releases", "fitness-"+vs[len(vs)-1]+".binpb")
	if out, err := runBuf(t, root, buf, "breaking", "--against", last); err != nil {
		t.Fatalf("buf breaking --against %s: %v\n%s", last, err, out)
	}
}

// A change that keeps the wire format but breaks the callers' code or JSON
// (a renamed field: the generated Python, TypeScript and Java accessors and
// the JSON name change) and a removed RPC are refused against the release.
func TestBreakingChangesRefused(t *testing.T) {
	root, buf := tools(t)
	vs := releases(t, root)
	release := filepath.Join(root, "proto", "releases", "fitness-"+vs[len(vs)-1]+".binpb")
	tests := []struct {
		name, file, from, to, want string
	}{
		{"renamed field", "result.proto", "string request_id = 1;", "string request_key = 1;", "request_id"},
		{"removed RPC", "result.proto", "rpc GetResult(GetResultRequest) returns (GetResultResponse);", "", "GetResult"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			copyTree(t, filepath.Join(root, "proto"), filepath.Join(dir, "proto"))
			copyFile(t, filepath.Join(root, "buf.yaml"), filepath.Join(dir, "buf.yaml"))
			p := filepath.Join(dir, "proto", "fitness", "v1", tt.file)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(b, []byte(tt.from)) {
				t.Fatalf("%s holds no %q: update the test", tt.file, tt.from)
			}
			b = bytes.Replace(b, []byte(tt.from), []byte(tt.to), 1)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := runBuf(t, dir, buf, "breaking", "--against", release)
			if err == nil {
				t.Fatalf("buf breaking accepted the %s against %s", tt.name, vs[len(vs)-1])
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("buf breaking's answer does not name %q:\n%s", tt.want, out)
			}
		})
	}
}

// Every recorded release has its CHANGELOG.md section, and the newest
// section of a released version is the newest recorded release.
func TestChangelogNamesEveryRelease(t *testing.T) {
	root, err := infratest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	var sections []string
	for _, m := range regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$`).FindAllStringSubmatch(string(b), -1) {
		sections = append(sections, "v"+m[1])
	}
	if !bytes.Contains(b, []byte("## [Unreleased]")) {
		t.Error("CHANGELOG.md has no [Unreleased] section for the changes on main")
	}
	vs := releases(t, root)
	for _, v := range vs {
		if !slices.Contains(sections, v) {
			t.Errorf("release %s (proto/releases) has no '## [%s] - date' section in CHANGELOG.md", v, strings.TrimPrefix(v, "v"))
		}
	}
	if len(sections) > 0 && sections[0] != vs[len(vs)-1] {
		t.Errorf("the newest CHANGELOG.md release is %s, the newest recorded contracts %s: run make release-contracts RELEASE=%s", sections[0], vs[len(vs)-1], sections[0])
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		if !strings.HasSuffix(p, ".proto") {
			return nil
		}
		copyFile(t, p, filepath.Join(to, rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The gateway's OpenAPI document (gen/openapiv2, from
// proto/fitness/v1/openapi.yaml) names the API and its version, declares the
// bearer token every route needs, and marks the fields callers must send;
// every required name is a property of its definition (a misspelt one in
// openapi.yaml would be silently useless).
func TestOpenAPIDocumentDescribesTheAPI(t *testing.T) {
	root, err := infratest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "gen", "openapiv2", "resultsync.swagger.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Info struct {
			Title, Version string
		}
		SecurityDefinitions map[string]struct {
			Type, Name, In string
		}
		Security    []map[string][]string
		Definitions map[string]struct {
			Required   []string
			Properties map[string]json.RawMessage
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Info.Title != "resultsync fitness.v1 API" || doc.Info.Version != "v1" {
		t.Errorf("info = %+v; want title %q, version v1", doc.Info, "resultsync fitness.v1 API")
	}
	if sd := doc.SecurityDefinitions["bearer"]; sd.Type != "apiKey" || sd.In != "header" || sd.Name != "Authorization" {
		t.Errorf("securityDefinitions.bearer = %+v; want an Authorization header", sd)
	}
	if len(doc.Security) != 1 || doc.Security[0]["bearer"] == nil {
		t.Errorf("security = %v; want bearer on every operation", doc.Security)
	}
	want := map[string][]string{
		"v1RecordResultRequest":           {"requestId", "dataId", "detectId", "userId", "projectId", "schoolId", "grade", "result", "unit"},
		"ResultServiceCorrectResultBody":  {"requestId", "expectedVersion", "result", "unit"},
		"v1StartReconciliationRunRequest": {"scope", "depth"},
		"v1ReconcileScope":                {"detectId"},
		"v1CreateRepairRequest":           {"reason", "requestId"},
	}
	for name, fields := range want {
		if got := doc.Definitions[name].Required; !slices.Equal(got, fields) {
			t.Errorf("%s required = %v; want %v", name, got, fields)
		}
	}
	for name, d := range doc.Definitions {
		for _, f := range d.Required {
			if _, ok := d.Properties[f]; !ok {
				t.Errorf("%s requires %q, which is not one of its properties", name, f)
			}
		}
	}
	// Every file carries the document's options: the merged document takes
	// its info from whichever file the generator reads first.
	cfg, err := os.ReadFile(filepath.Join(root, "proto", "fitness", "v1", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	protos, err := filepath.Glob(filepath.Join(root, "proto", "fitness", "v1", "*.proto"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range protos {
		if f := "fitness/v1/" + filepath.Base(p); !bytes.Contains(cfg, []byte("- file: "+f+"\n")) {
			t.Errorf("proto/fitness/v1/openapi.yaml has no file option for %s", f)
		}
	}
}
