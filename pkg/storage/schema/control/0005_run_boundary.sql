-- A reconciliation run's boundary and its records in flight: how many
-- records were not reported because their newest version was still unsent
-- or unapplied (pkg/reconcile Flight), and per shard (JSON) the shard's
-- position at scan start, the projection's applied position, whether the
-- projection was behind, and the records in flight. New states QUEUED
-- (waiting for a run slot) and BOUNDARY_NOT_REACHED fit the state column.
ALTER TABLE reconcile_run
  ADD COLUMN in_flight_count BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN shard_report VARCHAR(4096) NOT NULL DEFAULT '';
