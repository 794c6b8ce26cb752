-- A repair's progress counters, spread over a few slots per repair: each
-- batch of items the executor records adds its counts to one slot (chosen at
-- random) in the transaction that records the items, so the executor's
-- workers never queue on one counter row. A repair's items done (failed) are
-- repair.items_done (items_failed) plus the sum of its slots, and its
-- update_time the latest of repair.update_time and its slots'.
CREATE TABLE IF NOT EXISTS repair_progress (
  repair_id     CHAR(32)  NOT NULL,
  slot          SMALLINT  NOT NULL,
  items_done    BIGINT    NOT NULL DEFAULT 0,
  items_failed  BIGINT    NOT NULL DEFAULT 0,
  update_time   DATETIME(3) NOT NULL,
  PRIMARY KEY (repair_id, slot)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
