// Package tls_test runs resultsync with every hop encrypted by the local
// private CA (deploy/local/tls.sh): the six servers serve mutual TLS, the
// gateway serves HTTPS and dials the backends over mutual TLS, the servers
// reach MySQL with tls=resultsync, ClickHouse on its secure native port and
// Pulsar over pulsar+ssl://, each verified with the CA and presenting the
// local client certificate (platformtest.Options.TLS). On it: the teacher
// story through the gateway's HTTPS JSON API, a repair (reconcile, plan,
// approve, execute, VERIFIED), and the refusals of a peer of another CA, an
// expired certificate and a plaintext client, on gRPC, the JSON API and the
// engine hops.
//
// The engines must serve TLS: deploy/local/up.sh configures them (and
// restarts those started before); without it the suite fails under CI (or
// RS_REQUIRE_INFRA) and is skipped otherwise (infratest.EngineTLS).
package tls_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
	"github.com/resultsync/resultsync/pkg/platform/tlsconfig"
	"github.com/resultsync/resultsync/pkg/service/gatewaysvc"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/platformtest"
	"github.com/resultsync/resultsync/pkg/testkit/reconcileapitest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
	"github.com/resultsync/resultsync/pkg/testkit/tlstest"
)

const (
	openapiFile = "../../gen/openapiv2/resultsync.swagger.json"
	campaign    = 40001
	school      = 7
	story       = 940001 // recorded and corrected through the gateway
	ghost       = 940002 // a projection row no shard has
)

func TestEveryHopOverTLS(t *testing.T) {
	if infratest.ClickHouseIsInProcess() {
		t.Skip("the servers reach ClickHouse over the network; runs on the ClickHouse server pass")
	}
	p := platformtest.NewWith(t, platformtest.Options{TLS: true})
	gw := startGateway(t, p)

	t.Run("teacher story through the gateway over HTTPS", func(t *testing.T) { teacherStory(t, p, gw) })
	t.Run("repair over TLS", func(t *testing.T) { repairOverTLS(t, p) })
	t.Run("refusals", func(t *testing.T) { refusals(t, p, gw) })
}

// gateway is the gateway of the platform: its JSON API's base URL.
type gateway struct{ api string }

// startGateway runs the gateway over the platform's servers: HTTPS JSON API
// and gRPC with mutual TLS, backends dialed over mutual TLS.
func startGateway(t *testing.T, p *platformtest.Platform, extra ...string) gateway {
	t.Helper()
	var gw *gatewaysvc.Service
	platformtest.Serve(t, "gateway", func(ctx context.Context) (servertest.Runner, error) {
		cfg, err := gatewaysvc.Load(p.GatewayArgs(append([]string{"--api-addr=127.0.0.1:0", "--openapi-file=" + openapiFile,
			"--results-addr=" + p.ResultsAddr, "--relay-addr=" + p.RelayAddr, "--consumer-addr=" + p.ConsumerAddr,
			"--reconcile-addr=" + p.ReconcileAddr, "--repair-addr=" + p.RepairAddr}, extra...)...))
		if err != nil {
			return nil, err
		}
		gw, err = gatewaysvc.New(ctx, p.Log, cfg)
		return gw, err
	})
	return gateway{api: "https://" + gw.APIAddr()}
}

// call sends a JSON request with the token through c and returns the
// status and the decoded body (nil unless JSON).
func call(t *testing.T, c *http.Client, token, method, u, body string) (int, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	if out == nil {
		out = map[string]any{"body": string(raw)}
	}
	return resp.StatusCode, out
}

