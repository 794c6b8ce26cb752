-- The applied position of each shard: the newest source commit time of the
-- events the live path has applied, kept by a materialized view at insert
-- time, so that reading it costs one small aggregate per shard whatever the
-- size of the projection (pkg/lagwatch compares it with each shard's
-- outbox to tell the projection's lag from durable state).
--
-- Rows a controlled rebuild attaches (ATTACH PARTITION fires no view) and
-- replays of old versions (their commit times are old) do not move it; it
-- only moves forward (max).
CREATE TABLE IF NOT EXISTS projection_applied (
  shard_id       String,
  max_commit_ms  AggregateFunction(max, Int64)
) ENGINE = AggregatingMergeTree
ORDER BY shard_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS projection_applied_mv TO projection_applied AS
  SELECT shard_id, maxState(source_commit_unix_ms) AS max_commit_ms FROM fitness_result_versions GROUP BY shard_id;

-- What the projection held before the view existed.
INSERT INTO projection_applied
  SELECT shard_id, maxState(source_commit_unix_ms) FROM fitness_result_versions GROUP BY shard_id;
