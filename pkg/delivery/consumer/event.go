// Package consumer turns FitnessResultChanged events from Pulsar into rows of
// the versioned ClickHouse projection. It validates every event, writes
// batches bounded by size and time with synchronous inserts, and acknowledges
// a message only after ClickHouse acknowledged the insert that holds it. An
// event that can never be written goes to the dead-letter topic (and the
// dead_letters table) without blocking the events behind it. The consumer
// never invents or changes a version.
package consumer

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/model/canonical"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
)

// SchemaVersion is the only FitnessResultChanged schema this consumer knows.
const SchemaVersion = 1

// MaxVersion is the highest source version the projection can order: its
// row version is version << 16 | epoch in a UInt64, so a larger version would
// wrap and rank below older ones. Such an event is dead-lettered.
const MaxVersion = 1<<48 - 1

// InvalidEventError is an event that can never be written: it is
// dead-lettered, not retried.
type InvalidEventError struct {
	EventID string
	Reason  string
}

func (e *InvalidEventError) Error() string {
	return fmt.Sprintf("invalid event %q: %s", e.EventID, e.Reason)
}

// Decode parses and validates a message payload.
func Decode(payload []byte) (*fitnessv1.FitnessResultChanged, error) {
	ev := &fitnessv1.FitnessResultChanged{}
	if err := proto.Unmarshal(payload, ev); err != nil {
		return nil, &InvalidEventError{Reason: "malformed payload: " + err.Error()}
	}
	if err := Validate(ev); err != nil {
		return nil, err
	}
	return ev, nil
}

// Validate checks the schema version, required fields, a version the
// projection can order (at most MaxVersion), a finite canonical result, a
// known canonical unit, a valid source commit time and the event id's
// consistency.
func Validate(ev *fitnessv1.FitnessResultChanged) error {
	bad := func(format string, args ...any) error {
		return &InvalidEventError{EventID: ev.GetEventId(), Reason: fmt.Sprintf(format, args...)}
	}
	if v := ev.GetSchemaVersion(); v != SchemaVersion {
		return bad("unknown schema version %d (this consumer knows %d)", v, SchemaVersion)
	}
	// In a fixed order (the first non-positive one is named), without a
	// map: Validate runs for every event the consumer receives.
	for _, f := range [...]struct {
		name string
		v    int64
	}{{"data_id", ev.GetDataId()}, {"detect_id", ev.GetDetectId()}, {"user_id", ev.GetUserId()},
		{"project_id", ev.GetProjectId()}, {"school_id", ev.GetSchoolId()}, {"version", ev.GetVersion()}} {
		if f.v <= 0 {
			return bad("%s must be positive, got %d", f.name, f.v)
		}
	}
	if v := ev.GetVersion(); v > MaxVersion {
		return bad("version %d is above %d (the projection's row version is version << 16 | epoch)", v, int64(MaxVersion))
	}
	var buf [64]byte // the longest id is 55 bytes
	if want := canonical.AppendEventID(buf[:0], ev.GetDataId(), ev.GetVersion()); ev.GetEventId() != string(want) {
		return bad("event_id does not match data_id and version (want %s)", want)
	}
	if g := ev.GetGrade(); g < 1 || g > 12 {
		return bad("grade must be 1-12, got %d", g)
	}
	// A non-canonical spelling of a valid decimal ("2.310") is the same
	// value and is accepted; ToRow stores the canonical form.
	if _, err := canonical.Decimal(ev.GetResult()); err != nil {
		return bad("result: %v", err)
	}
	if u, ok := canonical.Unit(ev.GetUnit()); !ok || u != ev.GetUnit() {
		return bad("unknown or non-canonical unit %q", ev.GetUnit())
	}
	if ev.GetSourceCommitTime() == nil || ev.GetShardId() == "" {
		return bad("source_commit_time and shard_id are required")
	}
	if err := ev.GetSourceCommitTime().CheckValid(); err != nil {
		return bad("source_commit_time: %v", err)
	}
	return nil
}

// ToRow maps a valid event to a projection row with the given
// transformation epoch and ingest time. The source version is copied as is.
func ToRow(ev *fitnessv1.FitnessResultChanged, epoch uint16, ingestMs int64) chstore.Row {
	return chstore.Row{
		DetectID: ev.GetDetectId(), DataID: ev.GetDataId(), UserID: ev.GetUserId(), ProjectID: ev.GetProjectId(),
		SchoolID: ev.GetSchoolId(), Grade: int16(ev.GetGrade()), Version: ev.GetVersion(), Epoch: epoch,
		Result: canonicalResult(ev.GetResult()), Unit: ev.GetUnit(), IsDeleted: ev.GetIsDeleted(), EventID: ev.GetEventId(),
		ShardID: ev.GetShardId(), SourceCommitMs: ev.GetSourceCommitTime().AsTime().UnixMilli(), IngestMs: ingestMs,
	}
}

func canonicalResult(s string) string {
	c, err := canonical.Decimal(s)
	if err != nil {
		return s // unreachable after Validate
	}
	return c
}