// teacherStory: a teacher records a standing long jump of 2.21 m and
// corrects it to 2.31 m through the gateway's HTTPS JSON API; the gateway
// reads it back, and the projection (written by the consumer over
// pulsar+ssl and the secure native port) holds version 2 at 2.31.
func teacherStory(t *testing.T, p *platformtest.Platform, gw gateway) {
	c := p.HTTPClient()
	ok := func(method, path, body string) map[string]any {
		t.Helper()
		code, out := call(t, c, "tok-operator", method, gw.api+path, body)
		if code != http.StatusOK {
			t.Fatalf("%s %s = %d %v", method, path, code, out)
		}
		return out
	}
	ok(http.MethodPost, "/v1/results", fmt.Sprintf(`{"requestId":"tls-record-%d","dataId":"%d","detectId":"%d","userId":"4","projectId":"3",
		"schoolId":"%d","grade":5,"result":"2.21","unit":"m"}`, story, story, campaign, school))
	ok(http.MethodPost, fmt.Sprintf("/v1/schools/%d/results/%d:correct", school, story),
		fmt.Sprintf(`{"requestId":"tls-correct-%d","expectedVersion":"1","result":"2.31","unit":"m","reason":"teacher correction"}`, story))
	out := ok(http.MethodGet, fmt.Sprintf("/v1/schools/%d/results/%d", school, story), "")
	r, _ := out["result"].(map[string]any)
	if r["result"] != "2.31" && r["result"] != "2.310" || r["version"] != "2" {
		t.Fatalf("the gateway reads %v; want 2.31 at version 2", out)
	}
	p.WaitVersion(campaign, story, 2)
	if got := p.CurrentOf(campaign, story); got.Milli != 2310 || got.Deleted {
		t.Fatalf("projection of %d = %+v; want 2.310 at version 2", story, got)
	}
}

