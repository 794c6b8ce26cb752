-- The durable deletion record: a tombstone that is physically removed from
-- fitness_result (the retention job, pkg/replay Purge, or any other DELETE)
-- leaves its full last state here, so a delayed event, a repair (pkg/replay
-- Replay) and reconciliation (pkg/reconcile MySQLSource) still know the record
-- was deleted, and at which version.
--
-- Written by a trigger, not by the purge function: an AFTER DELETE trigger
-- fires for every removal whatever issues it, in the same transaction and
-- from the values the shard stored (OLD), so no path can remove a tombstone
-- without leaving its record, and the record is exactly the row removed. Until
-- it is removed, the tombstone row is its own durable record, so nothing is
-- written at delete time and the write path (corrections included) pays
-- nothing. Removals that fire no trigger (TRUNCATE, dropping the table or a
-- partition) are outside the contract.
--
-- The columns are fitness_result's, with the same names and types, so the
-- same reads (resultstore.ResultColumns, canonical.MySQLString, the bucket
-- predicate) apply to both tables; content_digest is the value the removed
-- row stored. A physically removed LIVE row (is_deleted = 0) is no tombstone
-- and has no version saying it was deleted: it leaves no deletion record, and
-- reconciliation reports what the projection still shows of it. Deletion
-- records are kept for good: nothing removes them, and a retention of this
-- table would also have to take its records out of campaign_bucket.
CREATE TABLE IF NOT EXISTS deletion_log (
  data_id        BIGINT          NOT NULL,
  detect_id      BIGINT          NOT NULL,
  user_id        BIGINT          NOT NULL,
  project_id     BIGINT          NOT NULL,
  school_id      BIGINT          NOT NULL,
  grade          SMALLINT        NOT NULL,
  result         DECIMAL(12,3)   NOT NULL,
  unit           VARCHAR(16)     NOT NULL,
  version        BIGINT          NOT NULL,
  is_deleted     TINYINT(1)      NOT NULL DEFAULT 1,
  content_digest BIGINT UNSIGNED NOT NULL,
  create_time    DATETIME(3)     NOT NULL,
  update_time    DATETIME(3)     NOT NULL,
  purge_time     DATETIME(3)     NOT NULL,
  bucket         SMALLINT AS (data_id % 1024) STORED,
  PRIMARY KEY (data_id),
  KEY idx_campaign_bucket (detect_id, bucket)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- The bucket aggregates (0003) describe the logical state: a purged tombstone
-- is still a deleted record at its version (ClickHouse keeps its tombstone
-- row), so removing a tombstone leaves its bucket unchanged — live count,
-- version and digest XORs, and revision (a purge changes no business state,
-- so a reconciliation run across it need not wait for catch-up). Only a live
-- row removed outside the contract is taken out, as before. The trigger keeps
-- its name (operators and tests address the three bucket triggers by name).
-- Apply with writes stopped, like 0003: between these two statements a
-- removal would not be counted.
DROP TRIGGER IF EXISTS fitness_result_bucket_del;

CREATE TRIGGER fitness_result_bucket_del AFTER DELETE ON fitness_result FOR EACH ROW
  UPDATE campaign_bucket SET revision = revision + 1, live = live - 1,
    version_xor = version_xor ^ ((CAST(OLD.data_id AS UNSIGNED) << 20) ^ (CAST(OLD.version AS UNSIGNED) << 1) ^ OLD.is_deleted),
    digest_xor = digest_xor ^ OLD.content_digest
  WHERE detect_id = OLD.detect_id AND bucket = OLD.data_id % 1024 AND OLD.is_deleted = 0;

-- The deletion record of a removed tombstone, from the values the shard
-- stored. A data_id recorded again after its purge (the write path's primary
-- key no longer refuses it) and removed again overwrites the record with its
-- latest removed state; reconciliation reports such a reused id as target
-- ahead of source (the projection keeps the first tombstone's higher
-- version).
CREATE TRIGGER fitness_result_deletion_log AFTER DELETE ON fitness_result FOR EACH ROW
  INSERT INTO deletion_log (data_id, detect_id, user_id, project_id, school_id, grade, result, unit, version, is_deleted,
    content_digest, create_time, update_time, purge_time)
  SELECT OLD.data_id, OLD.detect_id, OLD.user_id, OLD.project_id, OLD.school_id, OLD.grade, OLD.result, OLD.unit,
    OLD.version, OLD.is_deleted, OLD.content_digest, OLD.create_time, OLD.update_time, UTC_TIMESTAMP(3)
  FROM DUAL WHERE OLD.is_deleted = 1
  ON DUPLICATE KEY UPDATE detect_id = OLD.detect_id, user_id = OLD.user_id, project_id = OLD.project_id,
    school_id = OLD.school_id, grade = OLD.grade, result = OLD.result, unit = OLD.unit, version = OLD.version,
    is_deleted = OLD.is_deleted, content_digest = OLD.content_digest, create_time = OLD.create_time,
    update_time = OLD.update_time, purge_time = UTC_TIMESTAMP(3);
