-- Sort the projection by (campaign, bucket, data_id), bucket = data_id % 1024,
-- the same buckets the shards aggregate: a reconciliation drill-down into a
-- few buckets then reads primary-key ranges instead of the whole campaign.
-- Every key part derives from fields that never change for a record, so all
-- versions of a record still meet on one key. The table is rebuilt and
-- swapped; the views read it by name. Not atomic: run with the consumer
-- stopped (a repeated INSERT after a crash only duplicates versions, which
-- current-state reads ignore).
CREATE TABLE IF NOT EXISTS fitness_result_versions_by_bucket (
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
) ENGINE = ReplacingMergeTree(row_version)
ORDER BY (detect_id, data_id % 1024, data_id);

INSERT INTO fitness_result_versions_by_bucket
  (detect_id, data_id, user_id, project_id, school_id, grade, version, epoch, result, unit,
   is_deleted, event_id, shard_id, source_commit_unix_ms, ingest_unix_ms)
SELECT detect_id, data_id, user_id, project_id, school_id, grade, version, epoch, result, unit,
   is_deleted, event_id, shard_id, source_commit_unix_ms, ingest_unix_ms
FROM fitness_result_versions;

RENAME TABLE fitness_result_versions TO fitness_result_versions_unbucketed, fitness_result_versions_by_bucket TO fitness_result_versions;

DROP TABLE fitness_result_versions_unbucketed;
