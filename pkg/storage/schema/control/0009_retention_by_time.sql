-- The control tables by age, for the retention worker (pkg/platform/retention,
-- run by the repair server): each purge reads a range of one of these indexes
-- in small batches, never the whole table. Audit entries by creation time;
-- ended reconciliation runs and repairs by end time (NULL while they run, so
-- an active run or repair is never in the range).
CREATE INDEX idx_create_time ON audit_log (create_time);

CREATE INDEX idx_end_time ON reconcile_run (end_time);

CREATE INDEX idx_end_time ON repair (end_time);
