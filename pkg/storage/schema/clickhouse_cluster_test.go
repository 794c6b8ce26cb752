package schema_test

import (
	"context"
	"strings"
	"testing"

	"github.com/resultsync/resultsync/pkg/storage/schema"
)

// The cluster DDL: every statement runs ON CLUSTER and names the database,
// the placeholders are all replaced, and the single server's tables keep
// their names (fitness_result_versions is the Distributed table).
func TestClusterStatements(t *testing.T) {
	migs, err := schema.Load(schema.ClickHouseCluster)
	if err != nil {
		t.Fatal(err)
	}
	if len(migs) == 0 {
		t.Fatal("no cluster migrations")
	}
	var all []string
	for _, m := range migs {
		for _, s := range schema.ClusterStatements(m, "rs_db", "rs_cl") {
			if strings.Contains(s, "${") {
				t.Errorf("placeholder left in %q", s)
			}
			if !strings.Contains(s, " ON CLUSTER rs_cl") {
				t.Errorf("not ON CLUSTER: %q", s)
			}
			all = append(all, s)
		}
	}
	joined := strings.Join(all, "\n")
	for _, want := range []string{
		"CREATE TABLE IF NOT EXISTS rs_db.fitness_result_versions_local ON CLUSTER rs_cl",
		"ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/rs_db/fitness_result_versions', '{replica}', row_version)",
		"ENGINE = Distributed(rs_cl, rs_db, fitness_result_versions_local, intHash64(data_id))",
		"FROM rs_db.fitness_result_versions FINAL",
		"CREATE VIEW IF NOT EXISTS rs_db.report_campaign_project",
		"CREATE TABLE IF NOT EXISTS rs_db.projection_applied ON CLUSTER rs_cl",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("cluster DDL lacks %q", want)
		}
	}
}

// Names are spliced into the DDL: anything but a plain identifier is
// refused before a statement is sent.
func TestApplyClickHouseClusterRefusesOddNames(t *testing.T) {
	for _, c := range [][2]string{{"rs; DROP", "c"}, {"rs", "c`x"}, {"", "c"}, {"rs", ""}} {
		if _, err := schema.ApplyClickHouseCluster(context.Background(), nil, c[0], c[1]); err == nil {
			t.Errorf("database %q cluster %q accepted", c[0], c[1])
		}
	}
}
