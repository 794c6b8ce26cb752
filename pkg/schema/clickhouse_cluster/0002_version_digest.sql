-- The single server's migration 0008 in the cluster's shape (docs/cluster.md):
-- content_digest gains the student (user_id), version_digest is new (see
-- pkg/schema/clickhouse/0008_version_digest.sql and pkg/canonical). On the
-- replicated local tables the column is dropped and added again, so parts
-- written before compute the new digest on read and merges write it; the
-- Distributed table's columns are ALIAS (no stored values), so they are
-- modified in place. Run with the consumers and reconciliation stopped.
ALTER TABLE ${database}.fitness_result_versions_local ON CLUSTER ${cluster} DROP COLUMN content_digest;

ALTER TABLE ${database}.fitness_result_versions_local ON CLUSTER ${cluster}
  ADD COLUMN content_digest UInt64 MATERIALIZED reinterpretAsUInt64(reverse(substring(SHA256(concat(
    toString(data_id), '|', toString(version), '|', toString(is_deleted), '|', toString(detect_id), '|', toString(user_id), '|',
    toString(project_id), '|', toString(school_id), '|', toString(grade), '|', toString(toInt64(result * 1000)), '|', unit)), 1, 8)));

ALTER TABLE ${database}.fitness_result_versions_local ON CLUSTER ${cluster}
  ADD COLUMN version_digest UInt64 MATERIALIZED reinterpretAsUInt64(reverse(substring(SHA256(concat(
    toString(data_id), '|', toString(version), '|', toString(is_deleted))), 1, 8)));

ALTER TABLE ${database}.fitness_result_versions ON CLUSTER ${cluster}
  MODIFY COLUMN content_digest UInt64 ALIAS reinterpretAsUInt64(reverse(substring(SHA256(concat(
    toString(data_id), '|', toString(version), '|', toString(is_deleted), '|', toString(detect_id), '|', toString(user_id), '|',
    toString(project_id), '|', toString(school_id), '|', toString(grade), '|', toString(toInt64(result * 1000)), '|', unit)), 1, 8)));

ALTER TABLE ${database}.fitness_result_versions ON CLUSTER ${cluster}
  ADD COLUMN version_digest UInt64 ALIAS reinterpretAsUInt64(reverse(substring(SHA256(concat(
    toString(data_id), '|', toString(version), '|', toString(is_deleted))), 1, 8)));
