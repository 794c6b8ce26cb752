-- Shard schema: the authoritative results of the schools routed to this shard,
-- the campaign revisions, idempotency keys and the transactional outbox.
-- Every change commits the business row, the revision and the outbox row in one
-- local transaction (see pkg/outbox).

CREATE TABLE IF NOT EXISTS fitness_result (
  data_id      BIGINT        NOT NULL,
  detect_id    BIGINT        NOT NULL,
  user_id      BIGINT        NOT NULL,
  project_id   BIGINT        NOT NULL,
  school_id    BIGINT        NOT NULL,
  grade        SMALLINT      NOT NULL,
  result       DECIMAL(12,3) NOT NULL,
  unit         VARCHAR(16)   NOT NULL,
  version      BIGINT        NOT NULL,
  is_deleted   TINYINT(1)    NOT NULL DEFAULT 0,
  create_time  DATETIME(3)   NOT NULL,
  update_time  DATETIME(3)   NOT NULL,
  PRIMARY KEY (data_id),
  KEY idx_campaign (detect_id, data_id),
  KEY idx_campaign_school (detect_id, school_id, data_id),
  KEY idx_campaign_project (detect_id, project_id, data_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- The campaign revision is striped over 1024 slots (a hash of data_id) so that
-- concurrent changes to one campaign do not all queue on one row lock; the
-- revision of a campaign is SUM(revision) over its slots and moves with every
-- committed change.
CREATE TABLE IF NOT EXISTS campaign_revision (
  detect_id    BIGINT      NOT NULL,
  slot         SMALLINT    NOT NULL,
  revision     BIGINT      NOT NULL,
  update_time  DATETIME(3) NOT NULL,
  PRIMARY KEY (detect_id, slot)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- Idempotency keys: the outcome of every committed command, so a retried
-- command returns it instead of creating another version. request_hash guards
-- against a key reused for a different command.
CREATE TABLE IF NOT EXISTS request_log (
  request_id   VARCHAR(64)     NOT NULL,
  method       VARCHAR(32)     NOT NULL,
  request_hash CHAR(64)        NOT NULL,
  data_id      BIGINT          NOT NULL,
  version      BIGINT          NOT NULL,
  response     VARBINARY(4096) NOT NULL,
  create_time  DATETIME(3)     NOT NULL,
  PRIMARY KEY (request_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- The outbox. due_time is when a row is next eligible for a claim: its
-- commit time while NEW, the next retry while FAILED, the lease expiry while
-- PROCESSING. One index (status, due_time) serves every claim; completion
-- addresses claimed rows by primary key and claim token. Few indexes keep
-- the write path's insert cheap.
CREATE TABLE IF NOT EXISTS outbox_event (
  id           BIGINT          NOT NULL AUTO_INCREMENT,
  event_id     VARCHAR(96)     NOT NULL,
  data_id      BIGINT          NOT NULL,
  version      BIGINT          NOT NULL,
  payload      VARBINARY(4096) NOT NULL,
  status       VARCHAR(16)     NOT NULL DEFAULT 'NEW',
  claim_token  CHAR(32)        NULL,
  attempts     INT             NOT NULL DEFAULT 0,
  due_time     DATETIME(3)     NOT NULL,
  last_error   VARCHAR(1024)   NULL,
  create_time  DATETIME(3)     NOT NULL,
  sent_time    DATETIME(3)     NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uk_event_id (event_id),
  KEY idx_status_due (status, due_time)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
