-- A version fingerprint that cannot cancel, and the student in the content
-- digest (issue 24). Both digests are defined in pkg/canonical (Digest,
-- VersionDigest; the shared vectors in pkg/canonical/testdata prove every
-- engine agrees):
--
--   content_digest = hash64(data_id|version|is_deleted|detect_id|user_id|project_id|school_id|grade|result_milli|unit)
--   version_digest = hash64(data_id|version|is_deleted)
--
-- hash64 = the first 8 bytes of SHA-256, big-endian. The bucket aggregates
-- XOR version_digest instead of (data_id << 20) ^ (version << 1) ^
-- is_deleted, whose terms cancelled: two records of one bucket stale by the
-- same version gap left the bucket "matching" at VERSIONS depth.
--
-- Apply with writes stopped, like 0003 and 0004: the recomputation of the
-- aggregates and the new triggers are not atomic together. Every statement
-- runs on MySQL 8.4/9.7 and MariaDB 10.11; MODIFY of a stored generated
-- column rewrites the table (pkg/schema TestShardMigration0007 and bench/migrate give
-- the time on 1,000,000 records).

-- The stored digests of fitness_result: content_digest gains user_id, and
-- version_digest is new (stored, so neither the triggers nor a scan hash at
-- read time).
ALTER TABLE fitness_result
  MODIFY COLUMN content_digest BIGINT UNSIGNED AS (
    CAST(CONV(SUBSTR(SHA2(CONCAT_WS('|', data_id, version, is_deleted, detect_id, user_id, project_id, school_id, grade,
      CAST(result * 1000 AS SIGNED), unit), 256), 1, 16), 16, 10) AS UNSIGNED)
  ) STORED,
  ADD COLUMN version_digest BIGINT UNSIGNED AS (
    CAST(CONV(SUBSTR(SHA2(CONCAT_WS('|', data_id, version, is_deleted), 256), 1, 16), 16, 10) AS UNSIGNED)
  ) STORED;

-- The deletion records keep the values the removed row stored (0004): both
-- digests recomputed for the records already there, from their own columns
-- (the same expressions; deletion_log has fitness_result's columns).
ALTER TABLE deletion_log ADD COLUMN version_digest BIGINT UNSIGNED NOT NULL DEFAULT 0 AFTER content_digest;

UPDATE deletion_log SET
  content_digest = CAST(CONV(SUBSTR(SHA2(CONCAT_WS('|', data_id, version, is_deleted, detect_id, user_id, project_id, school_id, grade,
    CAST(result * 1000 AS SIGNED), unit), 256), 1, 16), 16, 10) AS UNSIGNED),
  version_digest = CAST(CONV(SUBSTR(SHA2(CONCAT_WS('|', data_id, version, is_deleted), 256), 1, 16), 16, 10) AS UNSIGNED);

-- The three bucket triggers and the deletion-record trigger, recreated
-- under their names with the stored version_digest. The delete trigger keeps
-- 0004's rule: a purged tombstone stays counted, a removed live row is taken
-- out.
DROP TRIGGER IF EXISTS fitness_result_bucket_ins;

CREATE TRIGGER fitness_result_bucket_ins AFTER INSERT ON fitness_result FOR EACH ROW
  INSERT INTO campaign_bucket (detect_id, bucket, revision, live, version_xor, digest_xor)
  VALUES (NEW.detect_id, NEW.data_id % 1024, 1, IF(NEW.is_deleted, 0, 1), NEW.version_digest, NEW.content_digest)
  ON DUPLICATE KEY UPDATE revision = revision + 1, live = live + IF(NEW.is_deleted, 0, 1),
    version_xor = version_xor ^ NEW.version_digest, digest_xor = digest_xor ^ NEW.content_digest;

DROP TRIGGER IF EXISTS fitness_result_bucket_upd;

CREATE TRIGGER fitness_result_bucket_upd AFTER UPDATE ON fitness_result FOR EACH ROW
  INSERT INTO campaign_bucket (detect_id, bucket, revision, live, version_xor, digest_xor)
  VALUES (NEW.detect_id, NEW.data_id % 1024, 1, IF(NEW.is_deleted, 0, 1) - IF(OLD.is_deleted, 0, 1),
          OLD.version_digest ^ NEW.version_digest, OLD.content_digest ^ NEW.content_digest)
  ON DUPLICATE KEY UPDATE revision = revision + 1, live = live + (IF(NEW.is_deleted, 0, 1) - IF(OLD.is_deleted, 0, 1)),
    version_xor = version_xor ^ OLD.version_digest ^ NEW.version_digest,
    digest_xor = digest_xor ^ OLD.content_digest ^ NEW.content_digest;

DROP TRIGGER IF EXISTS fitness_result_bucket_del;

CREATE TRIGGER fitness_result_bucket_del AFTER DELETE ON fitness_result FOR EACH ROW
  UPDATE campaign_bucket SET revision = revision + 1, live = live - 1,
    version_xor = version_xor ^ OLD.version_digest, digest_xor = digest_xor ^ OLD.content_digest
  WHERE detect_id = OLD.detect_id AND bucket = OLD.data_id % 1024 AND OLD.is_deleted = 0;

DROP TRIGGER IF EXISTS fitness_result_deletion_log;

CREATE TRIGGER fitness_result_deletion_log AFTER DELETE ON fitness_result FOR EACH ROW
  INSERT INTO deletion_log (data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted,
    content_digest, version_digest, create_time, update_time, purge_time)
  SELECT OLD.data_id, OLD.detect_id, OLD.user_id, OLD.project_id, OLD.school_id, OLD.grade, OLD.result, OLD.unit,
    OLD.version, OLD.is_deleted, OLD.content_digest, OLD.version_digest, OLD.create_time, OLD.update_time, UTC_TIMESTAMP(3)
  FROM DUAL WHERE OLD.is_deleted = 1
  ON DUPLICATE KEY UPDATE detect_id = OLD.detect_id, user_id = OLD.user_id, project_id = OLD.project_id,
    school_id = OLD.school_id, grade = OLD.grade, result = OLD.result, unit = OLD.unit, version = OLD.version,
    is_deleted = OLD.is_deleted, content_digest = OLD.content_digest, version_digest = OLD.version_digest,
    create_time = OLD.create_time, update_time = OLD.update_time, purge_time = UTC_TIMESTAMP(3);

-- The stored aggregates recomputed for every existing bucket from the
-- logical state the triggers keep (0004): every row of fitness_result and
-- every deletion record of a purged tombstone. A bucket whose records were
-- all removed as live rows goes back to 0. live and revision do not change.
UPDATE campaign_bucket c
  LEFT JOIN (
    SELECT detect_id, b, BIT_XOR(vd) AS vx, BIT_XOR(cd) AS dx FROM (
      SELECT detect_id, data_id % 1024 AS b, version_digest AS vd, content_digest AS cd FROM fitness_result
      UNION ALL
      SELECT detect_id, data_id % 1024, version_digest, content_digest FROM deletion_log
    ) r GROUP BY detect_id, b
  ) a ON a.detect_id = c.detect_id AND a.b = c.bucket
SET c.version_xor = COALESCE(a.vx, 0), c.digest_xor = COALESCE(a.dx, 0);
