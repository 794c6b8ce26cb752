// Package kubernetes holds the Kubernetes manifests of the six servers and
// the migration Job (docs/deploy-kubernetes.md). Its test validates them
// offline: every document decodes strictly into the Kubernetes API types,
// and every server's configuration, as the manifests set it, loads with the
// server's own configuration loader in the production profile.
package kubernetes

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/resultsync/resultsync/pkg/service/consumersvc"
	"github.com/resultsync/resultsync/pkg/service/gatewaysvc"
	"github.com/resultsync/resultsync/pkg/service/migratesvc"
	"github.com/resultsync/resultsync/pkg/service/reconcilesvc"
	"github.com/resultsync/resultsync/pkg/service/relaysvc"
	"github.com/resultsync/resultsync/pkg/service/repairsvc"
	"github.com/resultsync/resultsync/pkg/service/resultssvc"
	"github.com/resultsync/resultsync/pkg/testkit/configtest"
)

// servers are the six servers: their configuration loader, gRPC port and
// environment prefix.
var servers = map[string]struct {
	load   func(args []string) error
	grpc   int32
	prefix string
}{
	"results":   {func(a []string) error { _, err := resultssvc.Load(a); return err }, 7101, "RS_RESULTS"},
	"relay":     {func(a []string) error { _, err := relaysvc.Load(a); return err }, 7102, "RS_RELAY"},
	"consumer":  {func(a []string) error { _, err := consumersvc.Load(a); return err }, 7103, "RS_CONSUMER"},
	"reconcile": {func(a []string) error { _, err := reconcilesvc.Load(a); return err }, 7104, "RS_RECONCILE"},
	"repair":    {func(a []string) error { _, err := repairsvc.Load(a); return err }, 7105, "RS_REPAIR"},
	"gateway":   {func(a []string) error { _, err := gatewaysvc.Load(a); return err }, 7106, "RS_GATEWAY"},
}

// secretKey names the settings that must come from a Secret, never inline.
var secretKey = regexp.MustCompile(`(SHARDS|DSN|TOKEN|PASSWORD|SECRET)`)

// manifests is every object of the directory's YAML files.
type manifests struct {
	deployments  []*appsv1.Deployment
	services     []*corev1.Service
	pdbs         []*policyv1.PodDisruptionBudget
	jobs         []*batchv1.Job
	configMaps   map[string]*corev1.ConfigMap
	secrets      map[string]*corev1.Secret // secret.example.yaml: the keys the servers read
	namespaces   []*corev1.Namespace
	kustomize    kustomization
	files        []string // the YAML files other than kustomization.yaml
	exampleFiles []string // files not applied (secret.example.yaml)
}

// kustomization is the part of kustomization.yaml this directory uses,
// decoded strictly: an unknown field is an error.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
		Digest  string `json:"digest,omitempty"`
	} `json:"images"`
}

