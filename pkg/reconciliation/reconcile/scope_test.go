package reconcile_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
)

// scoped is one version of a record with its project (rec has none).
type scoped struct {
	id, version, project, school int64
	result                       string
	deleted                      bool
}

func (f *fixture) scopedSource(t *testing.T, r scoped) {
	t.Helper()
	if _, err := f.shards[r.id%2].DB.Exec(`INSERT INTO fitness_result
		(data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
		VALUES (?, ?, 4, ?, ?, 5, ?, 'm', ?, ?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`,
		r.id, campaign, r.project, r.school, r.result, r.version, r.deleted); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) scopedTarget(t *testing.T, r scoped) {
	t.Helper()
	if err := f.proj.Insert(context.Background(), []chstore.Row{{DetectID: campaign, DataID: r.id, UserID: 4, ProjectID: r.project,
		SchoolID: r.school, Grade: 5, Version: r.version, Result: r.result, Unit: "m", IsDeleted: r.deleted,
		EventID: fmt.Sprintf("fitness-result-%d-v%d", r.id, r.version), ShardID: "shard-x"}}); err != nil {
		t.Fatal(err)
	}
}

// A scope chooses which records a comparison looks at, never whether a
// record exists: a record seen on one side only inside a project or school
// scope is looked up on the other side outside it, and a record present on
// both sides is classified by version and content, in the drill-down and in
// the re-check, at every depth. Several wrong records share one bucket (64
// buckets: ids 900032 + k*64), each scope field (school, project) wrong in
// turn, with equal, older, newer and deleted versions.
func TestScopeNeverDecidesIdentity(t *testing.T) {
	f := newFixture(t)
	f.seed(t, 200)
	const (
		sameVersion  = 900032 + 64*iota // school 7 in the source, 8 in the projection, same version
		staleOther                      // school 7 v2 in the source, 8 v1 in the projection
		aheadOther                      // school 7 v1 in the source, 8 v2 in the projection
		deletedOther                    // deleted at v2 in school 7, live v1 under school 8
		unexpected                      // only in the projection, school 8
		missing                         // only in the source, school 7
		otherProject                    // project 3 in the source, 4 in the projection, same version
	)
	for _, r := range []struct{ src, dst *scoped }{
		{&scoped{id: sameVersion, version: 1, project: 3, school: 7, result: "2.21"}, &scoped{id: sameVersion, version: 1, project: 3, school: 8, result: "2.21"}},
		{&scoped{id: staleOther, version: 2, project: 3, school: 7, result: "2.31"}, &scoped{id: staleOther, version: 1, project: 3, school: 8, result: "2.21"}},
		{&scoped{id: aheadOther, version: 1, project: 3, school: 7, result: "2.21"}, &scoped{id: aheadOther, version: 2, project: 3, school: 8, result: "2.31"}},
		{&scoped{id: deletedOther, version: 2, project: 3, school: 7, result: "2.21", deleted: true}, &scoped{id: deletedOther, version: 1, project: 3, school: 8, result: "2.21"}},
		{nil, &scoped{id: unexpected, version: 1, project: 3, school: 8, result: "2.21"}},
		{&scoped{id: missing, version: 1, project: 3, school: 7, result: "2.21"}, nil},
		{&scoped{id: otherProject, version: 1, project: 3, school: 7, result: "2.21"}, &scoped{id: otherProject, version: 1, project: 4, school: 7, result: "2.21"}},
	} {
		if r.src != nil {
			f.scopedSource(t, *r.src)
		}
		if r.dst != nil {
			f.scopedTarget(t, *r.dst)
		}
	}
	type C = map[int64]reconcile.Class
	tests := []struct {
		name  string
		scope reconcile.Scope
		depth reconcile.Depth
		want  C
	}{
		{"school 8", reconcile.Scope{DetectID: campaign, SchoolID: 8}, reconcile.DepthContent, C{
			sameVersion: reconcile.ContentMismatch, staleOther: reconcile.StaleTargetVersion, aheadOther: reconcile.TargetAheadOfSource,
			deletedOther: reconcile.DeletionNotApplied, unexpected: reconcile.UnexpectedTargetRecord}},
		// The deleted record is consistent inside school 7 (a tombstone, no
		// live row there); the school-8 run and the campaign report it.
		{"school 7", reconcile.Scope{DetectID: campaign, SchoolID: 7}, reconcile.DepthContent, C{
			sameVersion: reconcile.ContentMismatch, staleOther: reconcile.StaleTargetVersion, aheadOther: reconcile.TargetAheadOfSource,
			missing: reconcile.MissingInTarget, otherProject: reconcile.ContentMismatch}},
		// At VERSIONS depth a record inside the scope on one side only, at
		// the same version, still differs in a scope field: wrong content.
		{"school 8 at VERSIONS depth", reconcile.Scope{DetectID: campaign, SchoolID: 8}, reconcile.DepthVersions, C{
			sameVersion: reconcile.ContentMismatch, staleOther: reconcile.StaleTargetVersion, aheadOther: reconcile.TargetAheadOfSource,
			deletedOther: reconcile.DeletionNotApplied, unexpected: reconcile.UnexpectedTargetRecord}},
		// (otherProject is inside school 7 on both sides: COUNTS does not
		// compare its content.)
		{"school 7 at COUNTS depth", reconcile.Scope{DetectID: campaign, SchoolID: 7}, reconcile.DepthCounts, C{
			sameVersion: reconcile.ContentMismatch, staleOther: reconcile.StaleTargetVersion, aheadOther: reconcile.TargetAheadOfSource,
			missing: reconcile.MissingInTarget}},
		{"project 4", reconcile.Scope{DetectID: campaign, ProjectID: 4}, reconcile.DepthContent, C{otherProject: reconcile.ContentMismatch}},
		{"project 3", reconcile.Scope{DetectID: campaign, ProjectID: 3}, reconcile.DepthContent, C{
			sameVersion: reconcile.ContentMismatch, staleOther: reconcile.StaleTargetVersion, aheadOther: reconcile.TargetAheadOfSource,
			deletedOther: reconcile.DeletionNotApplied, unexpected: reconcile.UnexpectedTargetRecord, missing: reconcile.MissingInTarget,
			otherProject: reconcile.ContentMismatch}},
		{"campaign", reconcile.Scope{DetectID: campaign}, reconcile.DepthContent, C{
			sameVersion: reconcile.ContentMismatch, staleOther: reconcile.StaleTargetVersion, aheadOther: reconcile.TargetAheadOfSource,
			deletedOther: reconcile.DeletionNotApplied, unexpected: reconcile.UnexpectedTargetRecord, missing: reconcile.MissingInTarget,
			otherProject: reconcile.ContentMismatch}},
	}
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := reconcile.Compare(ctx, f.src, f.dst, tc.scope, tc.depth, 64, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := C{}
			for _, d := range res.Discrepancies {
				got[d.DataID] = d.Class
				if d.Class != reconcile.MissingInTarget && d.Target == nil || d.Class != reconcile.UnexpectedTargetRecord && d.Source == nil {
					t.Errorf("%d (%s): a side is missing: source %+v, target %+v", d.DataID, d.Class, d.Source, d.Target)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("discrepancies (-want +got):\n%s", diff)
			}
			// The re-check of every candidate (as a stored run makes it,
			// after the grace period) classifies the same way.
			var cands []reconcile.Discrepancy
			for id := range tc.want {
				cands = append(cands, reconcile.Discrepancy{DataID: id})
			}
			confirmed, err := reconcile.Recheck(ctx, f.src, f.dst, tc.scope, tc.depth, cands)
			if err != nil {
				t.Fatal(err)
			}
			got = C{}
			for _, d := range confirmed {
				got[d.DataID] = d.Class
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("re-checked (-want +got):\n%s", diff)
			}
		})
	}
	// The school-8 record seen through the other side names where each
	// side holds it.
	res, err := reconcile.Compare(ctx, f.src, f.dst, reconcile.Scope{DetectID: campaign, SchoolID: 8}, reconcile.DepthContent, 64, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range res.Discrepancies {
		if d.DataID == sameVersion && (d.Source.SchoolID != 7 || d.Target.SchoolID != 8 || d.Source.DetectID != campaign || d.Target.DetectID != campaign) {
			t.Errorf("record %d: source %+v, target %+v; want schools 7 and 8 in campaign %d", d.DataID, *d.Source, *d.Target, campaign)
		}
	}
}
