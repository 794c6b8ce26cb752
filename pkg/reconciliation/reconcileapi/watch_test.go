package reconcileapi_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/changefeed"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/reconciliation/reconcileapi"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

// watchServer serves the reconcile API over a fresh control database with
// the given watch options (the watch reads only the run store) and returns
// the client and the store, through which the test changes runs as the
// runner of this process would.
func watchServer(t *testing.T, o changefeed.WatchOptions) (fitnessv1.ReconcileServiceClient, *reconcile.RunStore) {
	t.Helper()
	store := reconcile.NewRunStore(infratest.NewMySQLDatabase(t, schema.Control).DB)
	srv, err := server.New(slog.New(slog.NewTextHandler(io.Discard, nil)), server.Config{GRPCAddr: "127.0.0.1:0", ShutdownGrace: time.Second}, servertest.AsPlatform()...)
	if err != nil {
		t.Fatal(err)
	}
	fitnessv1.RegisterReconcileServiceServer(srv.GRPC(), reconcileapi.New(store, nil, nil, reconcileapi.WithWatch(o)))
	return fitnessv1.NewReconcileServiceClient(servertest.Serve(t, srv)), store
}

// receive reads a WatchReconciliationRun stream in the background.
func receive(stream fitnessv1.ReconcileService_WatchReconciliationRunClient) <-chan servertest.Received[*fitnessv1.WatchReconciliationRunResponse] {
	return servertest.Receive(stream.Recv)
}

// A change of the run in this process wakes its watch at once: with a
// fallback poll of a minute, the update arrives within seconds.
func TestWatchIsWokenByAChangeNotByItsPoll(t *testing.T) {
	const poll = time.Minute
	client, store := watchServer(t, changefeed.WatchOptions{Poll: poll, MinInterval: 200 * time.Millisecond, MaxDuration: 10 * time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run, err := store.Create(ctx, reconcile.Scope{DetectID: 10001}, reconcile.DepthContent, 0, "test")
	if err != nil {
		t.Fatal(err)
	}
	stream, err := client.WatchReconciliationRun(ctx, &fitnessv1.WatchReconciliationRunRequest{RunId: run.ID})
	if err != nil {
		t.Fatal(err)
	}
	got := receive(stream)
	if r := servertest.Next(t, got, 10*time.Second, "the first message"); r.Err != nil || r.Msg.GetRun().GetState() != fitnessv1.RunState_RUN_STATE_PENDING {
		t.Fatalf("first message: %v, %v; want the PENDING run", r.Msg.GetRun(), r.Err)
	}
	for i, state := range []string{"RUNNING", "SUCCEEDED"} {
		run.State, run.BucketsDone, run.BucketsTotal = state, int64(i+1), 2
		if state == "SUCCEEDED" {
			run.Ended = time.Now().UTC()
		}
		changed := time.Now()
		if err := store.Update(ctx, run); err != nil {
			t.Fatal(err)
		}
		r := servertest.Next(t, got, poll/6, "the update to "+state)
		if r.Err != nil || r.Msg.GetRun().GetState().String() != "RUN_STATE_"+state || r.Msg.GetRun().GetBucketsDone() != int64(i+1) {
			t.Fatalf("after the update to %s: %v, %v", state, r.Msg.GetRun(), r.Err)
		}
		if lag := r.At.Sub(changed); lag >= poll/2 {
			t.Errorf("the update to %s arrived %s after it was written, want far less than the %s poll", state, lag, poll)
		}
	}
	if r := servertest.Next(t, got, 10*time.Second, "the end"); !errors.Is(r.Err, io.EOF) {
		t.Errorf("after the terminal state: %v, want the stream closed (EOF)", r.Err)
	}
}

// A watch of a run that does not end is closed at its maximum duration with
// UNAVAILABLE naming the bound, and watching again resumes: the current
// state comes first.
func TestWatchEndsAtItsBound(t *testing.T) {
	const bound = time.Second
	client, store := watchServer(t, changefeed.WatchOptions{Poll: 100 * time.Millisecond, MaxDuration: bound})
	ctx := context.Background()
	run, err := store.Create(ctx, reconcile.Scope{DetectID: 10001}, reconcile.DepthVersions, 0, "test")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	stream, err := client.WatchReconciliationRun(ctx, &fitnessv1.WatchReconciliationRunRequest{RunId: run.ID})
	if err != nil {
		t.Fatal(err)
	}
	servertest.EndsAtBound(t, receive(stream), start, bound)

	run.State, run.BucketsTotal, run.BucketsDone = "RUNNING", 4, 3
	if err := store.Update(ctx, run); err != nil {
		t.Fatal(err)
	}
	again, err := client.WatchReconciliationRun(ctx, &fitnessv1.WatchReconciliationRunRequest{RunId: run.ID})
	if err != nil {
		t.Fatal(err)
	}
	if r := servertest.Next(t, receive(again), 10*time.Second, "the first message of the resumed watch"); r.Err != nil ||
		r.Msg.GetRun().GetState() != fitnessv1.RunState_RUN_STATE_RUNNING || r.Msg.GetRun().GetBucketsDone() != 3 {
		t.Fatalf("resumed watch: %v, %v; want the current state (RUNNING, 3 buckets done)", r.Msg.GetRun(), r.Err)
	}
}
