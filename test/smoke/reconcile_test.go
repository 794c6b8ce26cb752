package smoke

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// A reconcile server whose ClickHouse is unreachable starts, reports
// NOT_SERVING with dependency/clickhouse NOT_SERVING (while the control
// database it can reach stays SERVING), and still stops cleanly within its
// shutdown grace on SIGTERM.
func TestReconcileWithoutClickHouseIsNotServingAndStopsWithinGrace(t *testing.T) {
	const grace = 3 * time.Second
	p := startBinary(t, "reconcile", "--profile=local", "--grpc-addr=127.0.0.1:0", "--http-addr=",
		"--shutdown-grace="+grace.String(), "--clickhouse-addr=127.0.0.1:9")
	addr := p.grpcAddr(t)

	// The probes ran once the reachable dependency reports SERVING.
	waitHealth(t, "reconcile without ClickHouse", addr, "dependency/control", healthpb.HealthCheckResponse_SERVING)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	// Longer than two probe intervals: ClickHouse was checked, and failed.
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		for _, svc := range []string{"", "dependency/clickhouse"} {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
			cancel()
			if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
				t.Fatalf("reconcile without ClickHouse: health of %q = %v, %v; want NOT_SERVING\n%s", svc, resp.GetStatus(), err, p.logTail())
			}
		}
	}

	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		took := time.Since(start)
		if err != nil {
			t.Errorf("reconcile exited with %v after SIGTERM\n%s", err, p.logTail())
		}
		if took > grace {
			t.Errorf("reconcile took %s to exit after SIGTERM; its shutdown grace is %s", took, grace)
		}
		if !strings.Contains(p.logTail(), `"server stopped"`) {
			t.Errorf("reconcile did not log a clean stop\n%s", p.logTail())
		}
	case <-time.After(3 * grace):
		t.Fatalf("reconcile still running %s after SIGTERM (grace %s)\n%s", 3*grace, grace, p.logTail())
	}
}
