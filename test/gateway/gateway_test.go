// Package gateway calls every route of the JSON gateway
// (proto/fitness/v1/gateway.yaml) over HTTP, with net/http, in front of the
// real servers (pkg/testkit/platformtest: results, relay, consumer, reconcile and
// repair over fresh databases and a fresh topic): status codes and bodies,
// the mapping of gRPC errors to HTTP (400 with field violations, 401, 403,
// 404, 409 with the version conflict, 503 for a backend that is down), the
// server-streaming watch routes as newline-delimited JSON, and the OpenAPI
// document. A rule of gateway.yaml that no call of the test reaches fails it.
package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/service/consumersvc"
	"github.com/resultsync/resultsync/pkg/service/gatewaysvc"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/platformtest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

const (
	gatewayYAML = "../../proto/fitness/v1/gateway.yaml"
	openapiFile = "../../gen/openapiv2/resultsync.swagger.json"

	campaign = int64(10001)
	school   = int64(8)
)

// rule is one HTTP rule of gateway.yaml.
type rule struct {
	selector, method, path string
	re                     *regexp.Regexp
}

var (
	ruleLine = regexp.MustCompile(`^\s*(?:- )?(selector|get|post|put|patch|delete):\s*(\S+)\s*$`)
	param    = regexp.MustCompile(`\{[^}]*\}`)
)

// loadRules reads the HTTP rules of gateway.yaml (selector, then the method
// and path of each).
func loadRules(t *testing.T) []rule {
	t.Helper()
	raw, err := os.ReadFile(gatewayYAML)
	if err != nil {
		t.Fatal(err)
	}
	var rules []rule
	for _, line := range strings.Split(string(raw), "\n") {
		m := ruleLine.FindStringSubmatch(line)
		switch {
		case m == nil:
		case m[1] == "selector":
			rules = append(rules, rule{selector: m[2]})
		case len(rules) == 0 || rules[len(rules)-1].method != "":
			t.Fatalf("gateway.yaml: %q is not the first method of a selector", line)
		default:
			r := &rules[len(rules)-1]
			r.method, r.path = strings.ToUpper(m[1]), m[2]
			var re strings.Builder
			for i, part := range param.Split(m[2], -1) {
				if i > 0 {
					re.WriteString(`[^/]+`)
				}
				re.WriteString(regexp.QuoteMeta(part))
			}
			r.re = regexp.MustCompile("^" + re.String() + "$")
		}
	}
	if len(rules) < 20 {
		t.Fatalf("gateway.yaml: only %d rules parsed", len(rules))
	}
	for _, r := range rules {
		if r.method == "" {
			t.Fatalf("gateway.yaml: %s has no method", r.selector)
		}
	}
	return rules
}

// client calls the gateway and records which rules were reached.
type client struct {
	t       *testing.T
	base    string
	rules   map[string]rule
	reached map[string]bool
}

// newClient is a client of the gateway at base.
func newClient(t *testing.T, rules []rule, base string) *client {
	c := &client{t: t, base: base, rules: map[string]rule{}, reached: map[string]bool{}}
	for _, r := range rules {
		c.rules[r.selector] = r
	}
	return c
}

// obj is a decoded JSON object.
type obj = map[string]any

