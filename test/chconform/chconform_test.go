// Package chconform runs every ClickHouse statement resultsync issues on the
// two ClickHouse engines of the support matrix — the ClickHouse 18.16 server
// and a current ClickHouse (26.x, in-process through chdb-core) — against the
// same data, and requires the same results from both, compared as values.
//
// The statements are reached through the code that issues them: the
// migrations (pkg/storage/schema), the consumer's batch insert and the current-state,
// report and dead-letter reads (pkg/storage/chstore), and reconciliation's bucket and
// drill-down queries (pkg/reconciliation/reconcile), including a whole reconciliation of a
// campaign with injected defects against real MySQL shards.
package chconform_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resultsync/resultsync/pkg/reconciliation/reconcile"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
)

const campaign = 20001

var engines = []string{"server", "chdb"}

// dataset is the same projection content for both engines: several
// versions per record, tombstones, an equal-version row at a later epoch,
// decimals written with and without trailing zeros, negative and zero
// results, units that sort differently.
func dataset() [][]chstore.Row {
	row := func(id, version int64, epoch uint16, result string, deleted bool) chstore.Row {
		return chstore.Row{DetectID: campaign, DataID: id, UserID: id % 97, ProjectID: 1 + id%3, SchoolID: 7 + id%4,
			Grade: int16(1 + id%12), Version: version, Epoch: epoch, Result: result, Unit: []string{"m", "s", "cm"}[id%3],
			IsDeleted: deleted, EventID: fmt.Sprintf("fitness-result-%d-v%d", id, version), ShardID: fmt.Sprintf("shard-%d", id%2),
			SourceCommitMs: 1_700_000_000_000 + id, IngestMs: 1_700_000_000_500 + id}
	}
	var first, second []chstore.Row
	for id := int64(1); id <= 400; id++ {
		first = append(first, row(id, 1, 0, fmt.Sprintf("%d.%03d", id%9, (id*37)%1000), false))
		switch {
		case id%5 == 0: // corrected: version 2 in a later insert
			second = append(second, row(id, 2, 0, fmt.Sprintf("%d.%d0", id%7, id%10), false))
		case id%7 == 0: // deleted: a versioned tombstone
			second = append(second, row(id, 2, 0, "0", true))
		case id%11 == 0: // equal-version correction at a later epoch
			second = append(second, row(id, 1, 1, "-1.500", false))
		}
	}
	return [][]chstore.Row{first, second}
}

type engineData struct {
	ch   *infratest.ClickHouseDatabase
	proj *chstore.Projection
}

func load(t *testing.T, engine string) engineData {
	t.Helper()
	ch := infratest.NewClickHouseDatabaseOn(t, engine, true)
	p := chstore.NewProjection(ch.Conn)
	ctx := context.Background()
	for _, batch := range dataset() {
		if err := p.Insert(ctx, batch); err != nil {
			t.Fatalf("%s: inserting: %v", engine, err)
		}
	}
	if err := p.InsertDeadLetter(ctx, chstore.DeadLetter{Time: time.UnixMilli(1_700_000_000_000).UTC(), MessageID: "m-1",
		EventID: "fitness-result-9-v1", Reason: "schema_version 2 unknown", Payload: []byte("{}")}); err != nil {
		t.Fatalf("%s: dead letter: %v", engine, err)
	}
	return engineData{ch: ch, proj: p}
}

// results runs every read on one engine and returns them keyed by name.
func results(t *testing.T, engine string, d engineData) map[string]any {
	t.Helper()
	ctx := context.Background()
	out := map[string]any{}
	must := func(name string, v any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %s: %v", engine, name, err)
		}
		out[name] = v
	}
	state, err := d.proj.CurrentState(ctx, campaign)
	must("CurrentState", state, err)
	report, err := d.proj.CampaignReport(ctx, campaign)
	must("CampaignReport", report, err)
	dead, err := d.proj.DeadLetters(ctx, 0, 10)
	must("DeadLetters", dead, err)

	// The school/grade report view, read as values.
	rows, err := d.ch.Conn.Query(ctx, `SELECT school_id, grade, unit, results, toInt64(mean_result * 1000), toInt64(min_result * 1000), toInt64(max_result * 1000)
		FROM report_school_grade WHERE detect_id = ? ORDER BY school_id, grade, unit`, int64(campaign))
	if err != nil {
		t.Fatalf("%s: report_school_grade: %v", engine, err)
	}
	var grades []string
	for rows.Next() {
		var school int64
		var grade int16
		var unit string
		var n uint64
		var mean, lo, hi int64
		if err := rows.Scan(&school, &grade, &unit, &n, &mean, &lo, &hi); err != nil {
			t.Fatalf("%s: report_school_grade: %v", engine, err)
		}
		grades = append(grades, fmt.Sprintf("%d/%d/%s: %d mean %d [%d, %d]", school, grade, unit, n, mean, lo, hi))
	}
	must("report_school_grade", grades, rows.Close())

	target := reconcile.ClickHouseTarget{Conn: d.ch.Conn}
	scopes := []reconcile.Scope{{DetectID: campaign}, {DetectID: campaign, ProjectID: 2}, {DetectID: campaign, SchoolID: 8}}
	for _, s := range scopes {
		for _, n := range []int{16, reconcile.StoredBuckets} {
			b, err := target.Buckets(ctx, s, n)
			must(fmt.Sprintf("Buckets %+v n=%d", s, n), b, err)
		}
		recs, err := target.Records(ctx, s, 16, []int{0, 3, 5, 15}, nil)
		must(fmt.Sprintf("Records by bucket %+v", s), recs, err)
		recs, err = target.Records(ctx, s, reconcile.StoredBuckets, nil, []int64{1, 5, 7, 11, 35, 77, 110, 399, 1000})
		must(fmt.Sprintf("Records by id %+v", s), recs, err)
	}
	return out
}

