package rsctl

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
)

// tableWriter lines up rows of cells in columns (text/tabwriter).
type tableWriter struct {
	tw *tabwriter.Writer
}

func newTableWriter(w io.Writer) *tableWriter {
	return &tableWriter{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
}

func (t *tableWriter) row(cells ...any) {
	s := make([]string, len(cells))
	for i, c := range cells {
		s[i] = strings.ReplaceAll(fmt.Sprint(c), "\t", " ")
	}
	_, _ = fmt.Fprintln(t.tw, strings.Join(s, "\t"))
}

// line writes text outside the columns (a blank line ends a table).
func (t *tableWriter) line(format string, args ...any) {
	_ = t.tw.Flush()
	_, _ = fmt.Fprintf(t.tw, format+"\n", args...)
}

func (t *tableWriter) flush() error { return t.tw.Flush() }

// enum is an enum value's name without its prefix ("RUN_STATE_RUNNING" -> "RUNNING").
func enum(v fmt.Stringer, prefix string) string {
	return strings.TrimPrefix(v.String(), prefix)
}

func ts(t *timestamppb.Timestamp) string {
	if t == nil {
		return "-"
	}
	return t.AsTime().UTC().Format(time.RFC3339)
}

func dur(d *durationpb.Duration) string {
	if d == nil {
		return "-"
	}
	return d.AsDuration().Round(time.Millisecond).String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func resultRows(t *tableWriter, rs ...*fitnessv1.FitnessResult) {
	t.row("DATA_ID", "DETECT_ID", "SCHOOL", "USER", "PROJECT", "GRADE", "VERSION", "RESULT", "UNIT", "DELETED", "SHARD", "UPDATED")
	for _, r := range rs {
		t.row(r.GetDataId(), r.GetDetectId(), r.GetSchoolId(), r.GetUserId(), r.GetProjectId(), r.GetGrade(), r.GetVersion(),
			r.GetResult(), r.GetUnit(), r.GetIsDeleted(), r.GetShardId(), ts(r.GetUpdateTime()))
	}
}

func scope(s *fitnessv1.ReconcileScope) string {
	var parts []string
	if s.GetDetectId() != 0 {
		parts = append(parts, fmt.Sprintf("detect %d", s.GetDetectId()))
	}
	if s.GetProjectId() != 0 {
		parts = append(parts, fmt.Sprintf("project %d", s.GetProjectId()))
	}
	if s.GetSchoolId() != 0 {
		parts = append(parts, fmt.Sprintf("school %d", s.GetSchoolId()))
	}
	if len(parts) == 0 {
		return "everything"
	}
	return strings.Join(parts, ", ")
}

func runRows(t *tableWriter, runs ...*fitnessv1.ReconciliationRun) {
	t.row("RUN_ID", "STATE", "DEPTH", "SCOPE", "BUCKETS", "ROWS", "DISCREPANCIES", "CREATED", "MESSAGE")
	for _, r := range runs {
		msg := r.GetMessage()
		if r.GetErrorMessage() != "" {
			msg = r.GetErrorMessage()
		}
		t.row(r.GetRunId(), enum(r.GetState(), "RUN_STATE_"), enum(r.GetDepth(), "RECONCILE_DEPTH_"), scope(r.GetScope()),
			fmt.Sprintf("%d/%d", r.GetBucketsDone(), r.GetBucketsTotal()), r.GetRowsCompared(), r.GetDiscrepancyCount(),
			ts(r.GetCreateTime()), dash(msg))
	}
}

func side(s *fitnessv1.RecordSide) string {
	switch {
	case !s.GetPresent():
		return "absent"
	case s.GetIsDeleted():
		return fmt.Sprintf("v%d deleted", s.GetVersion())
	default:
		return fmt.Sprintf("v%d", s.GetVersion())
	}
}

func discrepancyRows(t *tableWriter, ds ...*fitnessv1.Discrepancy) {
	t.row("DISCREPANCY_ID", "CLASS", "DATA_ID", "DETECT_ID", "SOURCE", "TARGET", "RESOLVED")
	for _, d := range ds {
		resolved := "no"
		if d.GetResolved() {
			resolved = enum(d.GetResolution(), "DISCREPANCY_RESOLUTION_") + " " + d.GetResolvedByRunId()
		}
		t.row(d.GetDiscrepancyId(), enum(d.GetClass(), "DISCREPANCY_CLASS_"), d.GetDataId(), d.GetDetectId(),
			side(d.GetSource()), side(d.GetTarget()), resolved)
	}
}

func repairRows(t *tableWriter, rs ...*fitnessv1.Repair) {
	t.row("REPAIR_ID", "ACTION", "STATE", "VERIFICATION", "ITEMS", "FAILED", "RUN_ID", "CREATED_BY", "APPROVED_BY", "MESSAGE")
	for _, r := range rs {
		t.row(r.GetRepairId(), enum(r.GetAction(), "REPAIR_ACTION_"), enum(r.GetState(), "REPAIR_STATE_"),
			enum(r.GetVerification(), "VERIFICATION_RESULT_"), fmt.Sprintf("%d/%d", r.GetItemsDone(), r.GetItemsTotal()),
			r.GetItemsFailed(), r.GetRunId(), dash(r.GetCreatedBy()), dash(r.GetApprovedBy()), dash(r.GetMessage()))
	}
}

func itemRows(t *tableWriter, items ...*fitnessv1.RepairItem) {
	t.row("SEQ", "DATA_ID", "DETECT_ID", "SHARD", "CLASS", "ACTION", "SOURCE_V", "TARGET_V", "APPLIED_V", "OUTCOME", "VERIFICATION", "MESSAGE")
	for _, i := range items {
		t.row(i.GetSeq(), i.GetDataId(), i.GetDetectId(), dash(i.GetShardId()), enum(i.GetClass(), "DISCREPANCY_CLASS_"),
			enum(i.GetAction(), "REPAIR_ACTION_"), i.GetSourceVersion(), i.GetTargetVersion(), i.GetAppliedVersion(),
			enum(i.GetOutcome(), "REPAIR_ITEM_OUTCOME_"), enum(i.GetVerification(), "VERIFICATION_RESULT_"), dash(i.GetMessage()))
	}
}

// runProgress is one progress line of a run being waited for.
func runProgress(r *fitnessv1.ReconciliationRun) string {
	s := fmt.Sprintf("%s run %s %s: buckets %d/%d, rows %d, discrepancies %d", time.Now().UTC().Format(time.TimeOnly),
		r.GetRunId(), enum(r.GetState(), "RUN_STATE_"), r.GetBucketsDone(), r.GetBucketsTotal(), r.GetRowsCompared(), r.GetDiscrepancyCount())
	if r.GetInFlightCount() > 0 {
		s += fmt.Sprintf(", in flight %d", r.GetInFlightCount())
	}
	if m := r.GetMessage(); m != "" {
		s += " (" + m + ")"
	}
	return s
}

// repairProgress is one progress line of a repair being watched.
func repairProgress(r *fitnessv1.Repair) string {
	s := fmt.Sprintf("%s repair %s %s %s: items %d/%d, failed %d, verification %s", time.Now().UTC().Format(time.TimeOnly),
		r.GetRepairId(), enum(r.GetAction(), "REPAIR_ACTION_"), enum(r.GetState(), "REPAIR_STATE_"),
		r.GetItemsDone(), r.GetItemsTotal(), r.GetItemsFailed(), enum(r.GetVerification(), "VERIFICATION_RESULT_"))
	if m := r.GetMessage(); m != "" {
		s += " (" + m + ")"
	}
	return s
}
