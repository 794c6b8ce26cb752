package repairapi_test

import (
	"context"
	"testing"
	"time"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/changefeed"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

// receive reads a WatchRepair stream in the background.
func receive(stream fitnessv1.RepairService_WatchRepairClient) <-chan servertest.Received[*fitnessv1.WatchRepairResponse] {
	return servertest.Receive(stream.Recv)
}

// A change made through this server wakes a WatchRepair at once: with a
// fallback poll of a minute, the approval of a removal reaches its watcher
// within seconds.
func TestWatchRepairIsWokenByAChangeNotByItsPoll(t *testing.T) {
	const poll = time.Minute
	f := newFixture(t, options{watch: changefeed.WatchOptions{Poll: poll, MinInterval: 200 * time.Millisecond, MaxDuration: 10 * time.Minute}})
	run := f.scenario(t)
	removal := f.create(t, "otto", run.ID, "wake-1")[fitnessv1.RepairAction_REPAIR_ACTION_REMOVE]
	ctx, cancel := context.WithCancel(as("vera"))
	defer cancel()
	stream, err := f.client.WatchRepair(ctx, &fitnessv1.WatchRepairRequest{RepairId: removal.GetRepairId()})
	if err != nil {
		t.Fatal(err)
	}
	got := receive(stream)
	if r := servertest.Next(t, got, 10*time.Second, "the first message"); r.Err != nil || r.Msg.GetRepair().GetState() != fitnessv1.RepairState_REPAIR_STATE_AWAITING_APPROVAL {
		t.Fatalf("first message: %v, %v; want the removal AWAITING_APPROVAL", r.Msg.GetRepair(), r.Err)
	}
	approved := time.Now()
	if _, err := f.client.ApproveRepair(as("bob"), &fitnessv1.ApproveRepairRequest{RepairId: removal.GetRepairId(), Reason: "origins checked"}); err != nil {
		t.Fatal(err)
	}
	r := servertest.Next(t, got, poll/6, "the approval")
	if r.Err != nil || r.Msg.GetRepair().GetState() == fitnessv1.RepairState_REPAIR_STATE_AWAITING_APPROVAL || r.Msg.GetRepair().GetApprovedBy() != "bob" {
		t.Fatalf("after the approval: %v, %v; want the repair approved by bob", r.Msg.GetRepair(), r.Err)
	}
	if lag := r.At.Sub(approved); lag >= poll/2 {
		t.Errorf("the approval reached the watcher %s after it was made, want far less than the %s poll", lag, poll)
	}
}

// A WatchRepair of a repair that does not end is closed at its maximum
// duration with UNAVAILABLE naming the bound; watching again resumes with
// the current state first.
func TestWatchRepairEndsAtItsBound(t *testing.T) {
	const bound = time.Second
	f := newFixture(t, options{watch: changefeed.WatchOptions{Poll: 100 * time.Millisecond, MaxDuration: bound}})
	run := f.scenario(t)
	removal := f.create(t, "otto", run.ID, "bound-1")[fitnessv1.RepairAction_REPAIR_ACTION_REMOVE]
	start := time.Now()
	stream, err := f.client.WatchRepair(as("vera"), &fitnessv1.WatchRepairRequest{RepairId: removal.GetRepairId()})
	if err != nil {
		t.Fatal(err)
	}
	servertest.EndsAtBound(t, receive(stream), start, bound)
	if _, err := f.client.ApproveRepair(as("bob"), &fitnessv1.ApproveRepairRequest{RepairId: removal.GetRepairId(), Reason: "origins checked"}); err != nil {
		t.Fatal(err)
	}
	again, err := f.client.WatchRepair(as("vera"), &fitnessv1.WatchRepairRequest{RepairId: removal.GetRepairId()})
	if err != nil {
		t.Fatal(err)
	}
	if r := servertest.Next(t, receive(again), 10*time.Second, "the first message of the resumed watch"); r.Err != nil || r.Msg.GetRepair().GetApprovedBy() != "bob" {
		t.Fatalf("resumed watch: %v, %v; want the current state (approved by bob)", r.Msg.GetRepair(), r.Err)
	}
}
