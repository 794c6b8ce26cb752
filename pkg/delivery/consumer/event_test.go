package consumer_test

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/delivery/consumer"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*fitnessv1.FitnessResultChanged)
		ok   bool
	}{
		{"valid", func(*fitnessv1.FitnessResultChanged) {}, true},
		{"non-canonical decimal is the same value", func(e *fitnessv1.FitnessResultChanged) { e.Result = "2.310" }, true},
		{"unknown schema", func(e *fitnessv1.FitnessResultChanged) { e.SchemaVersion = 2 }, false},
		{"missing schema", func(e *fitnessv1.FitnessResultChanged) { e.SchemaVersion = 0 }, false},
		{"missing data id", func(e *fitnessv1.FitnessResultChanged) { e.DataId = 0 }, false},
		{"version zero", func(e *fitnessv1.FitnessResultChanged) { e.Version = 0 }, false},
		{"event id of another version", func(e *fitnessv1.FitnessResultChanged) { e.EventId = "fitness-result-900001-v9" }, false},
		{"NaN", func(e *fitnessv1.FitnessResultChanged) { e.Result = "NaN" }, false},
		{"infinity", func(e *fitnessv1.FitnessResultChanged) { e.Result = "+Inf" }, false},
		{"empty result", func(e *fitnessv1.FitnessResultChanged) { e.Result = "" }, false},
		{"unknown unit", func(e *fitnessv1.FitnessResultChanged) { e.Unit = "furlong" }, false},
		{"non-canonical unit", func(e *fitnessv1.FitnessResultChanged) { e.Unit = "meters" }, false},
		{"bad grade", func(e *fitnessv1.FitnessResultChanged) { e.Grade = 0 }, false},
		{"no commit time", func(e *fitnessv1.FitnessResultChanged) { e.SourceCommitTime = nil }, false},
		{"no shard", func(e *fitnessv1.FitnessResultChanged) { e.ShardId = "" }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := event(900001, 2, "2.31", false)
			tc.mod(ev)
			b, _ := proto.Marshal(ev)
			_, err := consumer.Decode(b)
			var ie *consumer.InvalidEventError
			if tc.ok && err != nil {
				t.Errorf("rejected: %v", err)
			}
			if !tc.ok && !errors.As(err, &ie) {
				t.Errorf("accepted or wrong error type: %v", err)
			}
		})
	}
	if _, err := consumer.Decode([]byte{0xff, 0xff}); err == nil {
		t.Error("malformed payload accepted")
	}
	r := consumer.ToRow(event(900001, 2, "2.310", false), 3, 5)
	if r.Result != "2.31" || r.Version != 2 || r.Epoch != 3 {
		t.Errorf("ToRow = %+v; want canonical result 2.31, source version 2 kept, epoch 3", r)
	}
}
