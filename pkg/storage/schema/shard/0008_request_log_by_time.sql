-- Idempotency keys by age: the retention worker (pkg/platform/retention, run
-- by the repair server) removes request_log rows older than
-- --request-log-retention in small batches, by a range on this index
-- (DELETE ... WHERE create_time < ? ORDER BY create_time LIMIT n), never by a
-- scan of the table. The index grows at its right edge only (create_time is
-- the writer's commit time stamp), so the write path's insert stays cheap.
ALTER TABLE request_log ADD KEY idx_create_time (create_time);
