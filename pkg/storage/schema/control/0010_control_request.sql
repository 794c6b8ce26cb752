-- Idempotency keys of the control calls (owned by pkg/platform/idempotency):
-- StartReconciliationRun, ApproveRepair, CancelRepair, VerifyRepair,
-- ApproveRebuild, CancelRebuild and ReplayParkedEvents. One row per
-- (method, request_id): a hash of the request (with its caller), the state
-- (IN_PROGRESS while a call answers it under a lease, DONE with the
-- marshalled response), the reservation's token (kept when a call takes
-- over an expired reservation) and its current owner. The key compares
-- byte for byte (utf8mb4_bin): 'a-1' and 'A-1' are two keys. The retention
-- worker removes rows by create_time.
CREATE TABLE IF NOT EXISTS control_request (
  method        VARCHAR(64)   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  request_id    VARCHAR(64)   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  request_hash  CHAR(64)      NOT NULL,
  caller        VARCHAR(128)  NOT NULL,
  state         VARCHAR(16)   NOT NULL,
  token         CHAR(32)      NOT NULL,
  owner         CHAR(32)      NOT NULL,
  attempts      INT           NOT NULL DEFAULT 1,
  lease_expire  DATETIME(3)   NOT NULL,
  response      MEDIUMBLOB    NULL,
  create_time   DATETIME(3)   NOT NULL,
  update_time   DATETIME(3)   NOT NULL,
  PRIMARY KEY (method, request_id),
  KEY idx_create_time (create_time)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
