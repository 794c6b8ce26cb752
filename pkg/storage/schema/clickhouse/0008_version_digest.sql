-- The student in the content digest and a version fingerprint that cannot
-- cancel (issue 24; shard migration 0007 does the same on the shards). Both
-- are defined in pkg/canonical (Digest, VersionDigest; shared vectors):
--
--   content_digest = hash64(data_id|version|is_deleted|detect_id|user_id|project_id|school_id|grade|result_milli|unit)
--   version_digest = hash64(data_id|version|is_deleted)
--
-- MODIFY COLUMN of a MATERIALIZED expression would leave the values stored
-- in existing parts as they were. DROP COLUMN removes them; ADD COLUMN then
-- defines the column again with the new expression: a part without the
-- column computes it from the part's own stored values when read, and a merge
-- (or mutation) writes it. So rows written before the migration read the new
-- digest at once, on 18.16 and on current releases (pkg/schema
-- TestClickHouseMigration0008). Between the two statements the column does not
-- exist: run with the consumer and reconciliation stopped, like 0004. The
-- columns move to the end of the table; a rebuild's staging table copies the
-- table as it is (CREATE TABLE ... AS), so ATTACH PARTITION still matches.
ALTER TABLE fitness_result_versions DROP COLUMN content_digest;

ALTER TABLE fitness_result_versions
  ADD COLUMN content_digest UInt64 MATERIALIZED reinterpretAsUInt64(reverse(substring(SHA256(concat(
    toString(data_id), '|', toString(version), '|', toString(is_deleted), '|', toString(detect_id), '|', toString(user_id), '|',
    toString(project_id), '|', toString(school_id), '|', toString(grade), '|', toString(toInt64(result * 1000)), '|', unit)), 1, 8)));

ALTER TABLE fitness_result_versions
  ADD COLUMN version_digest UInt64 MATERIALIZED reinterpretAsUInt64(reverse(substring(SHA256(concat(
    toString(data_id), '|', toString(version), '|', toString(is_deleted))), 1, 8)));
