package consumersvc_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/testkit/consumersvctest"
)

// oldLivenessBudget is how long the consumer's liveness probe tolerated a
// dependency outage before #27 (deploy/kubernetes/consumer.yaml: a gRPC
// probe of the overall health, periodSeconds 20 × failureThreshold 15):
// an outage longer than this restarted every consumer pod.
const oldLivenessBudget = 20 * 15 * time.Second

// httpStatus is GET http://addr/path's status code (0 when it fails).
func httpStatus(addr, path string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// ClickHouse is unreachable (cut at a proxy) for longer than the old
// liveness budget while events keep arriving: the consumer stays live all
// along (/livez 200, health "liveness" SERVING, checked every second) and
// not ready (/readyz 503, "readiness" NOT_SERVING), then ready again once
// ClickHouse returns, with every event sent meanwhile in ClickHouse.
// RS_LIVENESS_OUTAGE shortens the outage while iterating on the test.
func TestLiveNotReadyThroughAClickHouseOutagePastTheOldLivenessBudget(t *testing.T) {
	outage := oldLivenessBudget + 15*time.Second
	if s := os.Getenv("RS_LIVENESS_OUTAGE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("RS_LIVENESS_OUTAGE=%q: %v", s, err)
		}
		outage = d
		t.Logf("outage shortened to %s by RS_LIVENESS_OUTAGE (the old liveness budget is %s)", outage, oldLivenessBudget)
	}
	e := newEnv(t)
	cfg := e.config(500 * time.Millisecond)
	cfg.Server.HTTPAddr = "127.0.0.1:0"
	c := consumersvctest.Start(t, cfg)
	addr := c.Svc.HTTPAddr()
	c.WaitHealth(t, "", serving, 20*time.Second)
	want := e.send(t, 910000, 10)
	e.waitState(t, want, 30*time.Second)
	if l, r := httpStatus(addr, "/livez"), httpStatus(addr, "/readyz"); l != http.StatusOK || r != http.StatusOK {
		t.Fatalf("before the outage: /livez %d, /readyz %d, want 200 200", l, r)
	}

	e.chPx.Down()
	cut := time.Now()
	took := c.WaitHealth(t, server.ReadinessHealthName, notServing, 10*time.Second)
	t.Logf("ClickHouse cut -> readiness NOT_SERVING in %s", took.Round(time.Millisecond))
	var checks, notLive, ready int
	for i := 0; time.Since(cut) < outage; i++ {
		if i%30 == 0 { // events keep arriving: the consumer keeps retrying its writes
			want = append(want, e.send(t, 910000+int64(len(want)), 5)...)
		}
		checks++
		if httpStatus(addr, "/livez") != http.StatusOK || c.Health(server.LivenessHealthName) != serving {
			notLive++
			t.Errorf("not live %s into the ClickHouse outage", time.Since(cut).Round(time.Second))
		}
		if httpStatus(addr, "/readyz") != http.StatusServiceUnavailable || c.Health(server.ReadinessHealthName) != notServing {
			ready++
			t.Errorf("ready %s into the ClickHouse outage", time.Since(cut).Round(time.Second))
		}
		time.Sleep(time.Second)
	}
	t.Logf("ClickHouse unreachable for %s (old liveness budget %s): %d checks, %d not live, %d ready",
		time.Since(cut).Round(time.Second), oldLivenessBudget, checks, notLive, ready)

	e.chPx.Up()
	took = c.WaitHealth(t, server.ReadinessHealthName, serving, 30*time.Second)
	t.Logf("ClickHouse back -> readiness SERVING in %s", took.Round(time.Millisecond))
	if l, r := httpStatus(addr, "/livez"), httpStatus(addr, "/readyz"); l != http.StatusOK || r != http.StatusOK {
		t.Errorf("after the outage: /livez %d, /readyz %d, want 200 200", l, r)
	}
	e.waitState(t, want, 60*time.Second)
	if took, err := c.Stop(t); err != nil {
		t.Errorf("Run = %v after %s, want nil", err, took)
	}
}
