-- The projection on a ClickHouse cluster (docs/cluster.md): the final state of
-- the single-server migrations 0001-0007 (pkg/schema/clickhouse), in the
-- cluster's shape. Applied by ApplyClickHouseCluster with ON CLUSTER DDL, so
-- every node runs every statement; ${database} and ${cluster} are replaced
-- with the database and the cluster name, {shard} and {replica} are each
-- node's macros.
--
-- Sharded, replicated: every version of every result, on the shard of its
-- data_id. Same columns, ORDER BY and version column as the single server.
CREATE TABLE IF NOT EXISTS ${database}.fitness_result_versions_local ON CLUSTER ${cluster} (
  detect_id              Int64,
  data_id                Int64,
  user_id                Int64,
  project_id             Int64,
  school_id              Int64,
  grade                  Int16,
  version                Int64,
  epoch                  UInt16,
  result                 Decimal(12, 3),
  unit                   String,
  is_deleted             UInt8,
  event_id               String,
  shard_id               String,
  source_commit_unix_ms  Int64,
  ingest_unix_ms         Int64,
  row_version            UInt64 MATERIALIZED bitOr(bitShiftLeft(toUInt64(version), 16), toUInt64(epoch)),
  content_digest         UInt64 MATERIALIZED reinterpretAsUInt64(reverse(substring(SHA256(concat(
    toString(data_id), '|', toString(version), '|', toString(is_deleted), '|', toString(detect_id), '|',
    toString(project_id), '|', toString(school_id), '|', toString(grade), '|', toString(toInt64(result * 1000)), '|', unit)), 1, 8)))
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/${database}/fitness_result_versions', '{replica}', row_version)
ORDER BY (detect_id, data_id % 1024, data_id);

-- The table every reader and the consumer use, under the single server's
-- name: a Distributed table sharded by intHash64(data_id), so all versions of
-- a record land on one shard and FINAL on each shard sees all of them.
-- row_version and content_digest are ALIAS here (the same expressions): a
-- MATERIALIZED column of a Distributed table is computed by the initiator and
-- refused by the shard's insert (18.16: "Cannot insert column row_version,
-- because it is MATERIALIZED column").
CREATE TABLE IF NOT EXISTS ${database}.fitness_result_versions ON CLUSTER ${cluster} (
  detect_id              Int64,
  data_id                Int64,
  user_id                Int64,
  project_id             Int64,
  school_id              Int64,
  grade                  Int16,
  version                Int64,
  epoch                  UInt16,
  result                 Decimal(12, 3),
  unit                   String,
  is_deleted             UInt8,
  event_id               String,
  shard_id               String,
  source_commit_unix_ms  Int64,
  ingest_unix_ms         Int64,
  row_version            UInt64 ALIAS bitOr(bitShiftLeft(toUInt64(version), 16), toUInt64(epoch)),
  content_digest         UInt64 ALIAS reinterpretAsUInt64(reverse(substring(SHA256(concat(
    toString(data_id), '|', toString(version), '|', toString(is_deleted), '|', toString(detect_id), '|',
    toString(project_id), '|', toString(school_id), '|', toString(grade), '|', toString(toInt64(result * 1000)), '|', unit)), 1, 8)))
) ENGINE = Distributed(${cluster}, ${database}, fitness_result_versions_local, intHash64(data_id));

-- Current state and reports: the single server's views over the Distributed
-- table. FINAL runs on each shard (correct because a key never spans shards),
-- the deletion filter and the aggregates run on the initiator.
CREATE VIEW IF NOT EXISTS ${database}.fitness_result_current ON CLUSTER ${cluster} AS
SELECT
  detect_id, data_id, user_id, project_id, school_id, grade, version, epoch,
  result, unit, event_id, shard_id, source_commit_unix_ms, ingest_unix_ms
FROM (
  SELECT
    detect_id, data_id, user_id, project_id, school_id, grade, version, epoch,
    result, unit, is_deleted, event_id, shard_id, source_commit_unix_ms, ingest_unix_ms
  FROM ${database}.fitness_result_versions FINAL
)
WHERE is_deleted = 0;

CREATE VIEW IF NOT EXISTS ${database}.report_campaign_project ON CLUSTER ${cluster} AS
SELECT detect_id, project_id, unit,
  count() AS results, sum(result) / count() AS mean_result, min(result) AS min_result, max(result) AS max_result
FROM ${database}.fitness_result_current
GROUP BY detect_id, project_id, unit;

CREATE VIEW IF NOT EXISTS ${database}.report_school_grade ON CLUSTER ${cluster} AS
SELECT detect_id, project_id, school_id, grade, unit,
  count() AS results, sum(result) / count() AS mean_result, min(result) AS min_result, max(result) AS max_result
FROM ${database}.fitness_result_current
GROUP BY detect_id, project_id, school_id, grade, unit;

-- Small, unsharded tables: one replicated table with a replica on every node
-- (one ZooKeeper path for all shards), so any node reads all of it locally.
CREATE TABLE IF NOT EXISTS ${database}.dead_letters ON CLUSTER ${cluster} (
  dead_unix_ms  Int64,
  message_id    String,
  event_id      String,
  reason        String,
  payload       String
) ENGINE = ReplicatedMergeTree('/clickhouse/tables/all/${database}/dead_letters', '{shard}-{replica}')
ORDER BY dead_unix_ms;

CREATE TABLE IF NOT EXISTS ${database}.projection_epoch_floor ON CLUSTER ${cluster} (
  epoch             UInt16,
  recorded_unix_ms  Int64,
  detect_id         Int64,
  project_id        Int64,
  school_id         Int64,
  rebuilt_rows      Int64
) ENGINE = ReplicatedMergeTree('/clickhouse/tables/all/${database}/projection_epoch_floor', '{shard}-{replica}')
ORDER BY (epoch, recorded_unix_ms);

-- The applied position per source shard: the view fires on the replica an
-- insert reaches (a replica fetching a part fires no view), and its target is
-- replicated, so each ClickHouse shard keeps the maximum of the rows it holds;
-- readers merge the shards through the Distributed table (maxMerge).
CREATE TABLE IF NOT EXISTS ${database}.projection_applied_local ON CLUSTER ${cluster} (
  shard_id       String,
  max_commit_ms  AggregateFunction(max, Int64)
) ENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/${database}/projection_applied', '{replica}')
ORDER BY shard_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS ${database}.projection_applied_mv ON CLUSTER ${cluster} TO ${database}.projection_applied_local AS
  SELECT shard_id, maxState(source_commit_unix_ms) AS max_commit_ms FROM ${database}.fitness_result_versions_local GROUP BY shard_id;

CREATE TABLE IF NOT EXISTS ${database}.projection_applied ON CLUSTER ${cluster} (
  shard_id       String,
  max_commit_ms  AggregateFunction(max, Int64)
) ENGINE = Distributed(${cluster}, ${database}, projection_applied_local);
