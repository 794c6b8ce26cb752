package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/testkit/platformtest"
)

// startBinaryGateway builds services/gateway and runs the binary in front of
// the platform's servers until the test ends; it returns the JSON API base
// URL. The binary links only what the gateway itself imports: an error
// detail type it does not know cannot be rendered (the in-process gateway
// of the other tests knows every type the servers link).
func startBinaryGateway(t *testing.T, p *platformtest.Platform, consumer string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gateway")
	if out, err := exec.Command("go", "build", "-o", bin, "../../services/gateway").CombinedOutput(); err != nil {
		t.Fatalf("building services/gateway: %v\n%s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--grpc-addr=127.0.0.1:0", "--http-addr=", "--shutdown-grace=2s",
		"--auth-tokens="+platformtest.Tokens, "--api-addr=127.0.0.1:0", "--openapi-file="+openapiFile,
		"--results-addr="+p.ResultsAddr, "--relay-addr="+p.RelayAddr, "--consumer-addr="+consumer,
		"--reconcile-addr="+p.ReconcileAddr, "--repair-addr="+p.RepairAddr)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the gateway binary: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	api := make(chan string, 1)
	logs := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			select {
			case logs <- sc.Text():
			default:
			}
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "JSON API listening" {
				api <- rec.Addr
			}
		}
	}()
	select {
	case a := <-api:
		return "http://" + a
	case <-time.After(60 * time.Second):
		close(logs)
		var tail []string
		for l := range logs {
			tail = append(tail, l)
		}
		t.Fatalf("the gateway binary did not log its JSON API address in 60s:\n%s", strings.Join(tail, "\n"))
	}
	return ""
}

// The gateway binary renders the servers' error details: the field
// violations of a refused write (google.rpc.BadRequest) and the version
// conflict of a stale correction, not "failed to marshal error message"
// (500).
func TestGatewayBinaryRendersErrorDetails(t *testing.T) {
	p := platformtest.New(t)
	c := newClient(t, loadRules(t), startBinaryGateway(t, p, closedPort(t)))
	bad := c.fails(400, 3, "fitness.v1.ResultService.RecordResult", "tok-operator", "POST", "/v1/results",
		obj{"data_id": 930001, "detect_id": campaign, "school_id": school, "grade": 5, "result": "2.21", "unit": "m"})
	if br := detail(bad, "google.rpc.BadRequest"); br == nil || len(list(br, "fieldViolations")) == 0 {
		t.Errorf("400 without google.rpc.BadRequest field violations: %v", bad)
	}
	p.Record(campaign, 930002, school, "2.21")
	p.Correct(930002, school, 1, "2.31")
	conflict := c.fails(409, 10, "fitness.v1.ResultService.CorrectResult", "tok-operator", "POST",
		fmt.Sprintf("/v1/schools/%d/results/%d:correct", school, 930002),
		obj{"request_id": "gw-bin-cor", "expected_version": 1, "result": "2.41", "unit": "m", "reason": "stale"})
	if vc := detail(conflict, "fitness.v1.VersionConflict"); vc == nil || num(vc["currentVersion"]) != 2 {
		t.Errorf("409 without the fitness.v1.VersionConflict detail: %v", conflict)
	}
	c.fails(400, 3, "fitness.v1.RepairService.ListRepairs", "tok-viewer", "GET", "/v1/repairs?page_token=garbage", nil)
}