// TestEnginesAgree: every read returns the same values on ClickHouse 18.16
// and on ClickHouse 26 for the same inserted data.
func TestEnginesAgree(t *testing.T) {
	got := map[string]map[string]any{}
	for _, e := range engines {
		got[e] = results(t, e, load(t, e))
	}
	if len(got["server"]["CurrentState"].([]chstore.Current)) == 0 {
		t.Fatal("no current state: the dataset did not load")
	}
	names := make([]string, 0, len(got["server"]))
	for name := range got["server"] {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if diff := cmp.Diff(got["server"][name], got["chdb"][name]); diff != "" {
			t.Errorf("%s differs between ClickHouse 18.16 (-) and ClickHouse 26 (+):\n%s", name, diff)
		}
	}
	t.Logf("%d reads compared, each equal on both engines", len(names))
}

// TestReconciliationAgrees: a CONTENT reconciliation of the same campaign,
// with the same injected defects, against the same real MySQL shards,
// reports exactly those defects on both ClickHouse engines, and nothing on
// the clean campaign.
func TestReconciliationAgrees(t *testing.T) {
	ctx := context.Background()
	var shards []*infratest.MySQLDatabase
	src := reconcile.MySQLSource{}
	for range 2 {
		db := infratest.NewMySQLDatabase(t, schema.Shard)
		shards = append(shards, db)
		src.Shards = append(src.Shards, db.DB)
	}
	// The authoritative state: the current state of the dataset, on the
	// shards (each record on one shard).
	latest := map[int64]chstore.Row{}
	for _, batch := range dataset() {
		for _, r := range batch {
			if cur, ok := latest[r.DataID]; !ok || r.Version > cur.Version || (r.Version == cur.Version && r.Epoch > cur.Epoch) {
				latest[r.DataID] = r
			}
		}
	}
	for id, r := range latest {
		if _, err := shards[id%2].DB.ExecContext(ctx, `INSERT INTO fitness_result
			(data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`,
			r.DataID, r.DetectID, r.UserID, r.ProjectID, r.SchoolID, r.Grade, r.Result, r.Unit, r.Version, r.IsDeleted); err != nil {
			t.Fatal(err)
		}
	}
	// Injected defects, the same on both engines.
	defects := func(p *chstore.Projection) {
		t.Helper()
		rows := []chstore.Row{
			{DetectID: campaign, DataID: 1000, UserID: 1, ProjectID: 1, SchoolID: 7, Grade: 1, Version: 1, Result: "1", Unit: "m", EventID: "x-1000", ShardID: "shard-x"}, // unexpected
		}
		wrong := latest[13] // same version, wrong content
		wrong.Result = "9.999"
		wrong.Epoch = 2
		rows = append(rows, wrong)
		if err := p.Insert(ctx, rows); err != nil {
			t.Fatal(err)
		}
	}
	want := map[int64]reconcile.Class{1000: reconcile.UnexpectedTargetRecord, 13: reconcile.ContentMismatch, 401: reconcile.MissingInTarget}

	loaded := map[string]engineData{}
	run := func(e string) map[int64]reconcile.Class {
		t.Helper()
		dst := reconcile.ClickHouseTarget{Conn: loaded[e].ch.Conn}
		res, err := reconcile.Compare(ctx, src, dst, reconcile.Scope{DetectID: campaign}, reconcile.DepthContent, reconcile.StoredBuckets, nil, nil)
		if err != nil {
			t.Fatalf("%s: reconciling: %v", e, err)
		}
		got := map[int64]reconcile.Class{}
		for _, x := range res.Discrepancies {
			got[x.DataID] = x.Class
		}
		return got
	}
	for _, e := range engines {
		loaded[e] = load(t, e)
		if got := run(e); len(got) != 0 {
			t.Errorf("%s: clean campaign reported %v, want nothing", e, got)
		}
	}
	// A record the projection never received (missing), then the defects.
	if _, err := shards[401%2].DB.ExecContext(ctx, `INSERT INTO fitness_result
		(data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted, create_time, update_time)
		VALUES (401, ?, 1, 1, 7, 1, 2.31, 'm', 1, 0, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3))`, int64(campaign)); err != nil {
		t.Fatal(err)
	}
	for _, e := range engines {
		defects(loaded[e].proj)
		if diff := cmp.Diff(want, run(e)); diff != "" {
			t.Errorf("%s: campaign with injected defects (-want +got):\n%s", e, diff)
		}
	}
}
