package repair_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
)

// Failure point: the repair server is killed (SIGKILL, no shutdown) in the
// middle of a repair. On restart the repair resumes where it was — no item
// is lost, and an item applied but not recorded before the kill is applied
// again only in a way that cannot change the result (the replay re-arms the
// record's existing outbox row: same version, same event id) — and ends
// VERIFIED; record by record the projection equals the shards.
func TestRepairServerKilledMidRepairResumes(t *testing.T) {
	p := newPlatform(t)
	p.StopRepair() // the binary replaces the in-process server
	bin := filepath.Join(t.TempDir(), "repair")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/resultsync/resultsync/services/repair").CombinedOutput(); err != nil {
		t.Fatalf("building services/repair: %v\n%s", err, out)
	}

	const first, n = 940000, 200
	for i := int64(0); i < n; i++ {
		p.Record(campaign, first+i, school, "1.80")
	}
	for i := int64(0); i < n; i++ {
		p.WaitVersion(campaign, first+i, 1)
	}
	// The damage: the whole campaign is gone from ClickHouse.
	ctx := context.Background()
	if err := p.CH.Conn.Exec(ctx, "ALTER TABLE fitness_result_versions DELETE WHERE detect_id = ?", campaign); err != nil {
		t.Fatal(err)
	}
	p.WaitFor("the campaign removed from ClickHouse", 30*time.Second, func() bool { return p.countIn(campaign) == 0 })
	run, found := p.reconcileRun(campaign)
	if len(found) != n {
		t.Fatalf("%d discrepancies, want %d", len(found), n)
	}

	// 20 rows/s per shard: the 200 items take about five seconds.
	addr := freeAddr(t)
	args := p.RepairArgs("--grpc-addr="+addr, "--rows-per-second=20", "--workers-per-shard=1", "--lease=2s", "--poll=200ms")
	srv := startBinary(t, bin, args)
	p.Repair = fitnessv1.NewRepairServiceClient(p.Dial(addr))
	created, err := p.Repair.CreateRepair(operator(), &fitnessv1.CreateRepairRequest{RunId: run, Reason: "campaign lost", RequestId: "crash-" + run})
	if err != nil {
		t.Fatal(err)
	}
	id := created.GetRepairs()[0].GetRepairId()
	p.WaitFor("a quarter of the items applied", 60*time.Second, func() bool { return p.getRepair(id).GetItemsDone() >= n/4 })
	srv.kill(t)

	// Before the restart: the repair is neither finished nor failed.
	srv = startBinary(t, bin, args)
	r := p.getRepair(id)
	if r.GetState() != fitnessv1.RepairState_REPAIR_STATE_EXECUTING || r.GetItemsDone() >= n {
		t.Fatalf("after the kill: %s with %d of %d items done; want EXECUTING, unfinished", r.GetState(), r.GetItemsDone(), n)
	}
	t.Logf("killed with %d of %d items done", r.GetItemsDone(), n)
	r = p.waitRepair(id, fitnessv1.RepairState_REPAIR_STATE_VERIFIED)
	if r.GetItemsDone() != n || r.GetItemsFailed() != 0 {
		t.Errorf("resumed repair: %d done, %d failed of %d", r.GetItemsDone(), r.GetItemsFailed(), n)
	}
	for dataID, d := range describeItems(p.items(id)) {
		if want := fmt.Sprintf("APPLIED v1 fitness-result-%d-v1 PASSED", dataID); d != want {
			t.Errorf("item of %d = %q, want %q", dataID, d, want)
		}
	}
	// One outbox row per record: replays re-armed, never added, versions.
	for i, db := range p.ShardDBs {
		var dup int
		if err := db.QueryRow(`SELECT COUNT(*) FROM (SELECT data_id FROM outbox_event WHERE data_id BETWEEN ? AND ? GROUP BY data_id HAVING COUNT(*) > 1) d`,
			first, first+n-1).Scan(&dup); err != nil {
			t.Fatal(err)
		}
		if dup != 0 {
			t.Errorf("shard %s: %d records with more than one outbox row", p.Shards.Shards[i].ID, dup)
		}
	}
	for i := int64(0); i < n; i++ {
		if got := p.CurrentOf(campaign, first+i); got != (current{Version: 1, Milli: 1800, Deleted: false}) {
			t.Errorf("record %d in ClickHouse = %+v, want v1 at 1.80", first+i, got)
		}
	}
	if _, again := p.reconcileRun(campaign); len(again) != 0 {
		t.Errorf("after the resumed repair: %d discrepancies", len(again))
	}
	srv.stop(t)
}

// countIn counts the campaign's rows in the projection.
func (p *platform) countIn(detect int64) uint64 {
	p.t.Helper()
	var c uint64
	if err := p.CH.Conn.QueryRow(context.Background(), "SELECT count() FROM fitness_result_versions WHERE detect_id = ?", detect).Scan(&c); err != nil {
		p.t.Fatal(err)
	}
	return c
}

// freeAddr is a loopback address no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// process is a server binary running for a test.
type process struct {
	cmd  *exec.Cmd
	log  string // its stdout and stderr
	done chan error
}

// logTail is the last n lines of the process's log.
func (pr *process) logTail(n int) string {
	b, _ := os.ReadFile(pr.log)
	return tail(string(b), n)
}

// startBinary runs the binary with args and waits until it answers health
// checks with SERVING; the process is killed when the test ends.
func startBinary(t *testing.T, bin string, args []string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "RS_PROFILE=") // everything comes from args
	logFile, err := os.CreateTemp(t.TempDir(), filepath.Base(bin)+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr := &process{cmd: cmd, log: logFile.Name(), done: make(chan error, 1)}
	go func() { pr.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-pr.done
		if t.Failed() {
			t.Logf("%s log:\n%s", filepath.Base(bin), pr.logTail(40))
		}
	})
	var addr string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--grpc-addr="); ok {
			addr = v
		}
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		res, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && res.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return pr
		}
		select {
		case err := <-pr.done:
			t.Fatalf("%s exited at start (%v):\n%s", bin, err, pr.logTail(40))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not SERVING after 30 s (last: %v %v):\n%s", bin, res, err, pr.logTail(40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill ends the process with SIGKILL: no shutdown, no lease released.
func (pr *process) kill(t *testing.T) {
	t.Helper()
	if err := pr.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-pr.done
	pr.done <- nil // for the cleanup
}

// stop ends the process with SIGTERM and expects a clean exit.
func (pr *process) stop(t *testing.T) {
	t.Helper()
	if err := pr.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-pr.done:
		pr.done <- nil
		if err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, pr.logTail(20))
		}
	case <-time.After(15 * time.Second):
		t.Errorf("no exit within 15 s of SIGTERM")
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
