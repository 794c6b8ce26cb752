-- Control database: audit trail of every mutating administrative call.
-- Reconciliation runs, discrepancies and repairs get their own migrations.

CREATE TABLE IF NOT EXISTS audit_log (
  id           BIGINT        NOT NULL AUTO_INCREMENT,
  audit_id     CHAR(32)      NOT NULL,
  caller       VARCHAR(128)  NOT NULL,
  action       VARCHAR(64)   NOT NULL,
  scope        VARCHAR(512)  NOT NULL,
  reason       VARCHAR(1024) NOT NULL,
  outcome      VARCHAR(1024) NOT NULL DEFAULT '',
  create_time  DATETIME(3)   NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY uk_audit_id (audit_id),
  KEY idx_action_time (action, create_time)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
