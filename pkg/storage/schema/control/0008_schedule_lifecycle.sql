-- The discrepancy lifecycle and the reconciliation schedule
-- (pkg/reconcile runs.go and schedule.go).
--
-- A discrepancy is resolved by a verified repair, or by a later SUCCEEDED
-- run whose scope and depth cover its record and found it consistent: the
-- resolving run (empty for a repair), when, and how (CLEAN_RUN,
-- VERIFIED_REPAIR; empty for rows resolved before this migration). A run
-- finds the unresolved discrepancies of its campaign by record.
ALTER TABLE discrepancy
  ADD COLUMN resolved_by_run VARCHAR(32)  NOT NULL DEFAULT '',
  ADD COLUMN resolve_time    DATETIME(3)  NULL,
  ADD COLUMN resolution      VARCHAR(32)  NOT NULL DEFAULT '';

CREATE INDEX idx_detect_unresolved ON discrepancy (detect_id, resolved, data_id);

-- One active scheduler across the reconcile server's replicas: the holder
-- of a named lease until expire_time (the control database's clock,
-- UTC_TIMESTAMP(3)); another replica takes it over once it expired.
CREATE TABLE IF NOT EXISTS scheduler_lease (
  name         VARCHAR(64)  NOT NULL,
  holder       VARCHAR(128) NOT NULL,
  expire_time  DATETIME(3)  NOT NULL,
  PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- The schedule of every campaign the shards hold: the revision of its last
-- clean scheduled run (SUCCEEDED, no discrepancy), its last scheduled run,
-- and the next bucket of its rotating CONTENT sample and when the sample
-- last ran (the next window covers the buckets due since then).
CREATE TABLE IF NOT EXISTS reconcile_schedule (
  detect_id            BIGINT       NOT NULL,
  first_seen_time      DATETIME(3)  NOT NULL,
  last_clean_revision  BIGINT       NULL,
  last_clean_run_id    VARCHAR(32)  NOT NULL DEFAULT '',
  last_clean_time      DATETIME(3)  NULL,
  last_run_id          VARCHAR(32)  NOT NULL DEFAULT '',
  last_run_time        DATETIME(3)  NULL,
  sample_cursor        INT          NOT NULL DEFAULT 0,
  last_sample_time     DATETIME(3)  NULL,
  PRIMARY KEY (detect_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- When each bucket of a campaign was last compared at CONTENT depth by a
-- SUCCEEDED scheduled run (the rotating sample, or a CONTENT run of the
-- whole campaign); a bucket without a row was never checked.
CREATE TABLE IF NOT EXISTS reconcile_bucket_check (
  detect_id   BIGINT       NOT NULL,
  bucket      INT          NOT NULL,
  check_time  DATETIME(3)  NOT NULL,
  PRIMARY KEY (detect_id, bucket)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
