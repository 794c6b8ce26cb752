package kubernetes

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

// ociIndex, ociManifest and ociConfig are the parts of an OCI image layout
// (image-spec v1) the test reads.
type (
	ociDescriptor struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Annotations map[string]string `json:"annotations"`
	}
	ociIndex    struct{ Manifests []ociDescriptor }
	ociManifest struct {
		Config ociDescriptor   `json:"config"`
		Layers []ociDescriptor `json:"layers"`
	}
	ociConfig struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
		Config       struct {
			User       string            `json:"User"`
			Entrypoint []string          `json:"Entrypoint"`
			Cmd        []string          `json:"Cmd"`
			Env        []string          `json:"Env"`
			Labels     map[string]string `json:"Labels"`
		} `json:"config"`
	}
)

// imageFile is one file of the image's file system.
type imageFile struct {
	hdr  *tar.Header
	data string // the extracted copy of a regular file, in a temporary directory
}

// image is an image read from an OCI layout.
type image struct {
	ref    string
	id     string // the configuration's digest, hex: buildah's image ID
	config ociConfig
	files  map[string]imageFile // by absolute path, the layers applied in order
}

// readImage reads the one image of the OCI layout dir: its reference name,
// its configuration, and its file system (regular files extracted into
// tmp).
func readImage(dir, tmp string) (*image, error) {
	var idx ociIndex
	if err := readJSON(filepath.Join(dir, "index.json"), &idx); err != nil {
		return nil, err
	}
	if len(idx.Manifests) != 1 {
		return nil, fmt.Errorf("%s holds %d images, want the one make image wrote", dir, len(idx.Manifests))
	}
	blob := func(d ociDescriptor) string {
		return filepath.Join(dir, "blobs", strings.Replace(d.Digest, ":", string(filepath.Separator), 1))
	}
	img := &image{ref: idx.Manifests[0].Annotations["org.opencontainers.image.ref.name"], files: map[string]imageFile{}}
	var m ociManifest
	if err := readJSON(blob(idx.Manifests[0]), &m); err != nil {
		return nil, err
	}
	img.id = strings.TrimPrefix(m.Config.Digest, "sha256:")
	if err := readJSON(blob(m.Config), &img.config); err != nil {
		return nil, err
	}
	for i, l := range m.Layers {
		if err := img.apply(blob(l), l.MediaType, filepath.Join(tmp, fmt.Sprint(i))); err != nil {
			return nil, fmt.Errorf("layer %s: %w", l.Digest, err)
		}
	}
	return img, nil
}

func readJSON(file string, v any) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decoding %s: %w", file, err)
	}
	return nil
}

// apply adds a layer's entries to the file system (whiteouts are refused:
// an image built from scratch in one step deletes nothing).
func (img *image) apply(file, mediaType, tmp string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(mediaType, "+gzip") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return err
		}
		defer zr.Close()
		r = zr
	}
	tr := tar.NewReader(r)
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean("/" + hdr.Name)
		if strings.HasPrefix(path.Base(name), ".wh.") {
			return fmt.Errorf("whiteout %s", name)
		}
		file := imageFile{hdr: hdr}
		if hdr.Typeflag == tar.TypeReg {
			if err := os.MkdirAll(tmp, 0o700); err != nil {
				return err
			}
			file.data = filepath.Join(tmp, fmt.Sprint(n))
			out, err := os.Create(file.data)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, tr) //nolint:gosec // the image this repository built, read by its own test
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
		img.files[name] = file
	}
}

