package consumer_test

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/consumer"
	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
)

// maxRowVersion bounds the source version: the engine's version column is
// version << 16 | epoch in a UInt64 (pkg/storage/schema/clickhouse), so a larger
// version would wrap and rank below older versions.
const maxRowVersion = 1<<48 - 1 // independent of consumer.MaxVersion on purpose

// fuzzEvent is the valid event the fuzzers start from.
func fuzzEvent() *fitnessv1.FitnessResultChanged {
	return &fitnessv1.FitnessResultChanged{
		EventId: canonical.EventID(900001, 2), DataId: 900001, DetectId: 10001, UserId: 4, ProjectId: 3,
		SchoolId: 7, Grade: 5, Version: 2, Result: "2.310", Unit: "m", SchemaVersion: 1,
		SourceCommitTime: &timestamppb.Timestamp{Seconds: 1_780_000_000, Nanos: 123_000_000}, ShardId: "shard-1",
	}
}

// checkDecoded holds the consumer's contract for one payload: Decode either
// refuses it with an InvalidEventError (a dead letter) or returns an event
// whose row satisfies every invariant of the projection.
func checkDecoded(t *testing.T, payload []byte) {
	t.Helper()
	ev, err := consumer.Decode(payload)
	if err != nil {
		var ie *consumer.InvalidEventError
		if !errors.As(err, &ie) {
			t.Fatalf("Decode refused with %T %v; want an InvalidEventError (dead letter)", err, err)
		}
		if ev != nil {
			t.Fatalf("Decode returned an event with its error %v", err)
		}
		return
	}
	const epoch, ingest = 7, 1_780_000_001_000
	checkRow(t, ev, consumer.ToRow(ev, epoch, ingest), epoch, ingest)
	// The accepted event is stable: re-encoded, it decodes to the same row.
	b, err := proto.Marshal(ev)
	if err != nil {
		t.Fatalf("re-encoding an accepted event: %v", err)
	}
	ev2, err := consumer.Decode(b)
	if err != nil {
		t.Fatalf("an accepted event, re-encoded, is refused: %v", err)
	}
	if r1, r2 := consumer.ToRow(ev, epoch, ingest), consumer.ToRow(ev2, epoch, ingest); r1 != r2 {
		t.Fatalf("re-encoded event gives another row:\n%+v\n%+v", r1, r2)
	}
}

func checkRow(t *testing.T, ev *fitnessv1.FitnessResultChanged, r chstore.Row, epoch uint16, ingest int64) {
	t.Helper()
	fail := func(what string) {
		t.Fatalf("accepted event gives a row that breaks %s:\nevent %v\nrow %+v", what, ev, r)
	}
	for _, id := range []int64{r.DetectID, r.DataID, r.UserID, r.ProjectID, r.SchoolID} {
		if id <= 0 {
			fail("positive ids")
		}
	}
	if r.Version <= 0 || r.Version > maxRowVersion {
		fail("the version range (1 .. 2^48-1, the engine's version column)")
	}
	if r.Version != ev.GetVersion() || r.DataID != ev.GetDataId() {
		fail("the source identity and version (copied as is)")
	}
	if r.EventID != canonical.EventID(r.DataID, r.Version) {
		fail("the deterministic event id")
	}
	if r.Grade < 1 || r.Grade > 12 {
		fail("the grade range 1-12")
	}
	if c, err := canonical.Decimal(r.Result); err != nil || c != r.Result {
		fail("a canonical result")
	}
	if want, _ := canonical.Milli(ev.GetResult()); mustMilli(r.Result) != want {
		fail("the result's value")
	}
	if u, ok := canonical.Unit(r.Unit); !ok || u != r.Unit {
		fail("a canonical unit")
	}
	if r.ShardID == "" {
		fail("a shard id")
	}
	ts := ev.GetSourceCommitTime()
	if !ts.IsValid() || r.SourceCommitMs != ts.AsTime().UnixMilli() {
		fail("a valid source commit time")
	}
	if r.Epoch != epoch || r.IngestMs != ingest || r.IsDeleted != ev.GetIsDeleted() {
		fail("the epoch, ingest time and deletion state")
	}
}