// documents splits a YAML stream into its documents.
func documents(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		if strings.TrimSpace(stripComments(d)) != "" {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

func stripComments(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// decode decodes doc strictly (unknown and duplicate fields are errors) into
// the API type of its apiVersion and kind.
func decode(doc []byte) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, fmt.Errorf("reading apiVersion and kind: %w", err)
	}
	var obj any
	switch tm.APIVersion + "/" + tm.Kind {
	case "v1/Namespace":
		obj = &corev1.Namespace{}
	case "v1/ConfigMap":
		obj = &corev1.ConfigMap{}
	case "v1/Secret":
		obj = &corev1.Secret{}
	case "v1/Service":
		obj = &corev1.Service{}
	case "apps/v1/Deployment":
		obj = &appsv1.Deployment{}
	case "policy/v1/PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	case "batch/v1/Job":
		obj = &batchv1.Job{}
	default:
		return nil, fmt.Errorf("unexpected apiVersion %q kind %q", tm.APIVersion, tm.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("decoding %s %s strictly: %w", tm.APIVersion, tm.Kind, err)
	}
	return obj, nil
}

func load(t *testing.T) *manifests {
	t.Helper()
	m := &manifests{configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	kb, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(kb, &m.kustomize); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	paths, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if p == "kustomization.yaml" {
			continue
		}
		example := strings.Contains(p, ".example.")
		if example {
			m.exampleFiles = append(m.exampleFiles, p)
		} else {
			m.files = append(m.files, p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range documents(b) {
			obj, err := decode(doc)
			if err != nil {
				t.Errorf("%s, document %d: %v", p, i+1, err)
				continue
			}
			meta := obj.(metav1.Object)
			for _, e := range validation.IsDNS1123Label(meta.GetName()) {
				t.Errorf("%s: name %q: %s", p, meta.GetName(), e)
			}
			if _, ns := obj.(*corev1.Namespace); !ns && meta.GetNamespace() != m.kustomize.Namespace {
				t.Errorf("%s: %s is in namespace %q, want %q (kubectl apply -f must work without kustomize)", p, meta.GetName(), meta.GetNamespace(), m.kustomize.Namespace)
			}
			switch o := obj.(type) {
			case *corev1.Namespace:
				m.namespaces = append(m.namespaces, o)
			case *corev1.ConfigMap:
				m.configMaps[o.Name] = o
			case *corev1.Secret:
				if !example {
					t.Errorf("%s: Secret %s in an applied file: secrets come from the secret store, not the repository", p, o.Name)
				}
				m.secrets[o.Name] = o
			case *corev1.Service:
				m.services = append(m.services, o)
			case *appsv1.Deployment:
				m.deployments = append(m.deployments, o)
			case *policyv1.PodDisruptionBudget:
				m.pdbs = append(m.pdbs, o)
			case *batchv1.Job:
				m.jobs = append(m.jobs, o)
			}
		}
	}
	return m
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	m := load(t)
	if m.kustomize.APIVersion != "kustomize.config.k8s.io/v1beta1" || m.kustomize.Kind != "Kustomization" {
		t.Errorf("kustomization.yaml: apiVersion %q kind %q", m.kustomize.APIVersion, m.kustomize.Kind)
	}
	res := slices.Clone(m.kustomize.Resources)
	sort.Strings(res)
	files := slices.Clone(m.files)
	sort.Strings(files)
	if !slices.Equal(res, files) {
		t.Errorf("kustomization.yaml resources %v, want every manifest but the examples: %v", res, files)
	}
	for _, e := range m.exampleFiles {
		if slices.Contains(res, e) {
			t.Errorf("kustomization.yaml applies the example %s", e)
		}
	}
	if len(m.namespaces) != 1 || m.namespaces[0].Name != m.kustomize.Namespace {
		t.Errorf("want one Namespace %q, got %d", m.kustomize.Namespace, len(m.namespaces))
	}
	if len(m.secrets) == 0 {
		t.Error("no example Secret: the keys the servers read from it are undocumented")
	}
}

// checkImage requires a pinned image: a tag other than latest, or a digest,
// and the image kustomization.yaml retags.
func checkImage(t *testing.T, m *manifests, where, image string) {
	t.Helper()
	name, tag := image, ""
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		name, tag = image[:i], image[i+1:]
	}
	if strings.Contains(image, "@sha256:") {
		return
	}
	if tag == "" || tag == "latest" {
		t.Errorf("%s: image %q: want a pinned tag, not latest or none", where, image)
	}
	for _, im := range m.kustomize.Images {
		if im.Name == name {
			if im.NewTag == "latest" {
				t.Errorf("kustomization.yaml retags %s to latest", name)
			}
			return
		}
	}
	t.Errorf("%s: image %q is not retagged by kustomization.yaml's images", where, image)
}

// checkResources requires CPU and memory requests and limits, requests no
// larger than limits.
func checkResources(t *testing.T, where string, r corev1.ResourceRequirements) {
	t.Helper()
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okReq := r.Requests[name]
		lim, okLim := r.Limits[name]
		if !okReq || !okLim {
			t.Errorf("%s: %s request and limit must both be set", where, name)
			continue
		}
		if req.Cmp(lim) > 0 {
			t.Errorf("%s: %s request %s above its limit %s", where, name, req.String(), lim.String())
		}
	}
}

// environment resolves a container's environment as the kubelet would from
// the manifests' ConfigMaps and the example Secret, and checks that every
// secret-like setting comes from a Secret.
func environment(t *testing.T, m *manifests, where string, c corev1.Container) map[string]string {
	t.Helper()
	if len(c.EnvFrom) > 0 {
		t.Errorf("%s: envFrom: name every setting (an unknown RS_ key is an error or silently ignored)", where)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if _, dup := env[e.Name]; dup {
			t.Errorf("%s: %s set twice", where, e.Name)
		}
		switch {
		case e.ValueFrom == nil:
			if secretKey.MatchString(e.Name) {
				t.Errorf("%s: %s is inline: it must come from a Secret (secretKeyRef)", where, e.Name)
			}
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			s, ok := m.secrets[ref.Name]
			if !ok {
				t.Errorf("%s: %s from Secret %q, which secret.example.yaml does not document", where, e.Name, ref.Name)
				continue
			}
			v, ok := s.StringData[ref.Key]
			if !ok {
				t.Errorf("%s: %s from key %q that Secret %s does not document", where, e.Name, ref.Key, ref.Name)
			}
			env[e.Name] = v
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			if secretKey.MatchString(e.Name) {
				t.Errorf("%s: %s from ConfigMap %s: it must come from a Secret", where, e.Name, ref.Name)
			}
			cm, ok := m.configMaps[ref.Name]
			if !ok {
				t.Errorf("%s: %s from ConfigMap %q, which is not in the manifests", where, e.Name, ref.Name)
				continue
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				t.Errorf("%s: %s from key %q that ConfigMap %s lacks", where, e.Name, ref.Key, ref.Name)
			}
			env[e.Name] = v
		default:
			t.Errorf("%s: %s: unexpected valueFrom", where, e.Name)
		}
	}
	for _, cm := range m.configMaps {
		for k, v := range cm.Data {
			if secretKey.MatchString(k) {
				t.Errorf("ConfigMap %s holds %s=%q: secrets belong in a Secret", cm.Name, k, v)
			}
		}
	}
	return env
}

var envKey = regexp.MustCompile(`\(env (RS_[A-Z0-9_]+)\)`)

// requiredKeys returns the environment keys a server's loader requires in
// the production profile: those it names as missing with nothing set.
func requiredKeys(t *testing.T, load func([]string) error) []string {
	t.Helper()
	configtest.ClearEnv(t)
	err := load(nil)
	if err == nil {
		t.Fatal("the production profile loaded with no setting at all")
	}
	if errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	var keys []string
	for _, line := range strings.Split(err.Error(), "\n") {
		if !strings.Contains(line, "missing required settings") {
			continue
		}
		for _, sm := range envKey.FindAllStringSubmatch(line, -1) {
			keys = append(keys, sm[1])
		}
	}
	if len(keys) == 0 {
		t.Fatalf("no missing required settings named in %q", err)
	}
	return keys
}

// selects reports whether selector selects a pod with podLabels.
func selects(t *testing.T, selector *metav1.LabelSelector, podLabels map[string]string) bool {
	t.Helper()
	if selector == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		t.Errorf("selector %v: %v", selector, err)
		return false
	}
	return !s.Empty() && s.Matches(labels.Set(podLabels))
}

func TestServers(t *testing.T) {
	m := load(t)
	seen := map[string]bool{}
	for _, d := range m.deployments {
		srv, ok := servers[d.Name]
		if !ok {
			t.Errorf("Deployment %s is none of the six servers", d.Name)
			continue
		}
		seen[d.Name] = true
		t.Run(d.Name, func(t *testing.T) { checkServer(t, m, d, srv.load, srv.grpc, srv.prefix) })
	}
	for name := range servers {
		if !seen[name] {
			t.Errorf("no Deployment for the %s server", name)
		}
	}
}

func checkServer(t *testing.T, m *manifests, d *appsv1.Deployment, load func([]string) error, grpcPort int32, prefix string) {
	podLabels := d.Spec.Template.Labels
	if !selects(t, d.Spec.Selector, podLabels) {
		t.Errorf("the selector %v does not select the pod template's labels %v", d.Spec.Selector, podLabels)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		t.Errorf("replicas %v: want at least 2 (a PodDisruptionBudget over one pod blocks drains or protects nothing)", d.Spec.Replicas)
	}
	cs := d.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("%d containers, want 1", len(cs))
	}
	c := cs[0]
	checkImage(t, m, "Deployment "+d.Name, c.Image)
	checkResources(t, "Deployment "+d.Name, c.Resources)

	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["grpc"] != grpcPort {
		t.Errorf("container port grpc = %d, want %d", ports["grpc"], grpcPort)
	}
	// Readiness asks /readyz (dependencies), liveness /livez (the process
	// only: never a dependency), both on the metrics port, which serves TLS
	// exactly when the server does (kubelet's grpc probes speak plaintext).
	for _, pc := range []struct {
		name, path string
		p          *corev1.Probe
	}{{"readiness", "/readyz", c.ReadinessProbe}, {"liveness", "/livez", c.LivenessProbe}} {
		switch p := pc.p; {
		case p == nil:
			t.Errorf("no %s probe", pc.name)
		case p.HTTPGet == nil:
			t.Errorf("%s probe is not an httpGet probe of %s", pc.name, pc.path)
		case p.HTTPGet.Path != pc.path:
			t.Errorf("%s probe asks %s, want %s", pc.name, p.HTTPGet.Path, pc.path)
		case p.HTTPGet.Port.String() != "metrics" || ports["metrics"] == 0:
			t.Errorf("%s probe on port %s, want the container port named metrics", pc.name, p.HTTPGet.Port.String())
		}
	}
	// A live process never fails /livez; the supervisor's watchdog counts
	// as silent after 15 s: liveness must not give up before that.
	if l := c.LivenessProbe; l != nil && l.PeriodSeconds*l.FailureThreshold < 20 {
		t.Errorf("liveness gives up after %ds, want at least 20s (the watchdog's silence limit is 15s)", l.PeriodSeconds*l.FailureThreshold)
	}

	var pdbs []string
	for _, p := range m.pdbs {
		if selects(t, p.Spec.Selector, podLabels) {
			pdbs = append(pdbs, p.Name)
			if p.Spec.MinAvailable == nil && p.Spec.MaxUnavailable == nil {
				t.Errorf("PodDisruptionBudget %s sets neither minAvailable nor maxUnavailable", p.Name)
			}
		}
	}
	if len(pdbs) != 1 {
		t.Errorf("PodDisruptionBudgets selecting the pods: %v, want exactly one", pdbs)
	}
	var svcGRPC bool
	for _, s := range m.services {
		if s.Name == d.Name && selects(t, &metav1.LabelSelector{MatchLabels: s.Spec.Selector}, podLabels) {
			for _, p := range s.Spec.Ports {
				if p.Port == grpcPort && p.TargetPort.String() == "grpc" {
					svcGRPC = true
				}
			}
		}
	}
	if !svcGRPC {
		t.Errorf("no Service %s selecting the pods with port %d to the grpc port", d.Name, grpcPort)
	}

	env := environment(t, m, "Deployment "+d.Name, c)
	if got, want := env[prefix+"_GRPC_ADDR"], fmt.Sprintf("0.0.0.0:%d", grpcPort); got != want {
		t.Errorf("%s_GRPC_ADDR = %q, want %q (the default binds loopback only)", prefix, got, want)
	}
	if got, want := env[prefix+"_HTTP_ADDR"], fmt.Sprintf("0.0.0.0:%d", ports["metrics"]); ports["metrics"] == 0 || got != want {
		t.Errorf("%s_HTTP_ADDR = %q with container port metrics %d, want %q", prefix, got, ports["metrics"], want)
	}
	for _, k := range requiredKeys(t, load) {
		if _, ok := env[k]; !ok {
			t.Errorf("%s is required in the production profile and not set", k)
		}
	}
	// The server's own loader accepts the configuration the manifests give
	// it, in the production profile.
	configtest.ClearEnv(t)
	if _, ok := env["RS_PROFILE"]; ok {
		t.Error("RS_PROFILE is set: the manifests run the production profile")
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	if err := load(c.Args); err != nil {
		t.Errorf("the server's configuration does not load from the manifests: %v", err)
	}
	if d.Name == "gateway" {
		checkGatewayUpstreams(t, m, env, ports)
	} else if age, err := time.ParseDuration(env[prefix+"_GRPC_MAX_CONNECTION_AGE"]); err != nil || age <= 0 {
		// The gateway balances over the pods its DNS answer named; a
		// connection closed by age makes it resolve again and find new pods.
		t.Errorf("%s_GRPC_MAX_CONNECTION_AGE = %q: want a positive age, so that the gateway re-resolves the headless Service",
			prefix, env[prefix+"_GRPC_MAX_CONNECTION_AGE"])
	}
}

// checkGatewayUpstreams requires every upstream address of the gateway to
// name a port of a headless Service of the manifests, and the JSON API to be
// exposed.
func checkGatewayUpstreams(t *testing.T, m *manifests, env map[string]string, ports map[string]int32) {
	for _, up := range []string{"RESULTS", "RELAY", "CONSUMER", "RECONCILE", "REPAIR"} {
		addr := env["RS_"+up+"_ADDR"]
		host, port, ok := strings.Cut(addr, ":")
		n, err := strconv.Atoi(port)
		if !ok || err != nil {
			t.Errorf("RS_%s_ADDR = %q: want service:port", up, addr)
			continue
		}
		found := false
		for _, s := range m.services {
			for _, p := range s.Spec.Ports {
				if s.Name == strings.Split(host, ".")[0] && p.Port == int32(n) {
					found = true
					// The gateway balances over the addresses the name
					// resolves to: a virtual IP is one address.
					if s.Spec.ClusterIP != corev1.ClusterIPNone {
						t.Errorf("RS_%s_ADDR = %q: Service %s has clusterIP %q, want %q (headless: every ready pod's address)",
							up, addr, s.Name, s.Spec.ClusterIP, corev1.ClusterIPNone)
					}
				}
			}
		}
		if !found {
			t.Errorf("RS_%s_ADDR = %q names no Service port of the manifests", up, addr)
		}
	}
	if got, want := env["RS_GATEWAY_API_ADDR"], fmt.Sprintf("0.0.0.0:%d", ports["http"]); ports["http"] == 0 || got != want {
		t.Errorf("RS_GATEWAY_API_ADDR = %q with container port http %d, want %q", got, ports["http"], want)
	}
}

// migrateNeeds lists the environment keys services/migrate requires in the
// production profile (named by its loader, pkg/service/migratesvc).
func migrateNeeds(t *testing.T) []string {
	t.Helper()
	return requiredKeys(t, func(args []string) error {
		_, err := migratesvc.Load(args)
		return err
	})
}

func TestMigrateJob(t *testing.T) {
	m := load(t)
	if len(m.jobs) != 1 {
		t.Fatalf("%d Jobs, want the one migration Job", len(m.jobs))
	}
	j := m.jobs[0]
	spec := j.Spec.Template.Spec
	if spec.RestartPolicy != corev1.RestartPolicyNever && spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		t.Errorf("restartPolicy %q", spec.RestartPolicy)
	}
	if j.Spec.BackoffLimit == nil || j.Spec.ActiveDeadlineSeconds == nil {
		t.Error("backoffLimit and activeDeadlineSeconds must bound the migration")
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	if len(c.Command) == 0 || filepath.Base(c.Command[0]) != "migrate" {
		t.Errorf("command %v: want the migrate binary", c.Command)
	}
	checkImage(t, m, "Job "+j.Name, c.Image)
	checkResources(t, "Job "+j.Name, c.Resources)
	env := environment(t, m, "Job "+j.Name, c)
	for _, k := range migrateNeeds(t) {
		if _, ok := env[k]; !ok {
			t.Errorf("%s is required by migrate in the production profile and not set", k)
		}
	}
	var image string
	for _, d := range m.deployments {
		if image == "" {
			image = d.Spec.Template.Spec.Containers[0].Image
		}
		if got := d.Spec.Template.Spec.Containers[0].Image; got != image || got != c.Image {
			t.Errorf("Deployment %s runs %s, the Job %s: every manifest runs the one image", d.Name, got, c.Image)
		}
	}
}
