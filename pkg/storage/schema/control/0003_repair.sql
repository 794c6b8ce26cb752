-- Repairs of reconciliation discrepancies and controlled rebuilds (owned by
-- pkg/repair). A repair is a resource with a state machine
-- (AWAITING_APPROVAL, EXECUTING, AWAITING_VERIFICATION, VERIFIED, FAILED,
-- CANCELLED); its items record, per discrepancy, the source versions seen and
-- applied, the outcome and the verification result; every state change is a
-- row of repair_transition. The executor holding a repair's lease runs it;
-- repairs left EXECUTING or AWAITING_VERIFICATION by a crash are resumed by
-- the next executor once the lease expired.

-- One row per CreateRepair request: the idempotency key and a hash of the
-- request, so a retry returns the same repairs and a key reused for another
-- request is refused.
CREATE TABLE IF NOT EXISTS repair_request (
  request_id    VARCHAR(64)   NOT NULL,
  request_hash  CHAR(64)      NOT NULL,
  created_by    VARCHAR(128)  NOT NULL,
  create_time   DATETIME(3)   NOT NULL,
  PRIMARY KEY (request_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- One request creates at most one repair per action: (request_id, action) is
-- unique.
CREATE TABLE IF NOT EXISTS repair (
  id                 BIGINT        NOT NULL AUTO_INCREMENT,
  repair_id          CHAR(32)      NOT NULL,
  request_id         VARCHAR(64)   NOT NULL,
  run_id             CHAR(32)      NOT NULL,
  detect_id          BIGINT        NOT NULL,
  project_id         BIGINT        NOT NULL DEFAULT 0,
  school_id          BIGINT        NOT NULL DEFAULT 0,
  action             TINYINT       NOT NULL,
  state              VARCHAR(32)   NOT NULL,
  requires_approval  TINYINT(1)    NOT NULL,
  reason             VARCHAR(1024) NOT NULL,
  created_by         VARCHAR(128)  NOT NULL,
  approved_by        VARCHAR(128)  NOT NULL DEFAULT '',
  approve_reason     VARCHAR(1024) NOT NULL DEFAULT '',
  rebuild_id         CHAR(32)      NOT NULL DEFAULT '',
  rebuild_epoch      INT           NOT NULL DEFAULT 0,
  items_total        BIGINT        NOT NULL DEFAULT 0,
  items_done         BIGINT        NOT NULL DEFAULT 0,
  items_failed       BIGINT        NOT NULL DEFAULT 0,
  verification       VARCHAR(16)   NOT NULL DEFAULT 'PENDING',
  message            VARCHAR(2048) NOT NULL DEFAULT '',
  lease_owner        VARCHAR(64)   NULL,
  lease_expire       DATETIME(3)   NULL,
  verify_deadline    DATETIME(3)   NULL,
  create_time        DATETIME(3)   NOT NULL,
  update_time        DATETIME(3)   NOT NULL,
  state_time         DATETIME(3)   NOT NULL,
  approve_time       DATETIME(3)   NULL,
  end_time           DATETIME(3)   NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uk_repair_id (repair_id),
  UNIQUE KEY uk_request_action (request_id, action),
  KEY idx_run (run_id, id),
  KEY idx_state (state, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- active_data_id is the record's data_id while the repair has not ended and
-- NULL after: its unique key lets at most one active repair touch a record,
-- whichever run found it (a unique key admits any number of NULLs on both
-- engines).
CREATE TABLE IF NOT EXISTS repair_item (
  repair_id        CHAR(32)      NOT NULL,
  seq              INT           NOT NULL,
  discrepancy_id   CHAR(32)      NOT NULL,
  active_data_id   BIGINT        NULL,
  data_id          BIGINT        NOT NULL,
  detect_id        BIGINT        NOT NULL,
  shard_id         VARCHAR(64)   NOT NULL,
  class            TINYINT       NOT NULL,
  action           TINYINT       NOT NULL,
  source_version   BIGINT        NOT NULL,
  target_version   BIGINT        NOT NULL,
  applied_version  BIGINT        NOT NULL DEFAULT 0,
  event_id         VARCHAR(128)  NOT NULL DEFAULT '',
  rows_removed     BIGINT        NOT NULL DEFAULT 0,
  outcome          VARCHAR(32)   NOT NULL DEFAULT 'PENDING',
  verification     VARCHAR(16)   NOT NULL DEFAULT 'PENDING',
  attempts         INT           NOT NULL DEFAULT 0,
  origins          TEXT          NULL,
  message          VARCHAR(1024) NOT NULL DEFAULT '',
  apply_time       DATETIME(3)   NULL,
  verify_time      DATETIME(3)   NULL,
  PRIMARY KEY (repair_id, seq),
  UNIQUE KEY uk_active_record (active_data_id),
  KEY idx_discrepancy (discrepancy_id),
  KEY idx_outcome (repair_id, outcome)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- State changes of repairs and rebuilds (subject 'repair' or 'rebuild'),
-- with the actor, a note and the time; rebuild phase changes are recorded
-- with from_state = to_state.
CREATE TABLE IF NOT EXISTS repair_transition (
  id           BIGINT        NOT NULL AUTO_INCREMENT,
  subject      VARCHAR(16)   NOT NULL,
  subject_id   CHAR(32)      NOT NULL,
  from_state   VARCHAR(32)   NOT NULL,
  to_state     VARCHAR(32)   NOT NULL,
  actor        VARCHAR(128)  NOT NULL,
  note         VARCHAR(1024) NOT NULL DEFAULT '',
  create_time  DATETIME(3)   NOT NULL,
  PRIMARY KEY (id),
  KEY idx_subject (subject_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- Controlled rebuilds. active_detect_id is the campaign while the rebuild has
-- not ended and NULL after: at most one active rebuild per campaign. A
-- rebuild of a REBUILD repair carries its repair_id and is approved and
-- cancelled through the repair.
CREATE TABLE IF NOT EXISTS rebuild (
  id                BIGINT        NOT NULL AUTO_INCREMENT,
  rebuild_id        CHAR(32)      NOT NULL,
  request_id        VARCHAR(64)   NOT NULL,
  request_hash      CHAR(64)      NOT NULL,
  repair_id         CHAR(32)      NOT NULL DEFAULT '',
  detect_id         BIGINT        NOT NULL,
  project_id        BIGINT        NOT NULL DEFAULT 0,
  school_id         BIGINT        NOT NULL DEFAULT 0,
  epoch             INT           NOT NULL,
  state             VARCHAR(32)   NOT NULL,
  phase             VARCHAR(32)   NOT NULL DEFAULT '',
  verification      VARCHAR(16)   NOT NULL DEFAULT 'PENDING',
  reason            VARCHAR(1024) NOT NULL,
  created_by        VARCHAR(128)  NOT NULL,
  approved_by       VARCHAR(128)  NOT NULL DEFAULT '',
  approve_reason    VARCHAR(1024) NOT NULL DEFAULT '',
  rows_written      BIGINT        NOT NULL DEFAULT 0,
  rows_total        BIGINT        NOT NULL DEFAULT 0,
  message           VARCHAR(2048) NOT NULL DEFAULT '',
  active_detect_id  BIGINT        NULL,
  lease_owner       VARCHAR(64)   NULL,
  lease_expire      DATETIME(3)   NULL,
  create_time       DATETIME(3)   NOT NULL,
  update_time       DATETIME(3)   NOT NULL,
  state_time        DATETIME(3)   NOT NULL,
  approve_time      DATETIME(3)   NULL,
  end_time          DATETIME(3)   NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uk_rebuild_id (rebuild_id),
  UNIQUE KEY uk_request_id (request_id),
  UNIQUE KEY uk_active_campaign (active_detect_id),
  KEY idx_detect (detect_id, id),
  KEY idx_state (state, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