// read returns a regular file's content.
func (img *image) read(t *testing.T, name string) []byte {
	t.Helper()
	f, ok := img.files[name]
	if !ok || f.data == "" {
		t.Fatalf("the image has no file %s", name)
	}
	b, err := os.ReadFile(f.data)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// imageLayout is where `make image` (deploy/image/build.sh) exports the
// image: $RS_STATE/image/oci, RS_STATE being the repository's .local unless
// set.
func imageLayout(root string) string {
	state := os.Getenv("RS_STATE")
	if state == "" {
		state = filepath.Join(root, ".local")
	}
	return filepath.Join(state, "image", "oci")
}

// noImage fails the test when CI or RS_REQUIRE_INFRA is set (make test
// builds the image first), and skips it otherwise.
func noImage(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...) + ": run `make image`"
	if infratest.Required() {
		t.Fatal(msg)
	}
	t.Skip(msg + " (RS_REQUIRE_INFRA=1 fails instead)")
}

var revisionLabel = regexp.MustCompile(`^([0-9a-f]{40})(-dirty)?$`)

// The image `make image` built (deploy/image/build.sh: buildah, FROM
// scratch), read from the OCI layout it exports, is the one the manifests
// run and what it should be: the manifests' image reference (kustomize's
// tag applied); built from the checked-out commit; every binary a
// Deployment or the Job runs present, executable, root-owned, static (no
// interpreter, no shared libraries: there is no libc in the image), built
// with CGO_ENABLED=0 and -trimpath from the revision the labels name; the
// gateway's OpenAPI document where its manifest points, equal to gen/'s;
// Debian's CA bundle; a non-root user that /etc/passwd and /etc/group
// know, matching the pods' runAsUser/runAsGroup; the OCI labels source,
// revision, version and created; no entrypoint (each container's command
// names its server); nothing in the image writable by that user but /tmp.
func TestImage(t *testing.T) {
	m := load(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	layout := imageLayout(root)
	if _, err := os.Stat(filepath.Join(layout, "index.json")); err != nil {
		noImage(t, "no image layout at %s (%v)", layout, err)
	}
	img, err := readImage(layout, t.TempDir())
	if err != nil {
		t.Fatalf("reading the image at %s: %v", layout, err)
	}
	labels := img.config.Config.Labels
	rev := revisionLabel.FindStringSubmatch(labels["org.opencontainers.image.revision"])
	if rev == nil {
		t.Fatalf("label org.opencontainers.image.revision = %q, want a git commit (-dirty)", labels["org.opencontainers.image.revision"])
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	if h := strings.TrimSpace(string(head)); rev[1] != h {
		noImage(t, "the image was built from %s, the work tree is at %s", rev[0], h)
	}

	// The reference the manifests run, after kustomize's images: retag.
	var pods []corev1.PodSpec
	for _, d := range m.deployments {
		pods = append(pods, d.Spec.Template.Spec)
	}
	for _, j := range m.jobs {
		pods = append(pods, j.Spec.Template.Spec)
	}
	want := ""
	for _, p := range pods {
		for _, c := range p.Containers {
			ref := c.Image
			name, _, _ := strings.Cut(ref, ":")
			for _, im := range m.kustomize.Images {
				if im.Name == name && im.NewTag != "" {
					ref = name + ":" + im.NewTag
				}
			}
			if want == "" {
				want = ref
			}
			if ref != want {
				t.Errorf("container %s runs %s, others %s: one image", c.Name, ref, want)
			}
		}
	}
	if img.ref != want {
		t.Errorf("make image built %q; the manifests run %q", img.ref, want)
	}

	// Labels.
	for _, k := range []string{"source", "revision", "version", "created"} {
		if labels["org.opencontainers.image."+k] == "" {
			t.Errorf("label org.opencontainers.image.%s is not set", k)
		}
	}
	if _, tag, _ := strings.Cut(want, ":"); labels["org.opencontainers.image.version"] != tag {
		t.Errorf("label org.opencontainers.image.version = %q, want the tag %q", labels["org.opencontainers.image.version"], tag)
	}
	if _, err := time.Parse(time.RFC3339, labels["org.opencontainers.image.created"]); err != nil {
		t.Errorf("label org.opencontainers.image.created: %v", err)
	}
	if img.config.OS != "linux" || img.config.Architecture == "" {
		t.Errorf("platform %s/%s, want linux", img.config.OS, img.config.Architecture)
	}

	// The user: not root, known to /etc/passwd and /etc/group, the pods'.
	c := img.config.Config
	uid, gid, ok := strings.Cut(c.User, ":")
	if !ok || uid == "" || uid == "0" || gid == "" || gid == "0" {
		t.Errorf("user %q: want a non-root uid:gid", c.User)
	}
	if !hasID(img.read(t, "/etc/passwd"), uid, 2) {
		t.Errorf("/etc/passwd has no entry of uid %s:\n%s", uid, img.read(t, "/etc/passwd"))
	}
	if !hasID(img.read(t, "/etc/group"), gid, 2) {
		t.Errorf("/etc/group has no entry of gid %s", gid)
	}
	for _, p := range pods {
		if sc := p.SecurityContext; sc == nil || sc.RunAsUser == nil || fmt.Sprint(*sc.RunAsUser) != uid ||
			sc.RunAsGroup == nil || fmt.Sprint(*sc.RunAsGroup) != gid {
			t.Errorf("a pod's securityContext %+v: want runAsUser %s and runAsGroup %s, the image's user", sc, uid, gid)
		}
	}
	if len(c.Entrypoint) != 0 || len(c.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q: want none (each container's command names its server)", c.Entrypoint, c.Cmd)
	}

	// Every server and migrate, and what each container runs.
	dirs, err := os.ReadDir(filepath.Join(root, "services"))
	if err != nil {
		t.Fatal(err)
	}
	bins := map[string]bool{}
	for _, d := range dirs {
		if d.IsDir() {
			bins["/usr/local/bin/"+d.Name()] = true
		}
	}
	var openapi string
	for _, p := range pods {
		for _, c := range p.Containers {
			if len(c.Command) == 0 {
				t.Errorf("container %s names no command: the image has no entrypoint", c.Name)
				continue
			}
			if !bins[c.Command[0]] {
				t.Errorf("container %s runs %s, not a binary of services/", c.Name, c.Command[0])
			}
			for _, e := range c.Env {
				if e.Name == "RS_GATEWAY_OPENAPI_FILE" {
					openapi = e.Value
				}
			}
		}
	}
	for bin := range bins {
		checkBinary(t, img, bin, rev[0])
	}

	gen, err := os.ReadFile(filepath.Join(root, "gen/openapiv2/resultsync.swagger.json"))
	if err != nil {
		t.Fatal(err)
	}
	if openapi == "" {
		t.Error("the gateway's manifest sets no RS_GATEWAY_OPENAPI_FILE")
	} else if !bytes.Equal(img.read(t, openapi), gen) {
		t.Errorf("%s in the image differs from gen/openapiv2/resultsync.swagger.json", openapi)
	}

	// Debian's CA bundle, where Go's crypto/x509 looks first on Linux.
	checkCABundle(t, img.read(t, "/etc/ssl/certs/ca-certificates.crt"))

	// Nothing the user could change, but /tmp.
	for name, f := range img.files {
		if name == "/tmp" {
			if f.hdr.Mode&0o1777 != 0o1777 {
				t.Errorf("/tmp mode %o, want 1777", f.hdr.Mode)
			}
			continue
		}
		if f.hdr.Uid != 0 || f.hdr.Gid != 0 || f.hdr.Mode&0o022 != 0 {
			t.Errorf("%s: owner %d:%d mode %o, want root's and writable by root only", name, f.hdr.Uid, f.hdr.Gid, f.hdr.Mode)
		}
	}
	t.Logf("image %s: %d files, revision %s, created %s, user %s", img.ref, len(img.files), rev[0],
		labels["org.opencontainers.image.created"], c.User)
}

// hasID reports whether a passwd or group file has an entry whose field
// (0-based) is id.
func hasID(file []byte, id string, field int) bool {
	sc := bufio.NewScanner(bytes.NewReader(file))
	for sc.Scan() {
		if f := strings.Split(sc.Text(), ":"); len(f) > field && f[field] == id {
			return true
		}
	}
	return false
}

// checkBinary requires name to be a root-owned executable, static, built
// with CGO_ENABLED=0 and -trimpath from revision.
func checkBinary(t *testing.T, img *image, name, revision string) {
	t.Helper()
	f, ok := img.files[name]
	if !ok || f.data == "" {
		t.Errorf("the image has no binary %s", name)
		return
	}
	if f.hdr.Mode&0o111 != 0o111 {
		t.Errorf("%s mode %o: not executable by everyone", name, f.hdr.Mode)
	}
	ef, err := elf.Open(f.data)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	defer ef.Close()
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked (has an interpreter): the image has no libc", name)
		}
	}
	if libs, _ := ef.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v", name, libs)
	}
	bi, err := buildinfo.ReadFile(f.data)
	if err != nil {
		t.Errorf("%s: reading its build information: %v", name, err)
		return
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	got := settings["vcs.revision"]
	if settings["vcs.modified"] == "true" {
		got += "-dirty"
	}
	if got == "" && !gitDir(t) {
		// The toolchain stamps a commit only in a clone: .git a directory,
		// not a worktree's .git file.
		t.Logf("%s: no commit recorded (a git worktree)", name)
		got = revision
	}
	for k, want := range map[string]string{"CGO_ENABLED": "0", "-trimpath": "true", "GOOS": "linux"} {
		if settings[k] != want {
			t.Errorf("%s built with %s=%q, want %q", name, k, settings[k], want)
		}
	}
	if got != revision {
		t.Errorf("%s built from %q, the image's revision label says %q", name, got, revision)
	}
}

// gitDir reports whether the repository's .git is a directory.
func gitDir(t *testing.T) bool {
	t.Helper()
	fi, err := os.Stat("../../.git")
	return err == nil && fi.IsDir()
}

// checkCABundle requires a bundle of at least 100 parseable CA certificates
// (Debian's ca-certificates has about 140).
func checkCABundle(t *testing.T, bundle []byte) {
	t.Helper()
	n := 0
	for rest := bundle; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Errorf("CA bundle certificate %d: %v", n+1, err)
			continue
		}
		if !c.IsCA {
			t.Errorf("CA bundle certificate %q is not a CA", c.Subject)
		}
		n++
	}
	if n < 100 {
		t.Errorf("the CA bundle holds %d certificates, want Debian's (over 100)", n)
	}
}