// repairOverTLS damages the projection (the story's version 2 removed, a
// row no shard has added), reconciles, plans, approves the removal, and
// waits until both repairs are VERIFIED; the follow-up run is clean.
func repairOverTLS(t *testing.T, p *platformtest.Platform) {
	ctx := context.Background()
	if _, err := p.Proj.RemoveAbove(ctx, campaign, story, 1); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	if err := p.Proj.Insert(ctx, []chstore.Row{{DetectID: campaign, DataID: ghost, UserID: 5, ProjectID: 3, SchoolID: school, Grade: 5,
		Version: 1, Result: "9.99", Unit: "m", EventID: fmt.Sprintf("fitness-result-%d-v1", ghost),
		ShardID: p.Shards.Shards[p.Shards.Owner(ghost)].ID, SourceCommitMs: now, IngestMs: now}}); err != nil {
		t.Fatal(err)
	}
	scope := &fitnessv1.ReconcileScope{DetectId: campaign}
	content := fitnessv1.ReconcileDepth_RECONCILE_DEPTH_CONTENT
	run := reconcileapitest.Run(t, p.Reconcile, platformtest.Operator, scope, content, 60*time.Second)
	if run.GetState() != fitnessv1.RunState_RUN_STATE_SUCCEEDED {
		t.Fatalf("reconciliation: %s %s", run.GetState(), run.GetErrorMessage())
	}
	got := map[int64]fitnessv1.DiscrepancyClass{}
	for _, d := range reconcileapitest.Discrepancies(t, p.Reconcile, platformtest.Operator, run.GetRunId()) {
		got[d.GetDataId()] = d.GetClass()
	}
	want := map[int64]fitnessv1.DiscrepancyClass{
		story: fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_STALE_TARGET_VERSION,
		ghost: fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_UNEXPECTED_TARGET_RECORD,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("discrepancies %v; want %v", got, want)
	}

	plan, err := p.Repair.PlanRepair(platformtest.Operator(), &fitnessv1.PlanRepairRequest{RunId: run.GetRunId()})
	if err != nil {
		t.Fatal(err)
	}
	planned := map[fitnessv1.RepairAction]string{}
	for _, a := range plan.GetActions() {
		planned[a.GetAction()] = fmt.Sprintf("%d approval=%t", a.GetItems(), a.GetRequiresApproval())
	}
	wantPlan := map[fitnessv1.RepairAction]string{
		fitnessv1.RepairAction_REPAIR_ACTION_REPLAY: "1 approval=false",
		fitnessv1.RepairAction_REPAIR_ACTION_REMOVE: "1 approval=true",
	}
	if fmt.Sprint(planned) != fmt.Sprint(wantPlan) {
		t.Fatalf("plan %v; want %v", planned, wantPlan)
	}
	created, err := p.Repair.CreateRepair(platformtest.Operator(), &fitnessv1.CreateRepairRequest{RunId: run.GetRunId(),
		Reason: "damaged projection", RequestId: "tls-repair-" + run.GetRunId()})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range created.GetRepairs() {
		if r.GetAction() == fitnessv1.RepairAction_REPAIR_ACTION_REMOVE {
			if _, err := p.Repair.ApproveRepair(platformtest.Alice(), &fitnessv1.ApproveRepairRequest{RepairId: r.GetRepairId(),
				Reason: "origins checked"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(created.GetRepairs()) != 2 {
		t.Fatalf("created %d repairs; want a replay and a removal", len(created.GetRepairs()))
	}
	for _, r := range created.GetRepairs() {
		waitVerified(t, p, r.GetRepairId())
	}
	if c := p.CurrentOf(campaign, story); c.Version != 2 || c.Milli != 2310 {
		t.Errorf("after the repair %d is %+v; want version 2 at 2.310", story, c)
	}
	if c := p.CurrentOf(campaign, ghost); c.Version != 0 {
		t.Errorf("after the repair the ghost %d is %+v; want no row", ghost, c)
	}
	again := reconcileapitest.Run(t, p.Reconcile, platformtest.Operator, scope, content, 60*time.Second)
	if again.GetState() != fitnessv1.RunState_RUN_STATE_SUCCEEDED || again.GetDiscrepancyCount() != 0 {
		t.Errorf("follow-up reconciliation: %s with %d discrepancies; want SUCCEEDED and clean", again.GetState(), again.GetDiscrepancyCount())
	}
}

// waitVerified waits (60 s) until the repair is VERIFIED with a PASSED
// verification; a terminal state other than VERIFIED fails at once.
func waitVerified(t *testing.T, p *platformtest.Platform, id string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := p.Repair.GetRepair(platformtest.Viewer(), &fitnessv1.GetRepairRequest{RepairId: id})
		if err != nil {
			t.Fatal(err)
		}
		r := resp.GetRepair()
		switch r.GetState() {
		case fitnessv1.RepairState_REPAIR_STATE_VERIFIED:
			if r.GetVerification() != fitnessv1.VerificationResult_VERIFICATION_RESULT_PASSED {
				t.Fatalf("repair %s (%s) verified %s", id, r.GetAction(), r.GetVerification())
			}
			return
		case fitnessv1.RepairState_REPAIR_STATE_FAILED, fitnessv1.RepairState_REPAIR_STATE_CANCELLED:
			t.Fatalf("repair %s (%s) ended %s: %s", id, r.GetAction(), r.GetState(), r.GetMessage())
		}
		if time.Now().After(deadline) {
			t.Fatalf("repair %s (%s) is %s after 60s; want VERIFIED", id, r.GetAction(), r.GetState())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// certs are the certificates the refusals present: a CA the local servers
// do not trust with a certificate of its own, and an expired certificate
// of the local CA.
type certs struct {
	other     *tlstest.CA
	otherLeaf tlstest.Leaf
	expired   tlstest.Leaf
}

func newCerts(t *testing.T, p *platformtest.Platform) certs {
	dir := t.TempDir()
	other := tlstest.NewCA(t, dir, "other-ca")
	local := tlstest.LoadCA(t, p.CA.CAFile, p.CA.CAKeyFile)
	return certs{
		other:     other,
		otherLeaf: other.Issue(t, dir, "other-client", tlstest.Options{}),
		expired: local.Issue(t, dir, "expired-client", tlstest.Options{NotBefore: time.Now().Add(-48 * time.Hour),
			NotAfter: time.Now().Add(-24 * time.Hour)}),
	}
}

// clientTLS is a client configuration trusting caFile, presenting leaf
// (none when empty).
func clientTLS(t *testing.T, p *platformtest.Platform, caFile string, leaf tlstest.Leaf) *tls.Config {
	t.Helper()
	c, err := tlsconfig.Client(p.Log, tlsconfig.Files{CAFile: caFile, CertFile: leaf.CertFile, KeyFile: leaf.KeyFile}, "refusal")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func refusals(t *testing.T, p *platformtest.Platform, gw gateway) {
	c := newCerts(t, p)
	local := tlstest.Leaf{CertFile: p.CA.ClientCert, KeyFile: p.CA.ClientKey}

	t.Run("gRPC", func(t *testing.T) {
		check := func(t *testing.T, creds credentials.TransportCredentials, wantOK bool) {
			t.Helper()
			conn, err := grpc.NewClient(p.ResultsAddr, grpc.WithTransportCredentials(creds))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
			if wantOK && err != nil {
				t.Fatalf("the local CA's client was refused: %v", err)
			}
			if !wantOK && err == nil {
				t.Fatal("answered")
			}
		}
		t.Run("the local client certificate is answered", func(t *testing.T) {
			check(t, credentials.NewTLS(clientTLS(t, p, p.CA.CAFile, local)), true)
		})
		t.Run("plaintext client", func(t *testing.T) { check(t, insecure.NewCredentials(), false) })
		t.Run("client trusting another CA", func(t *testing.T) {
			check(t, credentials.NewTLS(clientTLS(t, p, c.other.File, local)), false)
		})
		t.Run("client certificate of another CA", func(t *testing.T) {
			check(t, credentials.NewTLS(clientTLS(t, p, p.CA.CAFile, c.otherLeaf)), false)
		})
		t.Run("expired client certificate", func(t *testing.T) {
			check(t, credentials.NewTLS(clientTLS(t, p, p.CA.CAFile, c.expired)), false)
		})
		t.Run("no client certificate", func(t *testing.T) {
			check(t, credentials.NewTLS(clientTLS(t, p, p.CA.CAFile, tlstest.Leaf{})), false)
		})
	})

	t.Run("gateway JSON API", func(t *testing.T) {
		path := fmt.Sprintf("/v1/schools/%d/results/%d", school, story)
		u, err := url.Parse(gw.api)
		if err != nil {
			t.Fatal(err)
		}
		code, out := call(t, http.DefaultClient, "tok-viewer", http.MethodGet, "http://"+u.Host+path, "")
		if code != http.StatusBadRequest || strings.Contains(fmt.Sprint(out), "2.31") {
			t.Errorf("plaintext HTTP = %d %v; want 400 and no result", code, out)
		}
		for name, cfg := range map[string]*tls.Config{
			"client trusting another CA":       clientTLS(t, p, c.other.File, local),
			"expired client certificate":       clientTLS(t, p, p.CA.CAFile, c.expired),
			"client certificate of another CA": clientTLS(t, p, p.CA.CAFile, c.otherLeaf),
		} {
			hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Second}
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, gw.api+path, nil)
			req.Header.Set("Authorization", "Bearer tok-viewer")
			if resp, err := hc.Do(req); err == nil {
				resp.Body.Close()
				t.Errorf("%s: answered %s", name, resp.Status)
			}
		}
		// A gateway trusting another CA refuses every backend: 503.
		wrong := startGateway(t, p, "--backend-tls-ca-file="+c.other.File)
		if code, out := call(t, p.HTTPClient(), "tok-viewer", http.MethodGet, wrong.api+path, ""); code != http.StatusServiceUnavailable {
			t.Errorf("a gateway trusting another CA read %d %v; want 503", code, out)
		}
	})

	t.Run("MySQL", func(t *testing.T) {
		open := func(t *testing.T, name string, cfg *tls.Config) error {
			t.Helper()
			if err := mysql.RegisterTLSConfig(name, cfg); err != nil {
				t.Fatal(err)
			}
			dsn, err := mysql.ParseDSN(p.Control.DSN)
			if err != nil {
				t.Fatal(err)
			}
			dsn.TLSConfig = name
			db, err := sql.Open("mysql", dsn.FormatDSN())
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return db.PingContext(ctx)
		}
		if err := open(t, "tls-test-local", clientTLS(t, p, p.CA.CAFile, local)); err != nil {
			t.Fatalf("the local CA's client was refused: %v", err)
		}
		if err := open(t, "tls-test-other-ca", clientTLS(t, p, c.other.File, local)); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("a client trusting another CA: %v; want a certificate verification failure", err)
		}
		// The server verifies an offered client certificate against its ssl_ca.
		if err := open(t, "tls-test-expired", clientTLS(t, p, p.CA.CAFile, c.expired)); err == nil {
			t.Error("an expired client certificate: connected")
		}
		if err := open(t, "tls-test-other-leaf", clientTLS(t, p, p.CA.CAFile, c.otherLeaf)); err == nil {
			t.Error("a client certificate of another CA: connected")
		}
		// Plaintext stays open on the local engines (the other suites' DSNs
		// have no tls); production closes it (require_secure_transport,
		// REQUIRE X509 accounts): docs/security.md.
	})

	t.Run("ClickHouse secure port", func(t *testing.T) {
		open := func(t *testing.T, cfg *tls.Config) error {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, err := chstore.Open(ctx, chstore.Options{Addr: infratest.ClickHouseSecureAddr(), Database: p.CH.Name, TLS: cfg,
				DialTimeout: 5 * time.Second})
			if err == nil {
				err = conn.Ping(ctx)
				conn.Close()
			}
			return err
		}
		if err := open(t, clientTLS(t, p, p.CA.CAFile, local)); err != nil {
			t.Fatalf("the local CA's client was refused: %v", err)
		}
		for name, cfg := range map[string]*tls.Config{
			"plaintext client":                 nil,
			"client trusting another CA":       clientTLS(t, p, c.other.File, local),
			"expired client certificate":       clientTLS(t, p, p.CA.CAFile, c.expired),
			"client certificate of another CA": clientTLS(t, p, p.CA.CAFile, c.otherLeaf),
		} {
			if err := open(t, cfg); err == nil {
				t.Errorf("%s: connected", name)
			}
		}
	})

	t.Run("Pulsar", func(t *testing.T) {
		produce := func(t *testing.T, o pulsarbus.Options) error {
			t.Helper()
			o.OperationTimeout, o.ConnectionTimeout = 3*time.Second, 2*time.Second
			cl, err := pulsarbus.NewClient(p.Log, o)
			if err != nil {
				return err
			}
			defer cl.Close()
			pr, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: p.Topic + "-refusals"})
			if err == nil {
				pr.Close()
			}
			return err
		}
		tlsURL := infratest.PulsarTLSURL()
		if err := produce(t, pulsarbus.Options{URL: tlsURL, TLS: tlsconfig.Files{CAFile: p.CA.CAFile, CertFile: local.CertFile, KeyFile: local.KeyFile}}); err != nil {
			t.Fatalf("the local CA's client was refused: %v", err)
		}
		u, err := url.Parse(tlsURL)
		if err != nil {
			t.Fatal(err)
		}
		for name, o := range map[string]pulsarbus.Options{
			"plaintext client":           {URL: "pulsar://" + u.Host},
			"client trusting another CA": {URL: tlsURL, TLS: tlsconfig.Files{CAFile: c.other.File, CertFile: local.CertFile, KeyFile: local.KeyFile}},
			// Without a token the client certificate is the client's identity
			// (AuthenticationProviderTls): the broker verifies it.
			"expired client certificate": {URL: tlsURL, TLS: tlsconfig.Files{CAFile: p.CA.CAFile, CertFile: c.expired.CertFile, KeyFile: c.expired.KeyFile}},
			"client certificate of another CA": {URL: tlsURL,
				TLS: tlsconfig.Files{CAFile: p.CA.CAFile, CertFile: c.otherLeaf.CertFile, KeyFile: c.otherLeaf.KeyFile}},
		} {
			if err := produce(t, o); err == nil {
				t.Errorf("%s: produced", name)
			}
		}
	})
}
