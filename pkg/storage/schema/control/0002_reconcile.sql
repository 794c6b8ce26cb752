-- Reconciliation runs and the discrepancies they confirmed. A run is a
-- resource with a state machine (PENDING, RUNNING, WAITING_FOR_CATCH_UP,
-- SUCCEEDED, FAILED); runs left non-terminal by a restart are marked FAILED
-- at start-up.
CREATE TABLE IF NOT EXISTS reconcile_run (
  id                 BIGINT        NOT NULL AUTO_INCREMENT,
  run_id             CHAR(32)      NOT NULL,
  detect_id          BIGINT        NOT NULL,
  project_id         BIGINT        NOT NULL DEFAULT 0,
  school_id          BIGINT        NOT NULL DEFAULT 0,
  depth              TINYINT       NOT NULL,
  sample_rate        DOUBLE        NOT NULL DEFAULT 0,
  state              VARCHAR(32)   NOT NULL,
  buckets_done       BIGINT        NOT NULL DEFAULT 0,
  buckets_total      BIGINT        NOT NULL DEFAULT 0,
  rows_compared      BIGINT        NOT NULL DEFAULT 0,
  discrepancy_count  BIGINT        NOT NULL DEFAULT 0,
  boundary_retries   INT           NOT NULL DEFAULT 0,
  message            VARCHAR(2048) NOT NULL DEFAULT '',
  error_message      VARCHAR(2048) NOT NULL DEFAULT '',
  created_by         VARCHAR(128)  NOT NULL DEFAULT '',
  create_time        DATETIME(3)   NOT NULL,
  end_time           DATETIME(3)   NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uk_run_id (run_id),
  KEY idx_detect (detect_id, id),
  KEY idx_state (state)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE IF NOT EXISTS discrepancy (
  id              BIGINT        NOT NULL AUTO_INCREMENT,
  discrepancy_id  CHAR(32)      NOT NULL,
  run_id          CHAR(32)      NOT NULL,
  class           TINYINT       NOT NULL,
  data_id         BIGINT        NOT NULL,
  detect_id       BIGINT        NOT NULL,
  src_present     TINYINT(1)    NOT NULL,
  src_version     BIGINT        NOT NULL,
  src_deleted     TINYINT(1)    NOT NULL,
  src_canonical   VARCHAR(512)  NOT NULL,
  dst_present     TINYINT(1)    NOT NULL,
  dst_version     BIGINT        NOT NULL,
  dst_deleted     TINYINT(1)    NOT NULL,
  dst_canonical   VARCHAR(512)  NOT NULL,
  resolved        TINYINT(1)    NOT NULL DEFAULT 0,
  create_time     DATETIME(3)   NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uk_discrepancy_id (discrepancy_id),
  KEY idx_run (run_id, data_id),
  KEY idx_unresolved (resolved, class)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
