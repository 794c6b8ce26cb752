-- The canonical content digest of each stored version (see pkg/canonical),
-- computed by ClickHouse from the values it actually stores, never carried
-- along from the event, so a mapping defect cannot hide itself.
ALTER TABLE fitness_result_versions
  ADD COLUMN content_digest UInt64 MATERIALIZED reinterpretAsUInt64(reverse(substring(MD5(concat(
    toString(data_id), '|', toString(version), '|', toString(is_deleted), '|', toString(detect_id), '|',
    toString(project_id), '|', toString(school_id), '|', toString(grade), '|', toString(result), '|', unit)), 1, 8)));
