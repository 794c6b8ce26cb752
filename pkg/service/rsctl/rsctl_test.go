package rsctl_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"io"
	"log/slog"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/platform/tlsconfig"
	"github.com/resultsync/resultsync/pkg/service/rsctl"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/testkit/platformtest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
	"github.com/resultsync/resultsync/pkg/testkit/tlstest"
)

// cli runs rsctl against one platform's servers.
type cli struct {
	t    *testing.T
	p    *platformtest.Platform
	addr []string
}

func newCLI(t *testing.T, p *platformtest.Platform) *cli {
	return &cli{t: t, p: p, addr: []string{"--results-addr", p.ResultsAddr, "--relay-addr", p.RelayAddr,
		"--consumer-addr", p.ConsumerAddr, "--reconcile-addr", p.ReconcileAddr, "--repair-addr", p.RepairAddr}}
}

// run runs rsctl as token with args and returns its exit code, stdout and stderr.
func (c *cli) run(token string, args ...string) (int, string, string) {
	c.t.Helper()
	var out, errs bytes.Buffer
	ctx, cancel := context.WithTimeout(c.t.Context(), 2*time.Minute)
	defer cancel()
	all := append(append([]string{}, c.addr...), args...)
	if token != "" {
		all = append([]string{"--token", token}, all...)
	}
	code := rsctl.Run(ctx, all, &out, &errs)
	return code, out.String(), errs.String()
}

