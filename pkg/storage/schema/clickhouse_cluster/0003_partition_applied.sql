-- The applied position per (source shard, topic partition) on a cluster
-- (single-server migration 0009): a small unsharded table with a replica on
-- every node, like dead_letters; the consumer inserts on the node it is
-- connected to and replication brings the rows to the others. Unlike the
-- single server's 0009 it records no start of tracking (every statement here
-- is ON CLUSTER DDL): a partition without a position of a shard counts as
-- applied up to nothing, so every SENT event routed to it is pending until
-- the consumer records a position there (exact on a new cluster).
CREATE TABLE IF NOT EXISTS ${database}.projection_partition_applied ON CLUSTER ${cluster} (
  shard_id          String,
  topic_partition   Int32,
  partitions        Int32,
  max_commit_ms     Int64,
  recorded_unix_ms  Int64
) ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/all/${database}/projection_partition_applied', '{shard}-{replica}', max_commit_ms)
ORDER BY (shard_id, topic_partition);

