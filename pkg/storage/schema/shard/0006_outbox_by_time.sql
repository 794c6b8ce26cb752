-- Outbox rows by commit time: pkg/lagwatch finds, per shard, the oldest event
-- committed after the projection's applied position (and how many there
-- are, capped) by a range on this index. The index grows at its right edge
-- only (create_time is the writer's commit time stamp), so inserts stay cheap.
ALTER TABLE outbox_event ADD KEY idx_create_time (create_time);
