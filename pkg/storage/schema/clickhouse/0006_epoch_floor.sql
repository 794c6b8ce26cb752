-- The epoch floor: transformation epochs retired by a verified controlled
-- rebuild (pkg/rebuild). One row is appended per rebuild that retired the
-- epochs below its own; the floor is max(epoch) (0 while the table is empty).
-- A consumer whose --epoch is below the floor refuses to write
-- (pkg/consumer), and a rebuild refuses an epoch below it. A row written
-- later at a retired epoch still lands in fitness_result_versions, but ranks
-- below the rebuilt row of the same source version (row_version = version << 16
-- | epoch). The scope columns and rebuilt_rows say which rebuild raised it.
CREATE TABLE IF NOT EXISTS projection_epoch_floor (
  epoch             UInt16,
  recorded_unix_ms  Int64,
  detect_id         Int64,
  project_id        Int64,
  school_id         Int64,
  rebuilt_rows      Int64
) ENGINE = MergeTree
ORDER BY (epoch, recorded_unix_ms);
