-- ClickHouse projection: every delivered version of every result.
-- ReplacingMergeTree keeps, per ORDER BY key, the row with the highest
-- row_version. The key holds only fields that never change for a record
-- (campaign, data_id), so all versions of a record meet on one key.
-- row_version = version << 16 | epoch: the source version in the high bits and
-- the transformation epoch (bumped when a defective mapping is fixed) in the
-- low bits, so a corrected row outranks a defective row of the same source
-- version and never a newer source version. It is computed by ClickHouse from
-- the stored columns, never supplied by a writer.
CREATE TABLE IF NOT EXISTS fitness_result_versions (
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
  row_version            UInt64 MATERIALIZED bitOr(bitShiftLeft(toUInt64(version), 16), toUInt64(epoch))
) ENGINE = ReplacingMergeTree(row_version)
ORDER BY (detect_id, data_id);

-- The one current-state read strategy: FINAL (latest row per key), then the
-- deletion filter OUTSIDE the FINAL subquery, so a tombstone hides the record
-- instead of being filtered away before the merge.
CREATE VIEW IF NOT EXISTS fitness_result_current AS
SELECT
  detect_id, data_id, user_id, project_id, school_id, grade, version, epoch,
  result, unit, event_id, shard_id, source_commit_unix_ms, ingest_unix_ms
FROM (
  SELECT
    detect_id, data_id, user_id, project_id, school_id, grade, version, epoch,
    result, unit, is_deleted, event_id, shard_id, source_commit_unix_ms, ingest_unix_ms
  FROM fitness_result_versions FINAL
)
WHERE is_deleted = 0;