// must runs rsctl and fails the test unless it exits with want.
func (c *cli) must(want int, token string, args ...string) (string, string) {
	c.t.Helper()
	code, out, errs := c.run(token, args...)
	if code != want {
		c.t.Fatalf("rsctl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errs)
	}
	return out, errs
}

// json runs rsctl -o json, expects exit 0 and decodes stdout into m.
func (c *cli) json(m proto.Message, token string, args ...string) {
	c.t.Helper()
	out, _ := c.must(rsctl.ExitOK, token, append([]string{"-o", "json"}, args...)...)
	if err := protojson.Unmarshal([]byte(out), m); err != nil {
		c.t.Fatalf("rsctl %s: output is not a %T: %v\n%s", strings.Join(args, " "), m, err, out)
	}
}

const (
	viewer   = "tok-viewer"
	operator = "tok-operator"
	alice    = "tok-admin-alice"
)

// TestOperatorStory drives rsctl against the whole platform on the real
// engines: write, read, reconcile with --wait, find a stray record, repair
// it (plan, create, approve, watch) and look at the outbox and the
// projection, checking outputs and exit codes.
func TestOperatorStory(t *testing.T) {
	p := platformtest.New(t)
	c := newCLI(t, p)
	const (
		campaign = 30001
		id       = 930001
		stray    = 930009
		school   = 7
	)

	// Write and read.
	var rec fitnessv1.RecordResultResponse
	c.json(&rec, operator, "results", "record", "--request-id", "cli-r-1", "--data-id", fmt.Sprint(id), "--detect-id", fmt.Sprint(campaign),
		"--user-id", "4", "--project-id", "3", "--school", fmt.Sprint(school), "--grade", "5", "--result", "2.21", "--unit", "m")
	if rec.GetResult().GetVersion() != 1 {
		t.Fatalf("recorded version %d, want 1", rec.GetResult().GetVersion())
	}
	// The same request id again: the first answer, nothing new.
	var again fitnessv1.RecordResultResponse
	c.json(&again, operator, "results", "record", "--request-id", "cli-r-1", "--data-id", fmt.Sprint(id), "--detect-id", fmt.Sprint(campaign),
		"--user-id", "4", "--project-id", "3", "--school", fmt.Sprint(school), "--grade", "5", "--result", "2.21", "--unit", "m")
	if again.GetEventId() != rec.GetEventId() {
		t.Errorf("retried record: event %s, want the first one %s", again.GetEventId(), rec.GetEventId())
	}
	out, errs := c.must(rsctl.ExitOK, operator, "results", "correct", "--school", fmt.Sprint(school), "--data-id", fmt.Sprint(id),
		"--expected-version", "1", "--result", "2.31", "--unit", "m", "--reason", "typo")
	if !strings.Contains(out, "2.31") || !strings.Contains(errs, "request id rsctl-correct-") {
		t.Errorf("correct: stdout %q, stderr %q: want the new value and the generated request id", out, errs)
	}
	_, errs = c.must(rsctl.ExitConflict, operator, "results", "correct", "--school", fmt.Sprint(school), "--data-id", fmt.Sprint(id),
		"--expected-version", "1", "--result", "2.41", "--unit", "m")
	if !strings.Contains(errs, "Aborted") || !strings.Contains(errs, "fitness.v1.VersionConflict") {
		t.Errorf("stale correct: stderr %q, want Aborted with the VersionConflict", errs)
	}
	var got fitnessv1.GetResultResponse
	c.json(&got, viewer, "results", "get", "--school", fmt.Sprint(school), "--data-id", fmt.Sprint(id))
	if got.GetResult().GetVersion() != 2 || got.GetResult().GetResult() != "2.31" {
		t.Errorf("get: %v, want version 2 of 2.31", got.GetResult())
	}
	out, _ = c.must(rsctl.ExitOK, viewer, "results", "list", "--detect-id", fmt.Sprint(campaign))
	if !strings.Contains(out, "DATA_ID") || !strings.Contains(out, fmt.Sprint(id)) {
		t.Errorf("results list table lacks the record:\n%s", out)
	}

	// Exit codes of refusals and mistakes.
	c.must(rsctl.ExitNotFound, viewer, "results", "get", "--school", fmt.Sprint(school), "--data-id", "939999")
	c.must(rsctl.ExitPermission, "", "results", "get", "--school", fmt.Sprint(school), "--data-id", fmt.Sprint(id))
	c.must(rsctl.ExitPermission, viewer, "results", "correct", "--school", fmt.Sprint(school), "--data-id", fmt.Sprint(id),
		"--expected-version", "2", "--result", "2.41", "--unit", "m")
	c.must(rsctl.ExitUsage, viewer, "results", "frobnicate")
	c.must(rsctl.ExitUsage, viewer, "runs", "get")
	c.must(rsctl.ExitUsage, viewer, "reconcile", "start", "--depth", "deep")
	c.must(rsctl.ExitUsage, viewer, "--output", "yaml", "projection", "status")

	// A clean run, waited for: progress on stderr, the run on stdout.
	p.WaitVersion(campaign, id, 2)
	out, errs = c.must(rsctl.ExitOK, operator, "reconcile", "start", "--detect-id", fmt.Sprint(campaign), "--depth", "content",
		"--wait", "--fail-on-discrepancies")
	if !strings.Contains(errs, "SUCCEEDED: buckets") || !strings.Contains(out, "SUCCEEDED") {
		t.Errorf("reconcile --wait: stdout %q, stderr %q: want SUCCEEDED progress and the run", out, errs)
	}

	// A stray record in the projection: the run finds it (exit 8 with
	// --fail-on-discrepancies), the repair removes it.
	ghost := chstore.Row{DetectID: campaign, DataID: stray, UserID: 5, ProjectID: 3, SchoolID: school, Grade: 5, Version: 1,
		Result: "9.99", Unit: "m", EventID: fmt.Sprintf("fitness-result-%d-v1", stray), ShardID: p.Shards.Shards[p.Shards.Owner(stray)].ID,
		SourceCommitMs: time.Now().UnixMilli(), IngestMs: time.Now().UnixMilli()}
	if err := p.Proj.Insert(t.Context(), []chstore.Row{ghost}); err != nil {
		t.Fatal(err)
	}
	out, _ = c.must(rsctl.ExitDiscrepancies, operator, "-o", "json", "reconcile", "start", "--detect-id", fmt.Sprint(campaign),
		"--wait", "--fail-on-discrepancies", "--request-id", "cli-run-1")
	var waited fitnessv1.WatchReconciliationRunResponse
	if err := protojson.Unmarshal([]byte(out), &waited); err != nil {
		t.Fatalf("reconcile --wait -o json: %v\n%s", err, out)
	}
	run := waited.GetRun().GetRunId()
	if waited.GetRun().GetDiscrepancyCount() != 1 {
		t.Fatalf("run %s found %d discrepancies, want 1", run, waited.GetRun().GetDiscrepancyCount())
	}
	// The same command retried with its request id: the same run, no other.
	var started fitnessv1.StartReconciliationRunResponse
	c.json(&started, operator, "reconcile", "start", "--detect-id", fmt.Sprint(campaign), "--request-id", "cli-run-1")
	if started.GetRun().GetRunId() != run {
		t.Errorf("reconcile start retried with --request-id cli-run-1: run %s, want %s", started.GetRun().GetRunId(), run)
	}
	var ds fitnessv1.ListDiscrepanciesResponse
	c.json(&ds, viewer, "discrepancies", "list", run)
	if len(ds.GetDiscrepancies()) != 1 || ds.GetDiscrepancies()[0].GetDataId() != stray ||
		ds.GetDiscrepancies()[0].GetClass() != fitnessv1.DiscrepancyClass_DISCREPANCY_CLASS_UNEXPECTED_TARGET_RECORD {
		t.Fatalf("discrepancies of %s: %v, want the stray record", run, ds.GetDiscrepancies())
	}
	out, _ = c.must(rsctl.ExitOK, viewer, "runs", "get", run)
	if !strings.Contains(out, run) {
		t.Errorf("runs get table lacks the run:\n%s", out)
	}
	out, _ = c.must(rsctl.ExitOK, operator, "repair", "plan", run)
	if !strings.Contains(out, "REMOVE") || !strings.Contains(out, "true") {
		t.Errorf("repair plan: want a REMOVE needing approval:\n%s", out)
	}
	var created fitnessv1.CreateRepairResponse
	c.json(&created, operator, "repair", "create", run, "--reason", "stray writer", "--request-id", "cli-repair-1")
	if len(created.GetRepairs()) != 1 || created.GetRepairs()[0].GetAction() != fitnessv1.RepairAction_REPAIR_ACTION_REMOVE {
		t.Fatalf("repair create: %v, want one REMOVE", created.GetRepairs())
	}
	repair := created.GetRepairs()[0].GetRepairId()
	c.must(rsctl.ExitPermission, operator, "repair", "approve", repair, "--reason", "mine") // its requester cannot approve it
	out, _ = c.must(rsctl.ExitOK, viewer, "repair", "items", repair)
	if !strings.Contains(out, fmt.Sprint(stray)) || !strings.Contains(out, "origin of data_id") {
		t.Errorf("repair items: want the stray record and its origin:\n%s", out)
	}
	var approved, approvedAgain fitnessv1.ApproveRepairResponse
	c.json(&approved, alice, "repair", "approve", repair, "--reason", "a stray writer", "--request-id", "cli-approve-1")
	c.json(&approvedAgain, alice, "repair", "approve", repair, "--reason", "a stray writer", "--request-id", "cli-approve-1") // a retry: the first answer
	if !proto.Equal(&approved, &approvedAgain) || approved.GetRepair().GetApprovedBy() == "" {
		t.Errorf("repair approve retried with its request id = %v, want the first answer %v", &approvedAgain, &approved)
	}
	out, errs = c.must(rsctl.ExitOK, viewer, "repair", "watch", repair)
	if !strings.Contains(out, "VERIFIED") || !strings.Contains(errs, "repair "+repair) {
		t.Errorf("repair watch: stdout %q, stderr %q: want VERIFIED and progress lines", out, errs)
	}
	c.must(rsctl.ExitOK, viewer, "repair", "get", repair)
	var listed fitnessv1.ListRepairsResponse
	c.json(&listed, viewer, "repair", "list", "--run", run, "--state", "verified")
	if len(listed.GetRepairs()) != 1 {
		t.Errorf("repair list --run --state verified: %d repairs, want 1", len(listed.GetRepairs()))
	}
	// A verified repair is not verified again: FAILED_PRECONDITION, exit 5.
	_, errs = c.must(rsctl.ExitConflict, operator, "repair", "verify", repair, "--reason", "check again")
	if !strings.Contains(errs, "FailedPrecondition") {
		t.Errorf("repair verify of a verified repair: stderr %q, want FailedPrecondition", errs)
	}

	// The relay's outbox and the projection.
	var stats fitnessv1.GetOutboxStatsResponse
	c.json(&stats, viewer, "outbox", "stats")
	if len(stats.GetShards()) != len(p.Shards.Shards) {
		t.Errorf("outbox stats: %d shards, want %d", len(stats.GetShards()), len(p.Shards.Shards))
	}
	var replayed, replayedAgain fitnessv1.ReplayParkedEventsResponse
	c.json(&replayed, operator, "outbox", "replay", "--shard", p.Shards.Shards[0].ID, "--reason", "nothing parked", "--request-id", "cli-replay-1")
	if replayed.GetReplayedCount() != 0 {
		t.Errorf("outbox replay: %d replayed, want 0 (nothing is parked)", replayed.GetReplayedCount())
	}
	c.json(&replayedAgain, operator, "outbox", "replay", "--shard", p.Shards.Shards[0].ID, "--reason", "nothing parked", "--request-id", "cli-replay-1")
	if !proto.Equal(&replayed, &replayedAgain) {
		t.Errorf("outbox replay retried with its request id = %v, want the first answer %v (one audit entry)", &replayedAgain, &replayed)
	}
	// Without --request-id a fresh one is sent and printed, to retry with.
	if _, errs := c.must(rsctl.ExitOK, operator, "outbox", "replay", "--shard", p.Shards.Shards[0].ID, "--reason", "nothing parked"); !strings.Contains(errs, "request id rsctl-replay-") {
		t.Errorf("outbox replay without --request-id: stderr %q, want the request id it sent", errs)
	}
	out, _ = c.must(rsctl.ExitOK, viewer, "projection", "status")
	if !strings.Contains(out, "applied events") {
		t.Errorf("projection status:\n%s", out)
	}
	c.must(rsctl.ExitOK, viewer, "runs", "list", "--detect-id", fmt.Sprint(campaign))
}

// TestUnavailable: a server that does not answer exits 6.
func TestUnavailable(t *testing.T) {
	var out, errs bytes.Buffer
	code := rsctl.Run(t.Context(), []string{"--consumer-addr", "127.0.0.1:1", "--timeout", "2s", "--token", viewer, "projection", "status"}, &out, &errs)
	if code != rsctl.ExitUnavailable {
		t.Errorf("exit %d, want %d (stderr %q)", code, rsctl.ExitUnavailable, errs.String())
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		var out, errs bytes.Buffer
		if code := rsctl.Run(t.Context(), args, &out, &errs); code != 0 || !strings.HasPrefix(out.String(), "rsctl ") {
			t.Errorf("rsctl %v: exit %d, output %q", args, code, out.String())
		}
	}
}

// TestEnvironment: addresses, the token and the output format from the
// environment; flags win.
func TestEnvironment(t *testing.T) {
	t.Setenv("RS_CONSUMER_ADDR", "127.0.0.1:1")
	t.Setenv("RSCTL_OUTPUT", "yaml")
	var out, errs bytes.Buffer
	if code := rsctl.Run(t.Context(), []string{"projection", "status"}, &out, &errs); code != rsctl.ExitUsage {
		t.Errorf("RSCTL_OUTPUT=yaml: exit %d, want %d (stderr %q)", code, rsctl.ExitUsage, errs.String())
	}
	t.Setenv("RSCTL_OUTPUT", "json")
	t.Setenv("RSCTL_TIMEOUT", "1s")
	errs.Reset()
	if code := rsctl.Run(t.Context(), []string{"projection", "status"}, &out, &errs); code != rsctl.ExitUnavailable {
		t.Errorf("RS_CONSUMER_ADDR=127.0.0.1:1: exit %d, want %d (stderr %q)", code, rsctl.ExitUnavailable, errs.String())
	}
	t.Setenv("RSCTL_TLS_CERT_FILE", "/nonexistent/client.pem")
	errs.Reset()
	if code := rsctl.Run(t.Context(), []string{"projection", "status"}, &out, &errs); code != rsctl.ExitUsage {
		t.Errorf("a client certificate without its key: exit %d, want %d (stderr %q)", code, rsctl.ExitUsage, errs.String())
	}
}

type projection struct {
	fitnessv1.UnimplementedProjectionServiceServer
}

func (projection) GetProjectionStatus(context.Context, *fitnessv1.GetProjectionStatusRequest) (*fitnessv1.GetProjectionStatusResponse, error) {
	return &fitnessv1.GetProjectionStatusResponse{AppliedEvents: 42}, nil
}

// TestTLS: against a server of the shared bootstrap serving mutual TLS,
// rsctl answers with the CA and the client certificate (--tls-* flags or
// RSCTL_TLS_*) and fails as unavailable (6) without them: plaintext, TLS
// without the client certificate, a CA that did not sign the server's.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca, other := tlstest.NewCA(t, dir, "ca"), tlstest.NewCA(t, dir, "other-ca")
	srvCert := ca.Issue(t, dir, "consumer", tlstest.Options{})
	client := ca.Issue(t, dir, "rsctl", tlstest.Options{})
	srv, err := server.New(slog.New(slog.NewTextHandler(io.Discard, nil)), server.Config{GRPCAddr: "127.0.0.1:0", ShutdownGrace: time.Second,
		LogLevel: "info", TLS: tlsconfig.Files{CertFile: srvCert.CertFile, KeyFile: srvCert.KeyFile, CAFile: ca.File, ClientAuth: true}})
	if err != nil {
		t.Fatal(err)
	}
	fitnessv1.RegisterProjectionServiceServer(srv.GRPC(), projection{})
	servertest.Serve(t, srv)

	run := func(args ...string) (int, string, string) {
		var out, errs bytes.Buffer
		code := rsctl.Run(t.Context(), append([]string{"--consumer-addr", srv.GRPCAddr(), "--timeout", "5s"}, args...), &out, &errs)
		return code, out.String(), errs.String()
	}
	tlsFlags := []string{"--tls-ca-file", ca.File, "--tls-cert-file", client.CertFile, "--tls-key-file", client.KeyFile}
	if code, out, errs := run(append(tlsFlags, "projection", "status")...); code != rsctl.ExitOK || !strings.Contains(out, "applied events 42") {
		t.Errorf("over mutual TLS: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	for name, args := range map[string][]string{
		"plaintext":             nil,
		"no client certificate": {"--tls-ca-file", ca.File},
		"another CA":            {"--tls-ca-file", other.File, "--tls-cert-file", client.CertFile, "--tls-key-file", client.KeyFile},
	} {
		if code, _, errs := run(append(args, "projection", "status")...); code != rsctl.ExitUnavailable {
			t.Errorf("%s: exit %d, want %d (stderr %q)", name, code, rsctl.ExitUnavailable, errs)
		}
	}
	t.Setenv("RSCTL_TLS_CA_FILE", ca.File)
	t.Setenv("RSCTL_TLS_CERT_FILE", client.CertFile)
	t.Setenv("RSCTL_TLS_KEY_FILE", client.KeyFile)
	if code, _, errs := run("projection", "status"); code != rsctl.ExitOK {
		t.Errorf("TLS from RSCTL_TLS_*: exit %d (stderr %q)", code, errs)
	}
}
