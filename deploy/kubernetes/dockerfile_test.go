package kubernetes

import (
	"debug/elf"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // FROM, COPY, RUN, ...
	args string
}

func parseDockerfile(t *testing.T) []instruction {
	t.Helper()
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{cmd: strings.ToUpper(cmd), args: strings.Join(strings.Fields(args), " ")})
		cur.Reset()
	}
	return out
}

// The image cannot be built here (no container engine), so what it is made
// of is checked instead, offline: the build stage's Go matches go.mod, every
// file it copies exists, it builds every server the manifests run, and its
// build command — run here exactly as the Dockerfile runs it — gives static
// binaries that the distroless static base (no libc) can execute; the
// gateway's OpenAPI document is copied where its manifest points.
func TestDockerfile(t *testing.T) {
	ins := parseDockerfile(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}

	var froms []string
	var build string
	copied := map[string]string{} // destination -> source, from the build context
	for _, in := range ins {
		switch in.cmd {
		case "FROM":
			froms = append(froms, in.args)
		case "RUN":
			if strings.Contains(in.args, "go build") {
				build = in.args
			}
		case "COPY":
			f := strings.Fields(in.args)
			if strings.HasPrefix(f[0], "--from=") {
				continue
			}
			for _, src := range f[:len(f)-1] {
				if _, err := os.Stat(filepath.Join(root, src)); err != nil {
					t.Errorf("COPY %s: not in the repository: %v", src, err)
				}
				copied[f[len(f)-1]] = src
			}
		}
	}
	if len(froms) != 2 {
		t.Fatalf("FROM lines %q: want a build stage and the runtime stage", froms)
	}

	// The build stage's Go is go.mod's (major.minor).
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	got := regexp.MustCompile(`^golang:(\d+\.\d+)\S* AS build$`).FindStringSubmatch(froms[0])
	if want == nil || got == nil || got[1] != string(want[1]) {
		t.Errorf("build stage %q: want golang:%s (go.mod) AS build", froms[0], want[1])
	}
	if !strings.HasPrefix(froms[1], "gcr.io/distroless/static") {
		t.Errorf("runtime stage %q: the binaries are built static for distroless/static", froms[1])
	}

	// Every binary a manifest runs is built.
	m := load(t)
	var pods []corev1.PodSpec
	for _, d := range m.deployments {
		pods = append(pods, d.Spec.Template.Spec)
	}
	for _, j := range m.jobs {
		pods = append(pods, j.Spec.Template.Spec)
	}
	f := strings.Fields(build)
	var pkgs []string
	for _, a := range f {
		if strings.HasPrefix(a, "./services/") {
			pkgs = append(pkgs, a)
		}
	}
	var openapi string
	for _, p := range pods {
		for _, c := range p.Containers {
			if len(c.Command) == 0 || !strings.HasPrefix(c.Command[0], "/usr/local/bin/") {
				t.Errorf("container %s: command %q, want /usr/local/bin/<server>", c.Name, c.Command)
				continue
			}
			if bin := path.Base(c.Command[0]); !slices.Contains(pkgs, "./services/"+bin) {
				t.Errorf("container %s runs %s, which the Dockerfile does not build (%v)", c.Name, bin, pkgs)
			}
			for _, e := range c.Env {
				if e.Name == "RS_GATEWAY_OPENAPI_FILE" {
					openapi = e.Value
				}
			}
		}
	}
	if src, ok := copied[openapi]; !ok || src != "gen/openapiv2/resultsync.swagger.json" {
		t.Errorf("the gateway reads %q; the Dockerfile copies %v", openapi, copied)
	}

	// The build command, as the Dockerfile runs it, into a temporary /out.
	if !strings.HasPrefix(build, "CGO_ENABLED=0 go build ") || !strings.Contains(build, "-o /out/ ") {
		t.Fatalf("build command %q: want CGO_ENABLED=0 go build ... -o /out/ <packages>", build)
	}
	if testing.Short() {
		t.Skip("-short: the image's build command is not run")
	}
	out := t.TempDir()
	args := strings.Fields(strings.Replace(strings.TrimPrefix(build, "CGO_ENABLED=0 go "), "-o /out/", "-o "+out+"/", 1))
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	for _, p := range pkgs {
		bin := filepath.Join(out, path.Base(p))
		f, err := elf.Open(bin)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				t.Errorf("%s is dynamically linked (has an interpreter): distroless/static has no libc", p)
			}
		}
		if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
			t.Errorf("%s needs shared libraries %v", p, libs)
		}
		f.Close()
	}
}
