-- The applied position per (source shard, topic partition): the newest
-- source commit time the consumer applied of the shard's events that
-- arrived through that partition, written by the consumer after each batch
-- insert and before it acknowledges the batch (chstore.InsertAppliedPositions).
-- partitions is the topic's partition count as the consumer saw it, so a
-- reader can route a data_id to its partition (pulsarbus.DataIDPartition).
-- pkg/lagwatch reads max(max_commit_ms) per key (correct before and after
-- merges); ReplacingMergeTree(max_commit_ms) folds the rows of a key into
-- its newest. The tracking begins with this migration (the row of shard ''
-- below records when): a partition without a position of a shard counts as
-- applied up to the earlier of then and the shard's newest applied commit
-- (0007), the rule before per-partition positions.
CREATE TABLE IF NOT EXISTS projection_partition_applied (
  shard_id          String,
  topic_partition   Int32,
  partitions        Int32,
  max_commit_ms     Int64,
  recorded_unix_ms  Int64
) ENGINE = ReplacingMergeTree(max_commit_ms)
ORDER BY (shard_id, topic_partition);

INSERT INTO projection_partition_applied (shard_id, topic_partition, partitions, max_commit_ms, recorded_unix_ms)
  SELECT '', -1, 0, 0, toInt64(toUnixTimestamp(now())) * 1000;