func (c *client) request(ctx context.Context, selector, token, method, path string, body any) *http.Response {
	c.t.Helper()
	r, ok := c.rules[selector]
	if !ok {
		c.t.Fatalf("%s is not a rule of gateway.yaml", selector)
	}
	route, _, _ := strings.Cut(path, "?")
	if r.method != method || !r.re.MatchString(route) {
		c.t.Fatalf("%s %s does not match %s's rule %s %s", method, path, selector, r.method, r.path)
	}
	c.reached[selector] = true
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// call makes one unary call and returns the status and the JSON body.
func (c *client) call(selector, token, method, path string, body any) (int, obj) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := c.request(ctx, selector, token, method, path, body)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	var o obj
	if err := json.Unmarshal(raw, &o); err != nil {
		c.t.Fatalf("%s %s: %d with a body that is not a JSON object: %v\n%s", method, path, resp.StatusCode, err, raw)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		c.t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	return resp.StatusCode, o
}

// ok makes a call that must succeed (200) and returns its body.
func (c *client) ok(selector, token, method, path string, body any) obj {
	c.t.Helper()
	code, o := c.call(selector, token, method, path, body)
	if code != http.StatusOK {
		c.t.Fatalf("%s %s as %q = %d %v; want 200", method, path, token, code, o)
	}
	return o
}

// fails makes a call that must fail with the HTTP status and gRPC code and
// returns the error body ({"code","message","details"}).
func (c *client) fails(wantHTTP, wantCode int, selector, token, method, path string, body any) obj {
	c.t.Helper()
	code, o := c.call(selector, token, method, path, body)
	if code != wantHTTP || num(o["code"]) != int64(wantCode) || str(o["message"]) == "" {
		c.t.Errorf("%s %s as %q = %d %v; want HTTP %d with gRPC code %d and a message", method, path, token, code, o, wantHTTP, wantCode)
	}
	return o
}

// watch reads a server-streaming route as newline-delimited JSON (one
// {"result": ...} per message) until done says a message is the last, and
// returns the messages. The stream must end after it (a terminal state).
func (c *client) watch(selector, token, path string, done func(obj) bool) []obj {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	resp := c.request(ctx, selector, token, http.MethodGet, path, nil)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("GET %s = %d %s", path, resp.StatusCode, b)
	}
	var msgs []obj
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var line struct {
			Result obj `json:"result"`
			Error  obj `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			c.t.Fatalf("GET %s: a line that is not JSON: %v\n%s", path, err, sc.Bytes())
		}
		if line.Error != nil || line.Result == nil {
			c.t.Fatalf("GET %s: stream error after %d messages: %s", path, len(msgs), sc.Bytes())
		}
		msgs = append(msgs, line.Result)
		if done(line.Result) {
			if sc.Scan() {
				c.t.Errorf("GET %s: a message after the terminal one: %s", path, sc.Bytes())
			}
			return msgs
		}
	}
	c.t.Fatalf("GET %s: the stream ended (%v) after %d messages without a terminal state: %v", path, sc.Err(), len(msgs), msgs)
	return nil
}

// watchFails opens a watch route that must fail before its first message
// with the HTTP status, its body one {"error": ...} line with the gRPC code.
func (c *client) watchFails(wantHTTP, wantCode int, selector, token, path string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := c.request(ctx, selector, token, http.MethodGet, path, nil)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
	var line struct {
		Error obj `json:"error"`
	}
	if resp.StatusCode != wantHTTP || json.Unmarshal(raw, &line) != nil || num(line.Error["code"]) != int64(wantCode) ||
		str(line.Error["message"]) == "" {
		c.t.Errorf("GET %s as %q = %d %s; want HTTP %d with an error line of gRPC code %d", path, token, resp.StatusCode, raw, wantHTTP, wantCode)
	}
}

// get follows a path of object keys and list indexes ("run.state", "repairs.0.repairId").
func get(o obj, path string) any {
	var v any = o
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			var i int
			if _, err := fmt.Sscan(k, &i); err != nil || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// num reads a JSON number or an int64 rendered as a string (protojson).
func num(v any) int64 {
	var n int64
	if _, err := fmt.Sscan(str(v), &n); err != nil {
		return -1
	}
	return n
}

func list(o obj, key string) []obj {
	var out []obj
	if l, ok := o[key].([]any); ok {
		for _, e := range l {
			if m, ok := e.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

// detail is the error detail of the type (the @type's last name), or nil.
func detail(errBody obj, typ string) obj {
	for _, d := range list(errBody, "details") {
		if strings.HasSuffix(str(d["@type"]), "/"+typ) {
			return d
		}
	}
	return nil
}

// startGateway runs a gateway in front of the backends and returns its JSON
// API base URL.
func startGateway(t *testing.T, p *platformtest.Platform, results, relay, consumer, reconcile, repair string) string {
	t.Helper()
	var gw *gatewaysvc.Service
	platformtest.Serve(t, "gateway", func(ctx context.Context) (servertest.Runner, error) {
		cfg, err := gatewaysvc.Load([]string{"--grpc-addr=127.0.0.1:0", "--http-addr=", "--shutdown-grace=2s",
			"--auth-tokens=" + platformtest.Tokens, "--api-addr=127.0.0.1:0", "--openapi-file=" + openapiFile,
			"--results-addr=" + results, "--relay-addr=" + relay, "--consumer-addr=" + consumer,
			"--reconcile-addr=" + reconcile, "--repair-addr=" + repair})
		if err != nil {
			return nil, err
		}
		gw, err = gatewaysvc.New(ctx, p.Log, cfg)
		return gw, err
	})
	return "http://" + gw.APIAddr()
}

// closedPort is an address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestEveryGatewayRoute(t *testing.T) {
	rules := loadRules(t)
	p := platformtest.New(t)
	// The projection server (platformtest runs the consumer without its gRPC
	// service), on a topic of its own: on the platform's topic it would write
	// the rows again, and could bring back the row this test takes out of
	// the projection.
	topic := infratest.Topic(t, "gateway-projection")
	projectionAddr := platformtest.Serve(t, "consumer", func(ctx context.Context) (servertest.Runner, error) {
		cfg, err := consumersvc.Load([]string{"--grpc-addr=127.0.0.1:0", "--http-addr=", "--shutdown-grace=2s",
			"--auth-tokens=" + platformtest.Tokens, "--pulsar-url=" + infratest.PulsarURL(), "--topic=" + topic,
			"--subscription=projection", "--dead-letter-topic=" + topic + "-DLQ", "--clickhouse-addr=" + infratest.ClickHouseAddr(),
			"--clickhouse-database=" + p.CH.Name})
		if err != nil {
			return nil, err
		}
		return consumersvc.New(ctx, p.Log, cfg)
	})
	c := newClient(t, rules, startGateway(t, p, p.ResultsAddr, p.RelayAddr, projectionAddr, p.ReconcileAddr, p.RepairAddr))
	const viewer, operator, alice, bob = "tok-viewer", "tok-operator", "tok-admin-alice", "tok-admin-bob"
	const (
		corrected = int64(920001) // recorded, corrected to v2
		deleted   = int64(920002) // recorded, deleted (tombstone v2)
		lost      = int64(920003) // recorded, then lost by the projection: a replay
		stray     = int64(920099) // in the projection only: a removal
	)
	record := func(id int64) obj {
		return obj{"request_id": fmt.Sprintf("gw-rec-%d", id), "data_id": id, "detect_id": campaign, "user_id": id % 1000,
			"project_id": 3, "school_id": school, "grade": 5, "result": "2.21", "unit": "m"}
	}

	// ---- ResultService, and the mapping of its errors ----
	const recordRoute = "fitness.v1.ResultService.RecordResult"
	c.fails(401, 16, recordRoute, "", "POST", "/v1/results", record(corrected))
	c.fails(401, 16, recordRoute, "no-such-token", "POST", "/v1/results", record(corrected))
	c.fails(403, 7, recordRoute, viewer, "POST", "/v1/results", record(corrected))
	bad := c.fails(400, 3, recordRoute, operator, "POST", "/v1/results",
		obj{"data_id": corrected, "detect_id": campaign, "school_id": school, "grade": 5, "result": "2.21", "unit": "m"})
	if br := detail(bad, "google.rpc.BadRequest"); br == nil {
		t.Errorf("400 without google.rpc.BadRequest details: %v", bad)
	} else {
		fields := map[string]bool{}
		for _, v := range list(br, "fieldViolations") {
			fields[str(v["field"])] = str(v["description"]) != ""
		}
		for _, f := range []string{"request_id", "user_id", "project_id"} {
			if !fields[f] {
				t.Errorf("field violations %v do not name %s with a description", br, f)
			}
		}
	}
	for _, id := range []int64{corrected, deleted, lost} {
		if got := c.ok(recordRoute, operator, "POST", "/v1/results", record(id)); num(get(got, "result.version")) != 1 || str(get(got, "eventId")) == "" {
			t.Errorf("RecordResult %d = %v; want version 1 and an event id", id, got)
		}
	}
	correctPath := fmt.Sprintf("/v1/schools/%d/results/%d:correct", school, corrected)
	const correctRoute = "fitness.v1.ResultService.CorrectResult"
	got := c.ok(correctRoute, operator, "POST", correctPath,
		obj{"request_id": "gw-cor-1", "expected_version": 1, "result": "2.31", "unit": "m", "reason": "typo"})
	if num(get(got, "result.version")) != 2 || str(get(got, "result.result")) != "2.31" {
		t.Errorf("CorrectResult = %v; want version 2 at 2.31", got)
	}
	// A stale correction (another request, the version read before): ABORTED, 409, with the conflict.
	conflict := c.fails(409, 10, correctRoute, operator, "POST", correctPath,
		obj{"request_id": "gw-cor-2", "expected_version": 1, "result": "2.41", "unit": "m", "reason": "stale"})
	if vc := detail(conflict, "fitness.v1.VersionConflict"); vc == nil || num(vc["currentVersion"]) != 2 || num(vc["expectedVersion"]) != 1 ||
		num(vc["dataId"]) != corrected {
		t.Errorf("409 body %v; want a fitness.v1.VersionConflict detail (data id %d, expected 1, current 2)", conflict, corrected)
	}
	got = c.ok("fitness.v1.ResultService.DeleteResult", operator, "POST", fmt.Sprintf("/v1/schools/%d/results/%d:delete", school, deleted),
		obj{"request_id": "gw-del-1", "expected_version": 1, "reason": "entered twice"})
	if num(get(got, "result.version")) != 2 {
		t.Errorf("DeleteResult = %v; want the tombstone at version 2", got)
	}
	const getRoute = "fitness.v1.ResultService.GetResult"
	got = c.ok(getRoute, viewer, "GET", fmt.Sprintf("/v1/schools/%d/results/%d", school, corrected), nil)
	if num(get(got, "result.version")) != 2 || str(get(got, "result.result")) != "2.31" || num(get(got, "result.detectId")) != campaign {
		t.Errorf("GetResult = %v; want version 2 at 2.31 of campaign %d", got, campaign)
	}
	c.fails(404, 5, getRoute, viewer, "GET", fmt.Sprintf("/v1/schools/%d/results/%d", school, 999999), nil)
	c.fails(401, 16, getRoute, "", "GET", fmt.Sprintf("/v1/schools/%d/results/%d", school, corrected), nil)
	got = c.ok("fitness.v1.ResultService.ListResults", viewer, "GET", fmt.Sprintf("/v1/campaigns/%d/results?page_size=10", campaign), nil)
	ids := map[int64]int64{}
	for _, r := range list(got, "results") {
		ids[num(r["dataId"])] = num(r["version"])
	}
	if ids[corrected] != 2 || ids[lost] != 1 {
		t.Errorf("ListResults = %v; want %d at v2 and %d at v1", got, corrected, lost)
	}

	// ---- OutboxService ----
	got = c.ok("fitness.v1.OutboxService.ListOutboxEvents", viewer, "GET", "/v1/outbox/shards/"+p.Shards.Shards[0].ID+"/events?page_size=50", nil)
	events := list(got, "events")
	got1 := c.ok("fitness.v1.OutboxService.ListOutboxEvents", viewer, "GET", "/v1/outbox/shards/"+p.Shards.Shards[1].ID+"/events?page_size=50", nil)
	if n := len(events) + len(list(got1, "events")); n != 5 {
		t.Errorf("ListOutboxEvents of both shards: %d events; want 5 (3 records, a correction, a deletion): %v %v", n, got, got1)
	}
	c.fails(404, 5, "fitness.v1.OutboxService.ListOutboxEvents", viewer, "GET", "/v1/outbox/shards/shard-9/events", nil)
	got = c.ok("fitness.v1.OutboxService.GetOutboxStats", viewer, "GET", "/v1/outbox/stats", nil)
	if len(list(got, "shards")) != 2 {
		t.Errorf("GetOutboxStats = %v; want both shards", got)
	}
	const replayRoute = "fitness.v1.OutboxService.ReplayParkedEvents"
	c.fails(403, 7, replayRoute, viewer, "POST", "/v1/outbox/shards/shard-0/events:replay", obj{"reason": "INC-42"})
	c.fails(400, 3, replayRoute, operator, "POST", "/v1/outbox/shards/shard-0/events:replay", obj{})
	c.ok(replayRoute, operator, "POST", "/v1/outbox/shards/shard-0/events:replay", obj{"reason": "INC-42: nothing parked"})

	// ---- ProjectionService ----
	got = c.ok("fitness.v1.ProjectionService.GetProjectionStatus", viewer, "GET", "/v1/projection/status", nil)
	if _, ok := got["shards"]; !ok {
		t.Errorf("GetProjectionStatus = %v; want its shards", got)
	}
	c.ok("fitness.v1.ProjectionService.ListDeadLetters", viewer, "GET", "/v1/projection/dead-letters", nil)
	c.fails(401, 16, "fitness.v1.ProjectionService.ListDeadLetters", "", "GET", "/v1/projection/dead-letters", nil)

	// ---- the projection is damaged: a record lost, a stray record added ----
	p.WaitVersion(campaign, corrected, 2)
	p.WaitVersion(campaign, deleted, 2)
	p.WaitVersion(campaign, lost, 1)
	ctx := context.Background()
	if err := p.CH.Conn.Exec(ctx, fmt.Sprintf("ALTER TABLE fitness_result_versions DELETE WHERE data_id = %d", lost)); err != nil {
		t.Fatal(err)
	}
	if err := p.CH.Conn.Exec(ctx, fmt.Sprintf(`INSERT INTO fitness_result_versions (detect_id, data_id, user_id, project_id, school_id,
		grade, version, epoch, result, unit, is_deleted, event_id, shard_id, source_commit_unix_ms, ingest_unix_ms)
		SELECT %d, %d, 9, 3, %d, 5, 1, 0, CAST('4.44' AS Decimal(12, 3)), 'm', 0, 'stray-writer', 'shard-0',
		toInt64(toUnixTimestamp(now())) * 1000, toInt64(toUnixTimestamp(now())) * 1000`, campaign, stray, school)); err != nil {
		t.Fatal(err)
	}
	p.WaitFor("the lost record gone from ClickHouse", 30*time.Second, func() bool { return len(p.Origins(campaign, lost)) == 0 })

	// ---- ReconcileService ----
	const startRun = "fitness.v1.ReconcileService.StartReconciliationRun"
	runReq := obj{"scope": obj{"detect_id": campaign}, "depth": "RECONCILE_DEPTH_CONTENT"}
	c.fails(403, 7, startRun, viewer, "POST", "/v1/reconciliation-runs", runReq)
	c.fails(400, 3, startRun, operator, "POST", "/v1/reconciliation-runs", obj{"depth": "RECONCILE_DEPTH_CONTENT", "sample_rate": 2})
	run := str(get(c.ok(startRun, operator, "POST", "/v1/reconciliation-runs", runReq), "run.runId"))
	if run == "" {
		t.Fatal("StartReconciliationRun returned no run id")
	}
	updates := c.watch("fitness.v1.ReconcileService.WatchReconciliationRun", viewer, "/v1/reconciliation-runs/"+run+":watch", func(o obj) bool {
		s := str(get(o, "run.state"))
		return s == "RUN_STATE_SUCCEEDED" || s == "RUN_STATE_FAILED"
	})
	if last := updates[len(updates)-1]; str(get(last, "run.state")) != "RUN_STATE_SUCCEEDED" || num(get(last, "run.discrepancyCount")) != 2 {
		t.Fatalf("WatchReconciliationRun ended with %v; want SUCCEEDED with 2 discrepancies", last)
	}
	got = c.ok("fitness.v1.ReconcileService.GetReconciliationRun", viewer, "GET", "/v1/reconciliation-runs/"+run, nil)
	if str(get(got, "run.state")) != "RUN_STATE_SUCCEEDED" || num(get(got, "run.discrepancyCount")) != 2 {
		t.Errorf("GetReconciliationRun = %v; want SUCCEEDED with 2 discrepancies", got)
	}
	c.fails(404, 5, "fitness.v1.ReconcileService.GetReconciliationRun", viewer, "GET", "/v1/reconciliation-runs/0123456789abcdef0123456789abcdef", nil)
	got = c.ok("fitness.v1.ReconcileService.ListReconciliationRuns", viewer, "GET", "/v1/reconciliation-runs?page_size=10", nil)
	if runs := list(got, "runs"); len(runs) != 1 || str(runs[0]["runId"]) != run {
		t.Errorf("ListReconciliationRuns = %v; want the one run %s", got, run)
	}
	got = c.ok("fitness.v1.ReconcileService.ListDiscrepancies", viewer, "GET", "/v1/reconciliation-runs/"+run+"/discrepancies", nil)
	classes := map[int64]string{}
	for _, d := range list(got, "discrepancies") {
		classes[num(d["dataId"])] = str(d["class"])
	}
	if want := map[int64]string{lost: "DISCREPANCY_CLASS_MISSING_IN_TARGET", stray: "DISCREPANCY_CLASS_UNEXPECTED_TARGET_RECORD"}; fmt.Sprint(classes) != fmt.Sprint(want) {
		t.Errorf("ListDiscrepancies = %v; want %v", classes, want)
	}
	// The schedule lists what the scheduler has seen: nothing before its
	// first cycle (an interval after start-up), as a page with no token.
	got = c.ok("fitness.v1.ReconcileService.ListCampaigns", viewer, "GET", "/v1/reconciliation-campaigns?page_size=10", nil)
	if str(got["nextPageToken"]) != "" {
		t.Errorf("ListCampaigns = %v; want one page", got)
	}

	// ---- RepairService: repairs ----
	plan := c.ok("fitness.v1.RepairService.PlanRepair", operator, "POST", "/v1/repairs:plan", obj{"run_id": run})
	if num(plan["itemsTotal"]) != 2 {
		t.Errorf("PlanRepair = %v; want 2 items", plan)
	}
	const create = "fitness.v1.RepairService.CreateRepair"
	c.fails(400, 3, create, operator, "POST", "/v1/repairs", obj{"run_id": run, "request_id": "gw-rep-0"}) // no reason
	byAction := func(o obj) map[string]string {
		m := map[string]string{}
		for _, r := range list(o, "repairs") {
			m[str(r["action"])] = str(r["repairId"])
		}
		return m
	}
	first := byAction(c.ok(create, operator, "POST", "/v1/repairs", obj{"run_id": run, "reason": "INC-7", "request_id": "gw-rep-1"}))
	replay, removal := first["REPAIR_ACTION_REPLAY"], first["REPAIR_ACTION_REMOVE"]
	if len(first) != 2 || replay == "" || removal == "" {
		t.Fatalf("CreateRepair = %v; want a replay and a removal", first)
	}
	// The removal is cancelled before its approval, then requested again.
	got = c.ok("fitness.v1.RepairService.CancelRepair", operator, "POST", "/v1/repairs/"+removal+":cancel", obj{"reason": "wrong ticket"})
	if str(get(got, "repair.state")) != "REPAIR_STATE_CANCELLED" {
		t.Errorf("CancelRepair = %v; want CANCELLED", got)
	}
	second := byAction(c.ok(create, operator, "POST", "/v1/repairs", obj{"run_id": run, "reason": "INC-7 again", "request_id": "gw-rep-2"}))
	removal = second["REPAIR_ACTION_REMOVE"]
	if len(second) != 1 || removal == "" {
		t.Fatalf("second CreateRepair = %v; want the removal alone (the replay is active)", second)
	}
	items := c.ok("fitness.v1.RepairService.ListRepairItems", viewer, "GET", "/v1/repairs/"+removal+"/items", nil)
	if it := list(items, "items"); len(it) != 1 || num(it[0]["dataId"]) != stray || len(list(it[0], "origins")) == 0 {
		t.Errorf("ListRepairItems of the removal = %v; want the stray record with its origins", items)
	}
	const approve = "fitness.v1.RepairService.ApproveRepair"
	c.fails(403, 7, approve, operator, "POST", "/v1/repairs/"+removal+":approve", obj{"reason": "mine"})
	c.fails(404, 5, approve, alice, "POST", "/v1/repairs/0123456789abcdef0123456789abcdef:approve", obj{"reason": "none"})
	c.ok(approve, alice, "POST", "/v1/repairs/"+removal+":approve", obj{"reason": "stray writer"})
	updates = c.watch("fitness.v1.RepairService.WatchRepair", viewer, "/v1/repairs/"+removal+":watch", terminalRepair("repair"))
	if s := str(get(updates[len(updates)-1], "repair.state")); s != "REPAIR_STATE_VERIFIED" {
		t.Errorf("WatchRepair of the removal ended %s; want VERIFIED: %v", s, updates[len(updates)-1])
	}
	p.WaitFor("the replay verified", 2*time.Minute, func() bool {
		return str(get(c.ok("fitness.v1.RepairService.GetRepair", viewer, "GET", "/v1/repairs/"+replay, nil), "repair.state")) == "REPAIR_STATE_VERIFIED"
	})
	// The repair server verified it already: another verification is only
	// for a repair awaiting one or whose verification failed
	// (FAILED_PRECONDITION, 400).
	const verify = "fitness.v1.RepairService.VerifyRepair"
	c.fails(403, 7, verify, viewer, "POST", "/v1/repairs/"+replay+":verify", obj{"reason": "check again"})
	got = c.fails(400, 9, verify, operator, "POST", "/v1/repairs/"+replay+":verify", obj{"reason": "check again"})
	if !strings.Contains(str(got["message"]), "VERIFIED") {
		t.Errorf("VerifyRepair of a verified repair: %v; want the message to give its state", got)
	}
	// A watch that fails before its first message: the status of the error,
	// and the error as the stream's one line.
	c.watchFails(404, 5, "fitness.v1.RepairService.WatchRepair", viewer, "/v1/repairs/0123456789abcdef0123456789abcdef:watch")
	c.watchFails(401, 16, "fitness.v1.RepairService.WatchRepair", "", "/v1/repairs/"+removal+":watch")
	got = c.ok("fitness.v1.RepairService.ListRepairs", viewer, "GET", "/v1/repairs?run_id="+run, nil)
	if n := len(list(got, "repairs")); n != 3 {
		t.Errorf("ListRepairs of the run: %d repairs; want 3 (replay, cancelled removal, removal): %v", n, got)
	}
	if c := p.CurrentOf(campaign, lost); c.Version != 1 {
		t.Errorf("the lost record in ClickHouse after the replay: %+v", c)
	}

	// ---- RepairService: rebuilds ----
	epoch := num(plan["epochFloor"]) + 1
	const startRebuild = "fitness.v1.RepairService.StartRebuild"
	rebuildReq := func(id string) obj {
		return obj{"scope": obj{"detect_id": campaign}, "reason": "mapping fixed", "epoch": epoch, "request_id": id}
	}
	c.fails(403, 7, startRebuild, operator, "POST", "/v1/rebuilds", rebuildReq("gw-rb-0"))
	cancelled := str(get(c.ok(startRebuild, alice, "POST", "/v1/rebuilds", rebuildReq("gw-rb-1")), "rebuild.rebuildId"))
	got = c.ok("fitness.v1.RepairService.CancelRebuild", alice, "POST", "/v1/rebuilds/"+cancelled+":cancel", obj{"reason": "wrong epoch"})
	if str(get(got, "rebuild.state")) != "REPAIR_STATE_CANCELLED" {
		t.Errorf("CancelRebuild = %v; want CANCELLED", got)
	}
	rebuild := str(get(c.ok(startRebuild, alice, "POST", "/v1/rebuilds", rebuildReq("gw-rb-2")), "rebuild.rebuildId"))
	// The requester cannot approve: a viewer lacks the role (403); alice,
	// an admin, asked for it (the server's rule, FAILED_PRECONDITION: 400).
	c.fails(403, 7, "fitness.v1.RepairService.ApproveRebuild", viewer, "POST", "/v1/rebuilds/"+rebuild+":approve", obj{"reason": "mine"})
	c.fails(400, 9, "fitness.v1.RepairService.ApproveRebuild", alice, "POST", "/v1/rebuilds/"+rebuild+":approve", obj{"reason": "mine"})
	// The fixed transformation is deployed at the new epoch before the approval.
	p.StopConsumer()
	p.StartConsumer(uint16(epoch))
	c.ok("fitness.v1.RepairService.ApproveRebuild", bob, "POST", "/v1/rebuilds/"+rebuild+":approve", obj{"reason": "scope checked"})
	updates = c.watch("fitness.v1.RepairService.WatchRebuild", viewer, "/v1/rebuilds/"+rebuild+":watch", terminalRepair("rebuild"))
	if s := str(get(updates[len(updates)-1], "rebuild.state")); s != "REPAIR_STATE_VERIFIED" {
		t.Errorf("WatchRebuild ended %s; want VERIFIED: %v", s, updates[len(updates)-1])
	}
	got = c.ok("fitness.v1.RepairService.GetRebuild", viewer, "GET", "/v1/rebuilds/"+rebuild, nil)
	if str(get(got, "rebuild.state")) != "REPAIR_STATE_VERIFIED" || str(get(got, "rebuild.approvedBy")) != "bob" {
		t.Errorf("GetRebuild = %v; want VERIFIED, approved by bob", got)
	}
	c.fails(404, 5, "fitness.v1.RepairService.GetRebuild", viewer, "GET", "/v1/rebuilds/0123456789abcdef0123456789abcdef", nil)
	got = c.ok("fitness.v1.RepairService.ListRebuilds", viewer, "GET", fmt.Sprintf("/v1/rebuilds?detect_id=%d", campaign), nil)
	if n := len(list(got, "rebuilds")); n != 2 {
		t.Errorf("ListRebuilds of the campaign: %d; want 2 (cancelled, verified): %v", n, got)
	}

	// ---- a backend that is down: UNAVAILABLE, 503 ----
	down := newClient(t, rules, startGateway(t, p, closedPort(t), p.RelayAddr, projectionAddr, p.ReconcileAddr, p.RepairAddr))
	down.fails(503, 14, getRoute, viewer, "GET", fmt.Sprintf("/v1/schools/%d/results/%d", school, corrected), nil)
	if resp, err := http.Get(down.base + "/healthz"); err != nil {
		t.Error(err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 || !strings.Contains(string(b), "results UNREACHABLE") || !strings.Contains(string(b), "relay SERVING") {
			t.Errorf("/healthz with the results server down = %d %q; want 503 naming it", resp.StatusCode, b)
		}
	}
	if code, o := down.call("fitness.v1.OutboxService.GetOutboxStats", viewer, "GET", "/v1/outbox/stats", nil); code != 200 {
		t.Errorf("with the results server down, the relay's route = %d %v; want 200", code, o)
	}

	// ---- every rule reached ----
	var missing []string
	for _, r := range rules {
		if !c.reached[r.selector] {
			missing = append(missing, r.selector+" ("+r.method+" "+r.path+")")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("gateway.yaml rules no call of this test reaches (add a case):\n  %s", strings.Join(missing, "\n  "))
	}
}

// terminalRepair is true for a repair (or rebuild) update in a terminal state.
func terminalRepair(key string) func(obj) bool {
	return func(o obj) bool {
		switch str(get(o, key+".state")) {
		case "REPAIR_STATE_VERIFIED", "REPAIR_STATE_FAILED", "REPAIR_STATE_CANCELLED":
			return true
		}
		return false
	}
}

// The OpenAPI document is Swagger 2.0 JSON with every route of gateway.yaml
// under its path and method.
func TestOpenAPIDocumentHasEveryRoute(t *testing.T) {
	rules := loadRules(t)
	p := platformtest.New(t)
	base := startGateway(t, p, p.ResultsAddr, p.RelayAddr, closedPort(t), p.ReconcileAddr, p.RepairAddr)
	resp, err := http.Get(base + "/openapiv2/resultsync.swagger.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Swagger string                                `json:"swagger"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET /openapiv2/resultsync.swagger.json = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("the OpenAPI document is not JSON: %v", err)
	}
	if doc.Swagger != "2.0" {
		t.Errorf("swagger = %q; want 2.0", doc.Swagger)
	}
	// Path parameters are compared by position (the generator may rename them).
	paths := map[string]map[string]json.RawMessage{}
	for path, ops := range doc.Paths {
		paths[param.ReplaceAllString(path, "{}")] = ops
	}
	for _, r := range rules {
		ops, ok := paths[param.ReplaceAllString(r.path, "{}")]
		if !ok {
			t.Errorf("%s: path %s missing from the OpenAPI document", r.selector, r.path)
			continue
		}
		var op struct {
			OperationID string `json:"operationId"`
		}
		if raw, ok := ops[strings.ToLower(r.method)]; !ok || json.Unmarshal(raw, &op) != nil {
			t.Errorf("%s: %s %s missing from the OpenAPI document", r.selector, r.method, r.path)
		} else if want := r.selector[strings.LastIndex(r.selector, ".")+1:]; !strings.HasSuffix(op.OperationID, want) {
			t.Errorf("%s: %s %s is operation %q in the OpenAPI document", r.selector, r.method, r.path, op.OperationID)
		}
	}
}