// The gateway, run from the image: containers cannot be run on these
// machines (crun refuses to create one), so buildah runs it with chroot
// isolation instead: the image's file system as its root, the image's user,
// the host's network. It serves the OpenAPI document from the image's
// /usr/share/resultsync (equal to gen/'s) and answers /healthz (503: no
// backend here), as uid and gid 65532, chrooted (its root is not the
// host's, and there is no libc in it). Not a container: no namespaces, no
// cgroups, no seccomp; the image's file system, user and static binaries
// are what this shows.
func TestImageRunsTheGateway(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	layout := imageLayout(root)
	var idx ociIndex
	if err := readJSON(filepath.Join(layout, "index.json"), &idx); err != nil || len(idx.Manifests) != 1 {
		noImage(t, "no image layout at %s (%v)", layout, err)
	}
	ref := idx.Manifests[0].Annotations["org.opencontainers.image.ref.name"]
	img, err := readImage(layout, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("buildah"); err != nil {
		noImage(t, "buildah is not installed (%v)", err)
	}
	buildah := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(t.Context(), "buildah", args...).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				err = fmt.Errorf("%w: %s", err, ee.Stderr)
			}
			noImage(t, "buildah %s: %v", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	ctr := buildah("from", "--pull-never", "--quiet", ref)
	t.Cleanup(func() {
		if out, err := exec.Command("buildah", "rm", ctr).CombinedOutput(); err != nil {
			t.Errorf("buildah rm %s: %v: %s", ctr, err, out)
		}
	})
	if id := buildah("inspect", "--format", "{{.FromImageID}}", ctr); id != img.id {
		noImage(t, "buildah's %s is image %s, the OCI layout's %s", ref, id, img.id)
	}

	port := freePort(t)
	api := "127.0.0.1:" + port
	cmd := exec.CommandContext(t.Context(), "buildah", "run", "--isolation", "chroot", ctr, "--",
		"/usr/local/bin/gateway", "--profile=local", "--api-addr="+api, "--grpc-addr=127.0.0.1:0", "--http-addr=",
		"--shutdown-grace=1s", "--openapi-file=/usr/share/resultsync/resultsync.swagger.json",
		"--results-addr=127.0.0.1:1", "--relay-addr=127.0.0.1:1", "--consumer-addr=127.0.0.1:1",
		"--reconcile-addr=127.0.0.1:1", "--repair-addr=127.0.0.1:1")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) } // buildah passes it on
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := <-done; err != nil {
			t.Logf("buildah run after SIGTERM: %v", err)
		}
	}
	t.Cleanup(stop)

	get := func(path string) (int, []byte, error) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+api+path, nil)
		if err != nil {
			return 0, nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	deadline := time.Now().Add(60 * time.Second)
	var code int
	var doc []byte
	for {
		code, doc, err = get("/openapiv2/")
		if err == nil {
			break
		}
		select {
		case werr := <-done:
			stopped = true
			t.Fatalf("buildah run ended before the gateway answered: %v\n%s", werr, logs.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway from the image did not answer on %s within 60 s: %v\n%s", api, err, logs.String())
		}
	}
	gen, err := os.ReadFile(filepath.Join(root, "gen/openapiv2/resultsync.swagger.json"))
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusOK || !bytes.Equal(doc, gen) {
		t.Errorf("GET /openapiv2/ = %d, %d bytes; want 200 and gen/'s document (%d bytes)", code, len(doc), len(gen))
	}
	if code, body, err := get("/healthz"); err != nil || code != http.StatusServiceUnavailable {
		t.Errorf("GET /healthz = %d %s, %v; want 503 (no backend)", code, body, err)
	}

	// The process: the image's user, chrooted into the image.
	pid := processOf(t, "/usr/local/bin/gateway", "--api-addr="+api)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	uid, gid, _ := strings.Cut(img.config.Config.User, ":")
	for _, l := range strings.Split(string(status), "\n") {
		if f := strings.Fields(l); len(f) == 5 && (f[0] == "Uid:" || f[0] == "Gid:") {
			want := uid
			if f[0] == "Gid:" {
				want = gid
			}
			if f[1] != want || f[2] != want {
				t.Errorf("the gateway runs with %s, want %s", l, want)
			}
		}
	}
	if r, err := os.Readlink(fmt.Sprintf("/proc/%d/root", pid)); err != nil || r == "/" {
		t.Errorf("the gateway's root is %q (%v): want the image's file system", r, err)
	}
	for _, p := range []string{"lib", "lib64", "usr/lib", "bin/sh"} {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/root/%s", pid, p)); err == nil {
			t.Errorf("the image has /%s", p)
		}
	}
	stop()
	t.Logf("the gateway from %s served the OpenAPI document (%d bytes) and /healthz as uid %s, chrooted", ref, len(doc), uid)
}

// freePort returns a TCP port that was free on 127.0.0.1.
func freePort(t *testing.T) string {
	t.Helper()
	var lc net.ListenConfig
	l, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// processOf returns the pid of the process whose command line starts with
// exe and holds arg.
func processOf(t *testing.T, exe, arg string) int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) > 0 && args[0] == exe && slices.Contains(args, arg) {
			return pid
		}
	}
	t.Fatalf("no process %s %s", exe, arg)
	return 0
}
