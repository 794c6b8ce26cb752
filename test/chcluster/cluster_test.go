// Package chcluster runs resultsync against a real ClickHouse cluster: two
// shards of two replicas each, coordinated by ZooKeeper (deploy/local/
// chcluster.sh, `make test-cluster`), with the projection in its cluster
// shape (pkg/storage/schema/clickhouse_cluster, docs/cluster.md). Every server is
// built by its service package as the binaries build it, with
// --clickhouse-cluster; the MySQL shards, the control database and Pulsar
// are the shared local stack's.
//
// The tests run when RS_CH_CLUSTER_ADDRS names the four nodes (shard 1
// replicas 1 and 2, then shard 2's), as `make test-cluster` sets it; without
// it they are skipped (a failure if RS_CH_CLUSTER_REQUIRED is set, as `make
// test-cluster` sets it), and with it a node that does not answer is a
// failure under RS_REQUIRE_INFRA or CI (pkg/testkit/infratest).
package chcluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/model/shard"
	"github.com/resultsync/resultsync/pkg/service/consumersvc"
	"github.com/resultsync/resultsync/pkg/service/reconcilesvc"
	"github.com/resultsync/resultsync/pkg/service/relaysvc"
	"github.com/resultsync/resultsync/pkg/service/resultssvc"
	"github.com/resultsync/resultsync/pkg/storage/chstore"
	"github.com/resultsync/resultsync/pkg/storage/schema"
	"github.com/resultsync/resultsync/pkg/testkit/infratest"
	"github.com/resultsync/resultsync/pkg/testkit/platformtest"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

const (
	campaign = 10001
	school   = 7
)

// cluster is one test's platform on the ClickHouse cluster.
type cluster struct {
	t        *testing.T
	name     string   // the cluster's name (RS_CH_CLUSTER)
	addrs    []string // node i+1's native address
	db       string   // this test's projection database
	nodes    []driver.Conn
	proj     *chstore.Projection // through node 1: the Distributed table and the views
	shards   shard.Map
	shardDBs []*infratest.MySQLDatabase
	results  fitnessv1.ResultServiceClient
	recon    fitnessv1.ReconcileServiceClient

	log     *slog.Logger
	control string   // the control database's DSN
	topic   string   // the relay's topic
	args    []string // every server's common settings
	chArgs  []string // the ClickHouse settings of the cluster
	// stopConsumer stops the running consumer server (startConsumer).
	stopConsumer func()
}

func clusterAddrs(t *testing.T) (string, []string) {
	t.Helper()
	v := os.Getenv("RS_CH_CLUSTER_ADDRS")
	if v == "" && os.Getenv("RS_CH_CLUSTER_REQUIRED") != "" {
		t.Fatal("RS_CH_CLUSTER_REQUIRED is set (make test-cluster) but RS_CH_CLUSTER_ADDRS does not name the cluster's nodes")
	}
	if v == "" {
		t.Skip("RS_CH_CLUSTER_ADDRS is not set: the ClickHouse cluster tests run with `make test-cluster`")
	}
	addrs := strings.Split(v, ",")
	if len(addrs) != 4 {
		t.Fatalf("RS_CH_CLUSTER_ADDRS=%q: want the four nodes (shard 1 replica 1, replica 2, shard 2 replica 1, replica 2)", v)
	}
	return infratest.Env("RS_CH_CLUSTER", "rs_cluster"), addrs
}

