-- repair_item.idx_discrepancy served no query (items are read by repair and
-- seq, by outcome, and by active record), while every CreateRepair paid for
-- a random insert into it per item: a 100,000-item repair stored in 3.3 s
-- instead of 4.2 s without it (BenchmarkCreateRepairs, MySQL 9.7).
ALTER TABLE repair_item DROP INDEX idx_discrepancy;
