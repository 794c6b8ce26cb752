-- Discrepancies by record: a verified repair resolves, besides its own
-- discrepancies, every earlier unresolved discrepancy of the same records
-- (found by other runs before the clean comparison), read by data_id; the
-- repair server's signal counts, every few seconds, the records with an
-- unresolved discrepancy per class across every run and campaign, read from
-- the covering index alone (pkg/repair Store.ResolveEarlier and
-- UnresolvedRecords).
CREATE INDEX idx_record ON discrepancy (data_id);

CREATE INDEX idx_unresolved_record ON discrepancy (resolved, class, data_id);