// newCluster creates a fresh projection database on the cluster (ON CLUSTER
// DDL), fresh MySQL shards, control database and topic, and starts the
// results, relay, consumer and reconcile servers on them.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	name, addrs := clusterAddrs(t)
	c := &cluster{t: t, name: name, addrs: addrs, db: "rs_chc_" + infratest.Suffix()}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := chstore.Open(ctx, chstore.Options{Addr: addrs[0], Database: "default", Cluster: name})
	if err != nil {
		infratest.Unavailable(t, "ClickHouse cluster node "+addrs[0], "chcluster-node1.err.log", err)
	}
	t.Cleanup(func() { admin.Close() })
	if _, err := schema.ApplyClickHouseCluster(ctx, admin, c.db, name); err != nil {
		t.Fatalf("cluster DDL: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+c.db+" ON CLUSTER "+name); err != nil {
			t.Logf("dropping %s on the cluster: %v", c.db, err)
		}
	})
	for i, a := range addrs {
		conn, err := chstore.Open(ctx, chstore.Options{Addr: a, Database: c.db, Cluster: name})
		if err != nil {
			infratest.Unavailable(t, "ClickHouse cluster node "+a, fmt.Sprintf("chcluster-node%d.err.log", i+1), err)
		}
		t.Cleanup(func() { conn.Close() })
		c.nodes = append(c.nodes, conn)
	}
	c.proj = chstore.NewProjection(c.nodes[0])

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	for _, id := range []string{"shard-0", "shard-1"} {
		db := infratest.NewMySQLDatabase(t, schema.Shard)
		c.shards.Shards = append(c.shards.Shards, shard.Shard{ID: id, DSN: db.DSN})
		c.shardDBs = append(c.shardDBs, db)
	}
	control := infratest.NewMySQLDatabase(t, schema.Control)
	topic := infratest.Topic(t, "chcluster")
	var shardArgs []string
	for _, s := range c.shards.Shards {
		shardArgs = append(shardArgs, s.ID+"="+s.DSN)
	}
	args := func(extra ...string) []string {
		return append([]string{"--grpc-addr=127.0.0.1:0", "--http-addr=", "--shutdown-grace=2s", "--auth-tokens=" + platformtest.Tokens,
			"--shards=" + strings.Join(shardArgs, ",")}, extra...)
	}
	chArgs := []string{"--clickhouse-addr=" + addrs[0], "--clickhouse-database=" + c.db, "--clickhouse-cluster=" + name}

	resultsAddr := platformtest.Serve(t, "results", func(ctx context.Context) (servertest.Runner, error) {
		cfg, err := resultssvc.Load(args("--max-conns-per-shard=8"))
		if err != nil {
			return nil, err
		}
		return resultssvc.New(ctx, log, cfg)
	})
	platformtest.Serve(t, "relay", func(ctx context.Context) (servertest.Runner, error) {
		cfg, err := relaysvc.Load(args("--control-dsn="+control.DSN, "--pulsar-url="+infratest.PulsarURL(), "--topic="+topic,
			"--poll-interval=20ms"))
		if err != nil {
			return nil, err
		}
		return relaysvc.New(ctx, log, cfg)
	})
	c.log, c.control, c.topic, c.args, c.chArgs = log, control.DSN, topic, args(), chArgs
	c.startConsumer(0)
	reconAddr := platformtest.Serve(t, "reconcile", func(ctx context.Context) (servertest.Runner, error) {
		cfg, err := reconcilesvc.Load(args(append([]string{"--control-dsn=" + control.DSN, "--grace=300ms", "--catch-up-wait=300ms"},
			chArgs...)...))
		if err != nil {
			return nil, err
		}
		return reconcilesvc.New(ctx, log, cfg)
	})
	c.results = fitnessv1.NewResultServiceClient(dial(t, resultsAddr))
	c.recon = fitnessv1.NewReconcileServiceClient(dial(t, reconAddr))
	return c
}

// startConsumer starts the consumer server at transformation epoch (its
// --epoch) on the cluster; stopConsumer stops it.
func (c *cluster) startConsumer(epoch int) {
	c.t.Helper()
	_, c.stopConsumer = platformtest.ServeStoppable(c.t, "consumer", func(ctx context.Context) (servertest.Runner, error) {
		cfg, err := consumersvc.Load(append([]string{"--grpc-addr=127.0.0.1:0", "--http-addr=", "--shutdown-grace=2s",
			"--auth-tokens=" + platformtest.Tokens, "--pulsar-url=" + infratest.PulsarURL(), "--topic=" + c.topic,
			"--dead-letter-topic=" + c.topic + "-DLQ", "--subscription=projection", "--batch-wait=50ms", fmt.Sprintf("--epoch=%d", epoch)},
			c.chArgs...))
		if err != nil {
			return nil, err
		}
		return consumersvc.New(ctx, c.log, cfg)
	})
}

// ---- writes ----

func (c *cluster) record(id int64, result string) {
	c.t.Helper()
	if _, err := c.results.RecordResult(platformtest.Operator(), &fitnessv1.RecordResultRequest{RequestId: fmt.Sprintf("rec-%d", id),
		DataId: id, DetectId: campaign, UserId: id%1000 + 1, ProjectId: 3, SchoolId: school, Grade: 5, Result: result, Unit: "m"}); err != nil {
		c.t.Errorf("record %d: %v", id, err)
	}
}

