-- The canonical content digest of each result, computed by the database from
-- the values it stores and kept at write time (a stored generated column), so
-- reconciliation can compare content without hashing at scan time. The
-- canonical string and digest are defined in pkg/canonical (String, Digest):
-- the result enters as an integer number of thousandths, never as printed
-- decimal text. SHA2, not MD5: MySQL 9 refuses MD5 in generated columns (and
-- ships it only as an optional component); SHA2 and STORED work on MySQL 8.4,
-- 9.7 and MariaDB 10.11 alike.
ALTER TABLE fitness_result
  ADD COLUMN content_digest BIGINT UNSIGNED AS (
    CAST(CONV(SUBSTR(SHA2(CONCAT_WS('|', data_id, version, is_deleted, detect_id, project_id, school_id, grade,
      CAST(result * 1000 AS SIGNED), unit), 256), 1, 16), 16, 10) AS UNSIGNED)
  ) STORED;
