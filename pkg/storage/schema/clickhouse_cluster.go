package schema

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// identRe is what a database or cluster name may be in the cluster DDL: the
// names are spliced into statements, never quoted.
var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ClusterStatements returns the statements of a cluster migration with
// ${database} and ${cluster} replaced.
func ClusterStatements(m Migration, database, cluster string) []string {
	r := strings.NewReplacer("${database}", database, "${cluster}", cluster)
	out := make([]string, len(m.Statements))
	for i, s := range m.Statements {
		out[i] = r.Replace(s)
	}
	return out
}

// ApplyClickHouseCluster applies the pending cluster-shape migrations
// (pkg/storage/schema/clickhouse_cluster, docs/cluster.md) to database on the
// ClickHouse cluster named cluster, through conn (any node), and returns the
// versions it applied. Every statement is ON CLUSTER DDL: it returns once
// every node executed it, so every node must be up (a node that is down
// fails the statement after distributed_ddl_task_timeout). The database and
// the record of applied migrations (schema_migrations, replicated to every
// node) are created ON CLUSTER too. Run one migrator at a time; statements
// use IF NOT EXISTS.
func ApplyClickHouseCluster(ctx context.Context, conn driver.Conn, database, cluster string) ([]int, error) {
	if !identRe.MatchString(database) || !identRe.MatchString(cluster) {
		return nil, fmt.Errorf("cluster DDL: database %q and cluster %q must be plain identifiers", database, cluster)
	}
	migs, err := Load(ClickHouseCluster)
	if err != nil {
		return nil, err
	}
	var nodes uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.clusters WHERE cluster = ?", cluster).Scan(&nodes); err != nil {
		return nil, fmt.Errorf("reading cluster %s from system.clusters: %w", cluster, err)
	}
	if nodes == 0 {
		return nil, fmt.Errorf("cluster %s is not in the server's <remote_servers>", cluster)
	}
	if err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE IF NOT EXISTS %s ON CLUSTER %s", database, cluster)); err != nil {
		return nil, fmt.Errorf("creating database %s on cluster %s: %w", database, cluster, err)
	}
	if err := conn.Exec(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %[1]s.schema_migrations ON CLUSTER %[2]s (
		version UInt32, name String, checksum String, applied_at DateTime
	) ENGINE = ReplicatedMergeTree('/clickhouse/tables/all/%[1]s/schema_migrations', '{shard}-{replica}') ORDER BY version`, database, cluster)); err != nil {
		return nil, fmt.Errorf("creating %s.schema_migrations on cluster %s: %w", database, cluster, err)
	}
	applied, err := readCHApplied(ctx, conn, database+".schema_migrations")
	if err != nil {
		return nil, err
	}
	var done []int
	for _, m := range migs {
		if sum, ok := applied[m.Version]; ok {
			if sum != m.Checksum {
				return done, fmt.Errorf("cluster migration %04d_%s changed after it was applied", m.Version, m.Name)
			}
			continue
		}
		for i, stmt := range ClusterStatements(m, database, cluster) {
			if err := conn.Exec(ctx, stmt); err != nil {
				return done, fmt.Errorf("applying clickhouse cluster migration %04d_%s, statement %d: %w", m.Version, m.Name, i+1, err)
			}
		}
		if err := recordCHApplied(ctx, conn, database+".schema_migrations", m); err != nil {
			return done, err
		}
		done = append(done, m.Version)
	}
	return done, nil
}