func (c *cluster) correct(id, expected int64, result string) {
	c.t.Helper()
	if _, err := c.results.CorrectResult(platformtest.Operator(), &fitnessv1.CorrectResultRequest{RequestId: fmt.Sprintf("cor-%d-%d", id, expected),
		SchoolId: school, DataId: id, ExpectedVersion: expected, Result: result, Unit: "m", Reason: "teacher correction"}); err != nil {
		c.t.Errorf("correct %d at v%d: %v", id, expected, err)
	}
}

func (c *cluster) remove(id, expected int64) {
	c.t.Helper()
	if _, err := c.results.DeleteResult(platformtest.Operator(), &fitnessv1.DeleteResultRequest{RequestId: fmt.Sprintf("del-%d", id),
		SchoolId: school, DataId: id, ExpectedVersion: expected, Reason: "entered twice"}); err != nil {
		c.t.Errorf("delete %d: %v", id, err)
	}
}

// ---- reads ----

// state is a record's version, result (thousandths) and deletion.
type state struct {
	Version int64
	Milli   int64
	Deleted bool
}

// truth is the campaign's records on the MySQL shards, by data_id.
func (c *cluster) truth() map[int64]state {
	c.t.Helper()
	out := map[int64]state{}
	for _, db := range c.shardDBs {
		rows, err := db.DB.Query("SELECT data_id, version, CAST(result * 1000 AS SIGNED), is_deleted FROM fitness_result WHERE detect_id = ?", campaign)
		if err != nil {
			c.t.Fatalf("reading the shard: %v", err)
		}
		for rows.Next() {
			var id int64
			var s state
			if err := rows.Scan(&id, &s.Version, &s.Milli, &s.Deleted); err != nil {
				c.t.Fatal(err)
			}
			out[id] = s
		}
		if err := rows.Err(); err != nil {
			c.t.Fatal(err)
		}
		rows.Close()
	}
	return out
}

// projected is the campaign's latest row per record (tombstones included)
// read through the Distributed table with FINAL, as the views read it.
func (c *cluster) projected() map[int64]state {
	c.t.Helper()
	rows, err := c.nodes[0].Query(context.Background(), `SELECT data_id, version, toInt64(result * 1000), is_deleted
		FROM fitness_result_versions FINAL WHERE detect_id = ?`, int64(campaign))
	if err != nil {
		c.t.Fatalf("reading the projection: %v", err)
	}
	defer rows.Close()
	out := map[int64]state{}
	for rows.Next() {
		var id int64
		var s state
		var del uint8
		if err := rows.Scan(&id, &s.Version, &s.Milli, &del); err != nil {
			c.t.Fatal(err)
		}
		s.Deleted = del == 1
		out[id] = s
	}
	if err := rows.Err(); err != nil {
		c.t.Fatal(err)
	}
	return out
}

// localRows are the rows of node n's (0-based) local replicated table:
// "data_id/version/digest", sorted.
func (c *cluster) localRows(n int) []string {
	c.t.Helper()
	rows, err := c.nodes[n].Query(context.Background(), `SELECT data_id, version, content_digest FROM fitness_result_versions_local`)
	if err != nil {
		c.t.Fatalf("reading node %d: %v", n+1, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, v int64
		var d uint64
		if err := rows.Scan(&id, &v, &d); err != nil {
			c.t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d/%d/%d", id, v, d))
	}
	sort.Strings(out)
	return out
}

// syncReplica waits until node n (0-based) has fetched every part its
// replication queue knows of.
func (c *cluster) syncReplica(n int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.nodes[n].Exec(ctx, "SYSTEM SYNC REPLICA fitness_result_versions_local"); err != nil {
		c.t.Fatalf("SYSTEM SYNC REPLICA on node %d: %v", n+1, err)
	}
}

func (c *cluster) waitFor(what string, timeout time.Duration, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitCaughtUp waits until every record of the campaign on the shards is in
// the projection at the same version and value.
func (c *cluster) waitCaughtUp(timeout time.Duration) {
	c.t.Helper()
	var diff string
	deadline := time.Now().Add(timeout)
	for {
		if diff = cmp.Diff(c.truth(), c.projected()); diff == "" {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the projection does not match the shards after %s (-shards +projection):\n%s", timeout, diff)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ---- the cluster's processes ----

// chcluster runs deploy/local/chcluster.sh with args.
func chcluster(t *testing.T, args ...string) {
	t.Helper()
	root, err := infratest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "deploy/local/chcluster.sh"), args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("deploy/local/chcluster.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("chcluster.sh %s: %s", strings.Join(args, " "), strings.TrimSpace(string(out)))
}

func dial(t *testing.T, addr string) *grpc.ClientConn {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
