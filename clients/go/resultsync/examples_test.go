package resultsync_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every ```go block of the documentation (README.md, clients/*/README.md,
// docs/*.md) is a whole program: clients/examples.py writes each, with
// fresh ids, into clients/go/_examples (inside this module, whose packages
// they import); each is built and run from the repository root against
// the running servers, and its output compared with the ```text block
// after it when there is one.
func TestDocumentationExamples(t *testing.T) {
	resultsAddr(t)
	need(t, "RS_RESULTS_TLS_ADDR")
	module, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(module, "..", "..")
	target := filepath.Join(module, "_examples")
	if err := os.RemoveAll(target); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("python3", filepath.Join(root, "clients", "examples.py"), "go", target).CombinedOutput(); err != nil {
		t.Fatalf("clients/examples.py go: %v\n%s", err, out)
	}
	index, err := os.ReadFile(filepath.Join(target, "index.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	tls := false
	for line := range strings.Lines(string(index)) {
		f := strings.Split(strings.TrimSuffix(line, "\n")+"\t\t", "\t") // name, file:line, tags
		name, where, tags := f[0], f[1], f[2]
		files = append(files, where[:strings.LastIndex(where, ":")])
		tls = tls || strings.Contains(tags, "tls")
		t.Run(name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), name)
			build := exec.Command("go", "build", "-o", bin, "./_examples/"+name)
			build.Dir = module
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("%s does not build: %v\n%s", where, err, out)
			}
			c, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			run := exec.CommandContext(c, bin)
			run.Dir = root
			var stdout, stderr bytes.Buffer
			run.Stdout, run.Stderr = &stdout, &stderr
			if err := run.Run(); err != nil {
				t.Fatalf("%s failed: %v\n%s", where, err, stderr.String())
			}
			want, err := os.ReadFile(filepath.Join(target, name, "expect"))
			if err == nil && stdout.String() != string(want) {
				t.Errorf("%s printed\n%s\nwant (the ```text block after it)\n%s", where, stdout.String(), want)
			}
		})
	}
	if !strings.Contains(strings.Join(files, " "), "clients/go/README.md") || !tls {
		t.Errorf("examples from %v (tls: %v); want clients/go/README.md's, a TLS one among them", files, tls)
	}
}
