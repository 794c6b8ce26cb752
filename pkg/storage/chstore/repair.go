package chstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/shopspring/decimal"

	"github.com/resultsync/resultsync/pkg/model/canonical"
)

// This file holds the projection's repair statements: the origin of a
// record's stored versions, removal of versions by a mutation, the epoch floor
// (projection_epoch_floor), and the staging tables and switch of a controlled
// rebuild (pkg/recovery/rebuild). Every statement runs on ClickHouse 18.16 and on
// current releases (26.x); none depends on how an engine prints a value.

const versionsTable = "fitness_result_versions"

// insertColumns are the columns a writer supplies; row_version and
// content_digest are MATERIALIZED (computed by ClickHouse).
const insertColumns = `detect_id, data_id, user_id, project_id, school_id, grade, version, epoch, result, unit,
	 is_deleted, event_id, shard_id, source_commit_unix_ms, ingest_unix_ms`

// Origins returns every stored version of one record — each delivered row
// not yet merged away, with its event id, source shard, ingest time, epoch,
// version and deletion state — ordered by version, epoch and ingest time.
// It reads raw versions (no FINAL): it shows where an unexpected or wrong
// record came from, and is not a current-state read. A record with no stored
// row gives an empty slice.
func (p *Projection) Origins(ctx context.Context, detectID, dataID int64) ([]Row, error) {
	rows, err := p.conn.Query(ctx, `SELECT detect_id, data_id, user_id, project_id, school_id, grade, version, epoch,
		toString(result), unit, is_deleted, event_id, shard_id, source_commit_unix_ms, ingest_unix_ms
		FROM fitness_result_versions
		WHERE detect_id = ? AND data_id % 1024 = ? AND data_id = ?
		ORDER BY version, epoch, ingest_unix_ms, event_id, shard_id`, detectID, dataID%1024, dataID)
	if err != nil {
		return nil, fmt.Errorf("reading the stored versions of record %d (campaign %d): %w", dataID, detectID, err)
	}
	defer rows.Close()
	out := []Row{}
	for rows.Next() {
		var r Row
		var del uint8
		if err := rows.Scan(&r.DetectID, &r.DataID, &r.UserID, &r.ProjectID, &r.SchoolID, &r.Grade, &r.Version, &r.Epoch,
			&r.Result, &r.Unit, &del, &r.EventID, &r.ShardID, &r.SourceCommitMs, &r.IngestMs); err != nil {
			return nil, fmt.Errorf("reading the stored versions of record %d (campaign %d): %w", dataID, detectID, err)
		}
		r.IsDeleted = del == 1
		if r.Result, err = canonical.Decimal(r.Result); err != nil {
			return nil, fmt.Errorf("reading the stored versions of record %d (campaign %d): %w", dataID, detectID, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the stored versions of record %d (campaign %d): %w", dataID, detectID, err)
	}
	return out, nil
}

// RemoveAbove deletes the stored rows of one record whose source version is
// above aboveVersion (aboveVersion 0: every row of the record), whatever
// their epoch, and returns how many rows it removed. It is an
// `ALTER TABLE ... DELETE WHERE` mutation and returns only once ClickHouse
// has applied it (it polls system.mutations: 18.16 has no mutations_sync) or
// ctx ends. Rows written after the mutation started are not removed and not
// counted. Versions at or below aboveVersion stay as far as they are still
// stored: a merge may already have collapsed them into the removed ones, so
// after a removal the caller replays the authoritative version through the
// normal path if the record must exist. Idempotent: removing again removes 0.
func (p *Projection) RemoveAbove(ctx context.Context, detectID, dataID, aboveVersion int64) (int64, error) {
	if aboveVersion < 0 {
		return 0, fmt.Errorf("removing versions of record %d: aboveVersion must be >= 0, got %d", dataID, aboveVersion)
	}
	pred := fmt.Sprintf("detect_id = %d AND data_id %% 1024 = %d AND data_id = %d AND version > %d", detectID, dataID%1024, dataID, aboveVersion)
	n, err := p.remove(ctx, pred)
	if err != nil {
		return 0, fmt.Errorf("removing versions above %d of record %d (campaign %d): %w", aboveVersion, dataID, detectID, err)
	}
	return n, nil
}

// remove deletes the rows of fitness_result_versions matching pred (SQL
// built from integers only) and returns the number of matching rows that
// are gone once the mutation is done.
func (p *Projection) remove(ctx context.Context, pred string) (int64, error) {
	before, err := p.count(ctx, pred)
	if err != nil {
		return 0, err
	}
	if before == 0 {
		return 0, nil
	}
	if p.cluster != "" {
		if err := p.removeOnCluster(ctx, pred); err != nil {
			return 0, err
		}
	} else {
		if err := p.conn.Exec(ctx, "ALTER TABLE "+versionsTable+" DELETE WHERE "+pred); err != nil {
			return 0, fmt.Errorf("starting the delete mutation: %w", err)
		}
		if err := WaitForMutations(ctx, p.conn, versionsTable); err != nil {
			return 0, err
		}
	}
	after, err := p.count(ctx, pred)
	if err != nil {
		return 0, err
	}
	return int64(before) - int64(min(after, before)), nil
}

// localVersionsTable is the sharded, replicated table behind the
// Distributed fitness_result_versions of a cluster (docs/cluster.md).
const localVersionsTable = "fitness_result_versions_local"

// removeOnCluster deletes the rows matching pred from the shards' local
// tables: one ON CLUSTER mutation (a Distributed table accepts none), then a
// wait until no replica of the cluster has it pending, each replica's
// system.mutations read through remote(). A replica that is down fails the
// wait (the removal is retried; it is idempotent).
func (p *Projection) removeOnCluster(ctx context.Context, pred string) error {
	if err := p.conn.Exec(ctx, "ALTER TABLE "+localVersionsTable+" ON CLUSTER "+p.cluster+" DELETE WHERE "+pred); err != nil {
		return fmt.Errorf("starting the delete mutation on cluster %s: %w", p.cluster, err)
	}
	db, err := p.database(ctx)
	if err != nil {
		return err
	}
	replicas, err := p.clusterNodes(ctx)
	if err != nil {
		return err
	}
	wait := 20 * time.Millisecond
	for _, n := range replicas {
		for {
			var pending uint64
			if err := p.conn.QueryRow(ctx, "SELECT count() FROM remote(?, system.mutations) WHERE database = ? AND table = ? AND is_done = 0",
				n.addr, db, localVersionsTable).Scan(&pending); err != nil {
				return fmt.Errorf("waiting for the mutations of %s on replica %s: %w", localVersionsTable, n.addr, err)
			}
			if pending == 0 {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("waiting for %d mutation(s) of %s on replica %s: %w", pending, localVersionsTable, n.addr, ctx.Err())
			case <-time.After(wait):
			}
			wait = min(2*wait, 500*time.Millisecond)
		}
	}
	return nil
}

func (p *Projection) count(ctx context.Context, pred string) (uint64, error) {
	var n uint64
	if err := p.conn.QueryRow(ctx, "SELECT count() FROM "+versionsTable+" WHERE "+pred).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting rows: %w", err)
	}
	return n, nil
}

// WaitForMutations returns once table (of the connection's database) has no
// unfinished mutation, polling system.mutations with a growing interval (20
// ms to 500 ms), or when ctx ends. It waits for every pending mutation of the
// table, not only the caller's: 18.16 returns no mutation id to wait for.
// Mutations run in the merge pool, so while merges of the table are stopped
// (SYSTEM STOP MERGES) it waits until ctx ends.
func WaitForMutations(ctx context.Context, conn driver.Conn, table string) error {
	wait := 20 * time.Millisecond
	for {
		var pending uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM system.mutations WHERE database = currentDatabase() AND table = ? AND is_done = 0",
			table).Scan(&pending); err != nil {
			return fmt.Errorf("waiting for the mutations of %s: %w", table, err)
		}
		if pending == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d mutation(s) of %s: %w", pending, table, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// EpochFloor returns the epoch floor: the lowest transformation epoch still
// allowed to write into the projection, max(epoch) of projection_epoch_floor,
// 0 when no epoch was ever retired.
func (p *Projection) EpochFloor(ctx context.Context) (uint16, error) {
	var f uint16
	if err := p.conn.QueryRow(ctx, "SELECT max(epoch) FROM projection_epoch_floor").Scan(&f); err != nil {
		return 0, fmt.Errorf("reading the epoch floor: %w", err)
	}
	return f, nil
}

// EpochRetirement is one row of projection_epoch_floor: a verified rebuild of
// a scope at Epoch, which retired every epoch below it.
type EpochRetirement struct {
	Epoch                         uint16
	Time                          time.Time
	DetectID, ProjectID, SchoolID int64 // the rebuilt scope (0: any project / school)
	Rows                          int64 // rows the rebuild wrote
}

// RaiseEpochFloor records r. The floor becomes max(floor, r.Epoch): a
// retirement at or below the current floor is recorded and changes nothing.
func (p *Projection) RaiseEpochFloor(ctx context.Context, r EpochRetirement) error {
	b, err := p.conn.PrepareBatch(ctx, "INSERT INTO projection_epoch_floor (epoch, recorded_unix_ms, detect_id, project_id, school_id, rebuilt_rows)")
	if err != nil {
		return fmt.Errorf("recording epoch floor %d: %w", r.Epoch, err)
	}
	defer b.Abort() //nolint:errcheck // no-op after Send
	if err := b.Append(r.Epoch, r.Time.UnixMilli(), r.DetectID, r.ProjectID, r.SchoolID, r.Rows); err != nil {
		return fmt.Errorf("recording epoch floor %d: %w", r.Epoch, err)
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("recording epoch floor %d: %w", r.Epoch, err)
	}
	return nil
}

// Scope selects the records of a campaign, optionally of one project and/or
// school (0: any). These fields never change for a record.
type Scope struct {
	DetectID, ProjectID, SchoolID int64
}

// sql is the scope as a predicate (integers only), over columns that never
// change for a record, so it may be applied before or after FINAL.
func (s Scope) sql() string {
	conds := []string{fmt.Sprintf("detect_id = %d", s.DetectID)}
	if s.ProjectID != 0 {
		conds = append(conds, fmt.Sprintf("project_id = %d", s.ProjectID))
	}
	if s.SchoolID != 0 {
		conds = append(conds, fmt.Sprintf("school_id = %d", s.SchoolID))
	}
	return strings.Join(conds, " AND ")
}

// Staging is a table with exactly the structure, engine and sort key of
// fitness_result_versions, private to one rebuild: nothing reads it but the
// rebuild, and its parts can be attached to the projection in one step
// (AttachStaging). On a cluster (docs/cluster.md) it is two tables, like the
// projection's: a replicated local table on every node (name + "_local",
// its own ZooKeeper path) behind a Distributed table (name) with the same
// sharding key, so every staged row sits on the ClickHouse shard that holds
// the record's live rows.
type Staging struct {
	conn    driver.Conn
	name    string
	cluster string // empty: one server
	db      string // the database, on a cluster
}

var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CreateStaging creates the staging table name (`CREATE TABLE name AS
// fitness_result_versions`: same columns, MATERIALIZED expressions, engine
// and ORDER BY). It fails if the table exists. On a cluster it creates
// name_local ON CLUSTER (ReplicatedReplacingMergeTree at
// /clickhouse/tables/{shard}/<db>/<name>, the local table's columns and
// ORDER BY) and the Distributed name over it (intHash64(data_id), as the
// projection); every node must be up.
func (p *Projection) CreateStaging(ctx context.Context, name string) (*Staging, error) {
	if !identRe.MatchString(name) || name == versionsTable || name == localVersionsTable {
		return nil, fmt.Errorf("staging table name %q: want a plain identifier other than %s", name, versionsTable)
	}
	if p.cluster == "" {
		if err := p.conn.Exec(ctx, "CREATE TABLE "+name+" AS "+versionsTable); err != nil {
			return nil, fmt.Errorf("creating staging table %s: %w", name, err)
		}
		return &Staging{conn: p.conn, name: name}, nil
	}
	db, err := p.database(ctx)
	if err != nil {
		return nil, fmt.Errorf("creating staging table %s: %w", name, err)
	}
	s := &Staging{conn: p.conn, name: name, cluster: p.cluster, db: db}
	local := fmt.Sprintf(`CREATE TABLE %[1]s.%[2]s_local ON CLUSTER %[3]s AS %[1]s.%[4]s
		ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/%[1]s/%[2]s', '{replica}', row_version)
		ORDER BY (detect_id, data_id %% 1024, data_id)`, db, name, p.cluster, localVersionsTable)
	if err := p.conn.Exec(ctx, local); err != nil {
		return nil, fmt.Errorf("creating staging table %s_local on cluster %s: %w", name, p.cluster, err)
	}
	dist := fmt.Sprintf(`CREATE TABLE %[1]s.%[2]s ON CLUSTER %[3]s AS %[1]s.%[4]s
		ENGINE = Distributed(%[3]s, %[1]s, %[2]s_local, intHash64(data_id))`, db, name, p.cluster, versionsTable)
	if err := p.conn.Exec(ctx, dist); err != nil {
		return nil, errors.Join(fmt.Errorf("creating staging table %s on cluster %s: %w", name, p.cluster, err), s.Drop(context.WithoutCancel(ctx)))
	}
	return s, nil
}

// database is the connection's current database.
func (p *Projection) database(ctx context.Context) (string, error) {
	var db string
	if err := p.conn.QueryRow(ctx, "SELECT currentDatabase()").Scan(&db); err != nil {
		return "", fmt.Errorf("reading the current database: %w", err)
	}
	if !identRe.MatchString(db) {
		return "", fmt.Errorf("database %q: want a plain identifier", db)
	}
	return db, nil
}

// Name is the staging table's name (on a cluster, the Distributed table's).
func (s *Staging) Name() string { return s.name }

// Insert writes rows into the staging table in one synchronous batch insert
// (the same columns as Projection.Insert).
func (s *Staging) Insert(ctx context.Context, rows []Row) error {
	if len(rows) == 0 {
		return nil
	}
	b, err := s.conn.PrepareBatch(ctx, "INSERT INTO "+s.name+" ("+insertColumns+")")
	if err != nil {
		return fmt.Errorf("preparing insert of %d rows into %s: %w", len(rows), s.name, err)
	}
	defer b.Abort() //nolint:errcheck // no-op after Send
	for _, r := range rows {
		dec, err := decimal.NewFromString(r.Result)
		if err != nil {
			return fmt.Errorf("row %s: result %q: %w", r.EventID, r.Result, err)
		}
		var del uint8
		if r.IsDeleted {
			del = 1
		}
		if err := b.Append(r.DetectID, r.DataID, r.UserID, r.ProjectID, r.SchoolID, r.Grade, r.Version, r.Epoch,
			dec, r.Unit, del, r.EventID, r.ShardID, r.SourceCommitMs, r.IngestMs); err != nil {
			return fmt.Errorf("row %s: %w", r.EventID, err)
		}
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("inserting %d rows into %s: %w", len(rows), s.name, err)
	}
	return nil
}

// Drop drops the staging table (no error if it is already gone); on a
// cluster both of its tables, on every node.
func (s *Staging) Drop(ctx context.Context) error {
	if s.cluster == "" {
		if err := s.conn.Exec(ctx, "DROP TABLE IF EXISTS "+s.name); err != nil {
			return fmt.Errorf("dropping staging table %s: %w", s.name, err)
		}
		return nil
	}
	for _, t := range []string{s.name, s.name + "_local"} {
		if err := s.conn.Exec(ctx, fmt.Sprintf("DROP TABLE IF EXISTS %s.%s ON CLUSTER %s", s.db, t, s.cluster)); err != nil {
			return fmt.Errorf("dropping staging table %s on cluster %s: %w", t, s.cluster, err)
		}
	}
	return nil
}

// SnapshotCurrent copies the current row (FINAL: the highest row_version per
// record, tombstones included) of every record of scope from the projection
// into into, server-side, and returns the number of rows copied. A rebuild
// takes it just before its switch so that a rollback can put back rows a
// merge folded into the rebuilt ones.
func (p *Projection) SnapshotCurrent(ctx context.Context, into *Staging, s Scope) (uint64, error) {
	if err := p.conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (%s)
		SELECT %s FROM (SELECT %s FROM %s FINAL WHERE detect_id = %d) WHERE %s`,
		into.name, insertColumns, insertColumns, insertColumns, versionsTable, s.DetectID, s.sql())); err != nil {
		return 0, fmt.Errorf("snapshotting the current state of campaign %d into %s: %w", s.DetectID, into.name, err)
	}
	var n uint64
	if err := p.conn.QueryRow(ctx, "SELECT count() FROM "+into.name).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting the snapshot %s: %w", into.name, err)
	}
	return n, nil
}

// AttachStaging adds every row of s to the projection in one step:
// `ALTER TABLE fitness_result_versions ATTACH PARTITION tuple() FROM s`.
// Both tables are unpartitioned (one partition, tuple()); ClickHouse clones
// the staging parts and commits them all in one parts transaction under the
// table's parts lock (StorageMergeTree::replacePartitionFrom, on 18.16 as on
// 26.x), and a query reads the parts set it found when it started, so every
// reader sees either none or all of the attached rows. The staging table
// keeps its rows.
//
// On a cluster ClickHouse refuses ATTACH PARTITION ON CLUSTER ("Unsupported
// type of ALTER query": run on every replica it would attach the rows
// twice), so the switch runs shard by shard: on one replica of each shard
// (the first that accepts a connection, in system.clusters order),
// `ALTER TABLE fitness_result_versions_local ATTACH PARTITION tuple() FROM
// <s>_local`; the shard's other replica replays it from the replication
// log (cloning the parts of its own staging replica). Each shard takes its
// rows in one step, so each record switches in one step (its rows are all on
// one shard), but not the shards together: a query running between two
// shards' statements sees one shard switched and the other not yet
// (docs/cluster.md). A shard that fails stops the switch with the shards
// before it switched; the error says which (a rebuild then verifies and
// rolls back).
func (p *Projection) AttachStaging(ctx context.Context, s *Staging) error {
	if s.cluster != "" {
		return p.attachOnShards(ctx, s)
	}
	if err := p.conn.Exec(ctx, "ALTER TABLE "+versionsTable+" ATTACH PARTITION tuple() FROM "+s.name); err != nil {
		return fmt.Errorf("attaching %s to %s: %w", s.name, versionsTable, err)
	}
	return nil
}

// clusterNode is one replica of a cluster, from system.clusters.
type clusterNode struct {
	shard uint32
	addr  string // host:port of its native protocol
}

// clusterNodes lists the replicas of p's cluster, by shard and replica
// number, as the connected node's <remote_servers> names them.
func (p *Projection) clusterNodes(ctx context.Context) ([]clusterNode, error) {
	rows, err := p.conn.Query(ctx, "SELECT shard_num, host_name, port FROM system.clusters WHERE cluster = ? ORDER BY shard_num, replica_num", p.cluster)
	if err != nil {
		return nil, fmt.Errorf("listing the replicas of cluster %s: %w", p.cluster, err)
	}
	defer rows.Close()
	var out []clusterNode
	for rows.Next() {
		var n clusterNode
		var host string
		var port uint16
		if err := rows.Scan(&n.shard, &host, &port); err != nil {
			return nil, fmt.Errorf("listing the replicas of cluster %s: %w", p.cluster, err)
		}
		n.addr = net.JoinHostPort(host, strconv.Itoa(int(port)))
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing the replicas of cluster %s: %w", p.cluster, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("cluster %s is not in system.clusters of the connected node", p.cluster)
	}
	return out, nil
}

func (p *Projection) attachOnShards(ctx context.Context, s *Staging) error {
	if p.nodes == nil {
		return fmt.Errorf("attaching %s_local on cluster %s: the projection has no node connection settings (chstore.Projection.WithNodes)", s.name, p.cluster)
	}
	nodes, err := p.clusterNodes(ctx)
	if err != nil {
		return fmt.Errorf("attaching %s_local: %w", s.name, err)
	}
	byShard := map[uint32][]clusterNode{}
	var shards []uint32
	for _, n := range nodes {
		if len(byShard[n.shard]) == 0 {
			shards = append(shards, n.shard)
		}
		byShard[n.shard] = append(byShard[n.shard], n)
	}
	stmt := fmt.Sprintf("ALTER TABLE %[1]s.%[2]s ATTACH PARTITION tuple() FROM %[1]s.%[3]s_local", s.db, localVersionsTable, s.name)
	var switched []string
	for _, sh := range shards {
		conn, node, err := p.openAny(ctx, byShard[sh])
		if err != nil {
			return fmt.Errorf("attaching %s_local on shard %d of cluster %s (shards switched before it: %v): %w", s.name, sh, p.cluster, switched, err)
		}
		err = conn.Exec(ctx, stmt)
		_ = conn.Close()
		if err != nil {
			return fmt.Errorf("attaching %s_local on shard %d of cluster %s at %s (shards switched before it: %v): %w", s.name, sh, p.cluster, node.addr, switched, err)
		}
		switched = append(switched, fmt.Sprintf("%d@%s", sh, node.addr))
	}
	return nil
}

// openAny connects to the first of replicas that answers a ping. Only a
// replica that could not be reached is passed over, so a statement is never
// sent to two replicas of a shard.
func (p *Projection) openAny(ctx context.Context, replicas []clusterNode) (driver.Conn, clusterNode, error) {
	var errs []error
	for _, n := range replicas {
		o := *p.nodes
		o.Addr, o.Cluster = n.addr, ""
		conn, err := Open(ctx, o)
		if err == nil {
			return conn, n, nil
		}
		errs = append(errs, err)
	}
	return nil, clusterNode{}, fmt.Errorf("no replica answers: %w", errors.Join(errs...))
}

// RestoreFrom copies every row of s into the projection, server-side (one
// INSERT ... SELECT).
func (p *Projection) RestoreFrom(ctx context.Context, s *Staging) error {
	if err := p.conn.Exec(ctx, fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s", versionsTable, insertColumns, insertColumns, s.name)); err != nil {
		return fmt.Errorf("restoring %s into %s: %w", s.name, versionsTable, err)
	}
	return nil
}

// CountRebuilt counts the projection's rows of scope at epoch with ingest
// time ingestMs: the rows one rebuild attached (a rebuild stamps all of its
// rows with its start time).
func (p *Projection) CountRebuilt(ctx context.Context, s Scope, epoch uint16, ingestMs int64) (uint64, error) {
	return p.count(ctx, rebuiltPred(s, epoch, ingestMs))
}

// RemoveRebuilt deletes the rows one rebuild attached (see CountRebuilt) by
// a mutation, waits until it is applied, and returns the rows removed.
func (p *Projection) RemoveRebuilt(ctx context.Context, s Scope, epoch uint16, ingestMs int64) (int64, error) {
	n, err := p.remove(ctx, rebuiltPred(s, epoch, ingestMs))
	if err != nil {
		return n, fmt.Errorf("removing the rebuilt rows of campaign %d at epoch %d: %w", s.DetectID, epoch, err)
	}
	return n, nil
}

func rebuiltPred(s Scope, epoch uint16, ingestMs int64) string {
	return fmt.Sprintf("%s AND epoch = %d AND ingest_unix_ms = %d", s.sql(), epoch, ingestMs)
}
