-- The canonical content digest of each stored version (see pkg/canonical),
-- computed by ClickHouse from the values it actually stores, never carried
-- along from the event, so a mapping defect cannot hide itself. The result
-- enters as an integer number of thousandths: toString of a Decimal prints
-- 2.310 on 18.16 and 2.31 since 21.9, so printed decimals never enter it.
ALTER TABLE fitness_result_versions
  ADD COLUMN content_digest UInt64 MATERIALIZED reinterpretAsUInt64(reverse(substring(SHA256(concat(
    toString(data_id), '|', toString(version), '|', toString(is_deleted), '|', toString(detect_id), '|',
    toString(project_id), '|', toString(school_id), '|', toString(grade), '|', toString(toInt64(result * 1000)), '|', unit)), 1, 8)));
