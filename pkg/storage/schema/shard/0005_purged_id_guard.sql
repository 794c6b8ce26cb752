-- A data_id is recorded once, for good. While a record (or its tombstone)
-- is in fitness_result its primary key refuses a second INSERT; after its
-- tombstone is purged, only deletion_log (0004) still knows the id. Recorded
-- again, the id would start over at version 1, below the purged tombstone's
-- version that ClickHouse keeps: the new record would rank below the old
-- deletion and never show in any report. This trigger refuses that INSERT
-- with the duplicate-key error (1062) a live record gives, so every writer —
-- resultstore maps it to ALREADY_EXISTS, "data_id ... is already taken" —
-- fails the same way and nothing of the transaction is written.
--
-- One statement on one line ending with ';' (the migration runner splits at a
-- ';' ending a line; the inner one does not). Accepted by MySQL 8.4/9.7 and
-- MariaDB 10.11.
DROP TRIGGER IF EXISTS fitness_result_purged_id;

CREATE TRIGGER fitness_result_purged_id BEFORE INSERT ON fitness_result FOR EACH ROW IF EXISTS (SELECT 1 FROM deletion_log WHERE data_id = NEW.data_id) THEN SIGNAL SQLSTATE '23000' SET MYSQL_ERRNO = 1062, MESSAGE_TEXT = 'data_id was recorded before and deleted (deletion_log): a data_id is never recorded twice'; END IF;