// FuzzDecode: random payloads, and mutations of valid ones, are a valid row
// or a dead letter, never a panic.
func FuzzDecode(f *testing.F) {
	valid, err := proto.Marshal(fuzzEvent())
	if err != nil {
		f.Fatal(err)
	}
	del := fuzzEvent()
	del.IsDeleted, del.Result = true, "0"
	tomb, _ := proto.Marshal(del)
	f.Add(valid)
	f.Add(tomb)
	f.Add(valid[:len(valid)/2])
	f.Add(append(append([]byte{}, valid...), valid...))
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff})
	f.Add([]byte(`{"event_id":"fitness-result-900001-v2"}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		checkDecoded(t, payload)
	})
}

// FuzzEvent: a valid event with fuzzed field values (the mutations a
// producer bug or a hand-made message could bring) is a valid row or a dead
// letter.
func FuzzEvent(f *testing.F) {
	f.Add(int64(900001), int64(2), int64(10001), int64(4), int64(3), int64(7), int32(5), "2.310", "m", false, uint32(1), "shard-1", true, int64(1_780_000_000), int32(0))
	f.Add(int64(900001), int64(1<<48), int64(10001), int64(4), int64(3), int64(7), int32(5), "2.31", "m", false, uint32(1), "shard-1", true, int64(1_780_000_000), int32(0))
	f.Add(int64(900001), int64(1<<62), int64(10001), int64(4), int64(3), int64(7), int32(5), "2.31", "m", false, uint32(1), "shard-1", true, int64(1_780_000_000), int32(0))
	f.Add(int64(1), int64(1), int64(1), int64(1), int64(1), int64(1), int32(12), "-0.000", "m", true, uint32(1), "s", true, int64(0), int32(0))
	f.Add(int64(900001), int64(2), int64(10001), int64(4), int64(3), int64(7), int32(5), "2.31", "meters", false, uint32(1), "shard-1", true, int64(1_780_000_000), int32(0))
	f.Add(int64(900001), int64(2), int64(10001), int64(4), int64(3), int64(7), int32(5), "NaN", "m", false, uint32(2), "", false, int64(-1), int32(-1))
	f.Add(int64(900001), int64(2), int64(10001), int64(4), int64(3), int64(7), int32(5), "2.31", "m", false, uint32(1), "shard-1", true, int64(-9_000_000_000_000_000), int32(0))
	f.Add(int64(900001), int64(2), int64(10001), int64(4), int64(3), int64(7), int32(5), "2.31", "m", false, uint32(1), "shard-1", true, int64(1_780_000_000), int32(2_000_000_000))
	f.Fuzz(func(t *testing.T, dataID, version, detectID, userID, projectID, schoolID int64, grade int32, result, unit string,
		deleted bool, schema uint32, shardID string, matchingID bool, secs int64, nanos int32) {
		ev := &fitnessv1.FitnessResultChanged{
			EventId: "fitness-result-x", DataId: dataID, DetectId: detectID, UserId: userID, ProjectId: projectID,
			SchoolId: schoolID, Grade: grade, Version: version, Result: result, Unit: unit, IsDeleted: deleted,
			SchemaVersion: schema, ShardId: shardID, SourceCommitTime: &timestamppb.Timestamp{Seconds: secs, Nanos: nanos},
		}
		if matchingID {
			ev.EventId = canonical.EventID(dataID, version)
		}
		b, err := proto.Marshal(ev)
		if err != nil {
			t.Skip("not encodable:", err) // invalid UTF-8 in a string field: no producer can send it
		}
		checkDecoded(t, b)
	})
}

func mustMilli(d string) int64 {
	m, _ := canonical.Milli(d)
	return m
}
