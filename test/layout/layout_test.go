// Package layout checks that docs/repository.md's table of pkg/ groups is
// the tree:
// every package under pkg/ sits in a group (pkg/<group>/<package>) and is
// named in its group's row, and every package a row names exists.
package layout

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// row is one line of docs/repository.md's table of groups: | `pkg/<group>/` | ... |
var row = regexp.MustCompile("^\\| `pkg/([a-z]+)/` \\| (.*) \\|$")

// name is a package named in a row's second cell: a backticked lower-case word.
var name = regexp.MustCompile("`([a-z0-9]+)`")

func TestRepositoryTableIsTheTree(t *testing.T) {
	root := filepath.Join("..", "..")
	want := table(t, filepath.Join(root, "docs", "repository.md"))
	got := tree(t, filepath.Join(root, "pkg"))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/repository.md's pkg/ table differs from the tree (-doc +tree):\n%s", diff)
	}
}

// table returns, per group of the document's table, the packages it names.
func table(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := row.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		for _, n := range name.FindAllStringSubmatch(m[2], -1) {
			out[m[1]] = append(out[m[1]], n[1])
		}
		slices.Sort(out[m[1]])
		out[m[1]] = slices.Compact(out[m[1]])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s has no table of pkg/ groups", path)
	}
	return out
}

// tree returns, per group directory under pkg, its package directories;
// a Go package anywhere else under pkg (in pkg/<group> itself, or deeper
// than pkg/<group>/<package>) fails the test.
func tree(t *testing.T, pkg string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(pkg, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		rel, err := filepath.Rel(pkg, filepath.Dir(path))
		if err != nil {
			return err
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 2 {
			t.Errorf("%s: a Go package must sit at pkg/<group>/<package>", path)
			return nil
		}
		if !slices.Contains(out[parts[0]], parts[1]) {
			out[parts[0]] = append(out[parts[0]], parts[1])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for g := range out {
		slices.Sort(out[g])
	}
	return out
}
