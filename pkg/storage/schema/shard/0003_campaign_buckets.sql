-- Per-campaign bucket aggregates kept by the database at write time, so that
-- reconciliation reads at most 1024 rows per campaign and shard instead of
-- scanning every result. bucket = data_id % 1024. For each bucket: revision
-- (changes committed), live (records whose latest version is not deleted),
-- version_xor (XOR of (data_id << 20) ^ (version << 1) ^ is_deleted) and
-- digest_xor (XOR of the stored content_digest). Triggers update them in the
-- same transaction as the change, from the values the database stores
-- (OLD/NEW; no VALUES(): MySQL deprecates it and MariaDB lacks the row alias
-- that replaces it). On MySQL with the binary log on (its default), creating
-- a trigger needs the SUPER privilege or log_bin_trust_function_creators=1.
-- The campaign revision is SUM(revision) over the buckets; it replaces the
-- striped campaign_revision table. Apply with writes stopped (the backfill
-- and the triggers are not atomic together).
CREATE TABLE IF NOT EXISTS campaign_bucket (
  detect_id    BIGINT          NOT NULL,
  bucket       SMALLINT        NOT NULL,
  revision     BIGINT          NOT NULL,
  live         BIGINT          NOT NULL,
  version_xor  BIGINT UNSIGNED NOT NULL,
  digest_xor   BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (detect_id, bucket)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

INSERT INTO campaign_bucket (detect_id, bucket, revision, live, version_xor, digest_xor)
SELECT detect_id, data_id % 1024, COUNT(*), SUM(is_deleted = 0),
       BIT_XOR((CAST(data_id AS UNSIGNED) << 20) ^ (CAST(version AS UNSIGNED) << 1) ^ is_deleted), BIT_XOR(content_digest)
FROM fitness_result GROUP BY detect_id, data_id % 1024;

DROP TABLE IF EXISTS campaign_revision;

ALTER TABLE fitness_result
  ADD COLUMN bucket SMALLINT AS (data_id % 1024) STORED,
  ADD KEY idx_campaign_bucket (detect_id, bucket);

CREATE TRIGGER fitness_result_bucket_ins AFTER INSERT ON fitness_result FOR EACH ROW
  INSERT INTO campaign_bucket (detect_id, bucket, revision, live, version_xor, digest_xor)
  VALUES (NEW.detect_id, NEW.data_id % 1024, 1, IF(NEW.is_deleted, 0, 1),
          (CAST(NEW.data_id AS UNSIGNED) << 20) ^ (CAST(NEW.version AS UNSIGNED) << 1) ^ NEW.is_deleted, NEW.content_digest)
  ON DUPLICATE KEY UPDATE revision = revision + 1, live = live + IF(NEW.is_deleted, 0, 1),
    version_xor = version_xor ^ ((CAST(NEW.data_id AS UNSIGNED) << 20) ^ (CAST(NEW.version AS UNSIGNED) << 1) ^ NEW.is_deleted),
    digest_xor = digest_xor ^ NEW.content_digest;

CREATE TRIGGER fitness_result_bucket_upd AFTER UPDATE ON fitness_result FOR EACH ROW
  INSERT INTO campaign_bucket (detect_id, bucket, revision, live, version_xor, digest_xor)
  VALUES (NEW.detect_id, NEW.data_id % 1024, 1, IF(NEW.is_deleted, 0, 1) - IF(OLD.is_deleted, 0, 1),
          ((CAST(OLD.data_id AS UNSIGNED) << 20) ^ (CAST(OLD.version AS UNSIGNED) << 1) ^ OLD.is_deleted)
          ^ ((CAST(NEW.data_id AS UNSIGNED) << 20) ^ (CAST(NEW.version AS UNSIGNED) << 1) ^ NEW.is_deleted),
          OLD.content_digest ^ NEW.content_digest)
  ON DUPLICATE KEY UPDATE revision = revision + 1, live = live + (IF(NEW.is_deleted, 0, 1) - IF(OLD.is_deleted, 0, 1)),
    version_xor = version_xor ^ ((CAST(OLD.data_id AS UNSIGNED) << 20) ^ (CAST(OLD.version AS UNSIGNED) << 1) ^ OLD.is_deleted)
      ^ ((CAST(NEW.data_id AS UNSIGNED) << 20) ^ (CAST(NEW.version AS UNSIGNED) << 1) ^ NEW.is_deleted),
    digest_xor = digest_xor ^ OLD.content_digest ^ NEW.content_digest;

CREATE TRIGGER fitness_result_bucket_del AFTER DELETE ON fitness_result FOR EACH ROW
  UPDATE campaign_bucket SET revision = revision + 1, live = live - IF(OLD.is_deleted, 0, 1),
    version_xor = version_xor ^ ((CAST(OLD.data_id AS UNSIGNED) << 20) ^ (CAST(OLD.version AS UNSIGNED) << 1) ^ OLD.is_deleted),
    digest_xor = digest_xor ^ OLD.content_digest
  WHERE detect_id = OLD.detect_id AND bucket = OLD.data_id % 1024;
