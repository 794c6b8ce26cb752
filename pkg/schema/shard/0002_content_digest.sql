-- The canonical content digest of each result, computed by MariaDB from the
-- values it stores and kept at write time (a stored generated column), so
-- reconciliation can compare content without hashing at scan time. The
-- canonical string and digest are defined in pkg/canonical (String, Digest);
-- ClickHouse computes the same value from its own stored values. STORED is
-- accepted by MariaDB and MySQL 8.
ALTER TABLE fitness_result
  ADD COLUMN content_digest BIGINT UNSIGNED AS (
    CAST(CONV(SUBSTR(MD5(CONCAT_WS('|', data_id, version, is_deleted, detect_id, project_id, school_id, grade, result, unit)), 1, 16), 16, 10) AS UNSIGNED)
  ) STORED;
