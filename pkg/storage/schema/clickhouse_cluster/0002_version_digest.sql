-- The single server's migration 0008 in the cluster's shape (docs/cluster.md):
-- content_digest gains the student (user_id), version_digest is new (see
-- pkg/schema/clickhouse/0008_version_digest.sql and pkg/canonical). On the
-- replicated local tables the column is dropped and added again, so parts
-- written before compute the new digest on read and merges write it; the
-- Distributed table's columns are ALIAS (no stored values), so it is
-- created again (below). Run with the consumers and reconciliation stopped.
ALTER TABLE ${database}.fitness_result_versions_local ON CLUSTER ${cluster} DROP COLUMN content_digest;

ALTER TABLE ${database}.fitness_result_versions_local ON CLUSTER ${cluster}
  ADD COLUMN content_digest UInt64 MATERIALIZED reinterpretAsUInt64(reverse(substring(SHA256(concat(
    toString(data_id), '|', toString(version), '|', toString(is_deleted), '|', toString(detect_id), '|', toString(user_id), '|',
    toString(project_id), '|', toString(school_id), '|', toString(grade), '|', toString(toInt64(result * 1000)), '|', unit)), 1, 8)));

ALTER TABLE ${database}.fitness_result_versions_local ON CLUSTER ${cluster}
  ADD COLUMN version_digest UInt64 MATERIALIZED reinterpretAsUInt64(reverse(substring(SHA256(concat(
    toString(data_id), '|', toString(version), '|', toString(is_deleted))), 1, 8)));

-- The Distributed table holds no data: it is created again with the new
-- ALIAS columns. ClickHouse refuses ALTER ... ON CLUSTER of a Distributed
-- table on a cluster of replicated shards (18.16, code 371: "Table ... isn't
-- replicated, but shard #1 is replicated according to its cluster
-- definition"); DROP and CREATE are plain distributed DDL.
DROP TABLE IF EXISTS ${database}.fitness_result_versions ON CLUSTER ${cluster};

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
    toString(data_id), '|', toString(version), '|', toString(is_deleted), '|', toString(detect_id), '|', toString(user_id), '|',
    toString(project_id), '|', toString(school_id), '|', toString(grade), '|', toString(toInt64(result * 1000)), '|', unit)), 1, 8))),
  version_digest         UInt64 ALIAS reinterpretAsUInt64(reverse(substring(SHA256(concat(
    toString(data_id), '|', toString(version), '|', toString(is_deleted))), 1, 8)))
) ENGINE = Distributed(${cluster}, ${database}, fitness_result_versions_local, intHash64(data_id));
