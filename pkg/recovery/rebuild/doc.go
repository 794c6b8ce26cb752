// Package rebuild is the controlled rebuild of a scope of the ClickHouse
// projection (a campaign, optionally one project and/or school) from the
// authoritative shards, while live writes continue. It is the repair of
// "same version, wrong content": a defective transformation wrote wrong rows
// at the right source versions, so no replay through the normal path can
// outrank them; a rebuild at a higher transformation epoch can.
//
// # Controlled rebuild
//
// The engine version of fitness_result_versions is row_version = version <<
// 16 | epoch. For one source version, a row of a higher transformation epoch
// outranks a row of a lower one, and no epoch outranks a higher source
// version. A rebuild at epoch E therefore adds, for every record of the
// scope, a row of its current source version at epoch E: it ranks above the
// defective row of the same version (epoch < E) and below any newer version
// the live path delivers. Nothing is deleted on the way; readers
// (fitness_result_current and the report views over it) switch in one step.
//
// Procedure (the one flow, which works while the scope keeps being
// written; docs/design.md "Controlled rebuild under live writes"): fix the
// transformation; plan the rebuild at an epoch E above every epoch the
// scope holds (repair.Manager.EpochFloor fixes E at planning); deploy the
// consumer with --epoch E, so the live path moves to E BEFORE the switch and
// writes new versions correctly; approve and run the rebuild at epoch E.
// Rows the live path writes at E meanwhile are the fixed mapping's: for one
// source version they equal the rebuilt row, and a newer version outranks
// it as it must. The rebuild refuses an epoch below the epoch floor (a
// retired one) and epoch 0 (it outranks nothing); it accepts E equal to the
// floor, since the fixed consumer may already run at E, and the procedure
// may be repeated at the same E.
//
//  1. Staging. A table with the structure, engine and sort key of
//     fitness_result_versions (CREATE TABLE staging AS
//     fitness_result_versions), private to this rebuild.
//  2. Watermark. Per shard, max(update_time) of the scope, read before the
//     scan.
//  3. Scan. Every record of the scope, tombstones included (purged
//     tombstones from deletion_log too), read per shard in data_id order in
//     batches of Options.BatchSize, mapped by the same code the live consumer
//     runs (resultstore.Event, consumer.Validate, consumer.ToRow) at epoch E,
//     and inserted into staging batch by batch, paced to
//     Options.RowsPerSecond; progress reports rows done of the scope's total.
//     Every rebuilt row carries the rebuild's start time as its
//     ingest_unix_ms: (scope, epoch E, that ingest time) names exactly the
//     rows this rebuild adds, for Origins and for a rollback.
//  4. Catch-up. Each pass re-reads the records of the scope whose update_time
//     is at or above the shard's watermark minus Options.CatchUpMargin (the
//     margin covers transactions that took their time stamp before the
//     watermark but committed after it, and writers' clock skew; re-reading
//     a record is harmless: the same version is the same row), writes them
//     to staging and moves the watermark to the newest update_time seen. It
//     repeats until a pass finds nothing newer than the previous watermark,
//     or Options.MaxCatchUpPasses is reached (the normal case under
//     continuous writes: the remainder is folded in by step 5, and every
//     change is also delivered by the live path).
//  5. Verify staging. pkg/reconciliation/reconcile at CONTENT depth, the shards against
//     reconcile.ClickHouseTarget{Table: staging}: per-bucket counts,
//     version fingerprints and content digests, drilled into record by
//     record where they differ. A record that differs because it changed at
//     the source after staging read it is re-read and re-checked (up to
//     Options.FoldInRounds); a record that still differs is a failed
//     verification: nothing was switched, readers never saw the build, and
//     staging is kept (named in the error) for investigation.
//  6. Switch. Staging is attached to the projection in one statement:
//     ALTER TABLE fitness_result_versions ATTACH PARTITION tuple() FROM
//     staging. Both tables are unpartitioned; ClickHouse clones staging's
//     parts and commits all of them in one parts transaction under the
//     table's parts lock, and every query reads the parts set it found when
//     it started, so a reader sees either none or all of the rebuilt rows
//     (StorageMergeTree::replacePartitionFrom, the same on 18.16 and 26.x;
//     both engines run this statement in the tests). On a ClickHouse cluster
//     (Options.Cluster) staging is replicated and sharded like the
//     projection and the attach runs on one replica of each shard in turn:
//     atomic per shard and so per record, not across shards
//     (docs/cluster.md). Just before, the scope's
//     current rows are snapshotted (INSERT ... SELECT ... FINAL into a
//     second private table), for a rollback.
//  7. Verify after the switch. The same comparison of the live current state
//     of the scope against the shards. Candidates are re-checked after
//     Options.Grace, up to Options.VerifyRounds times, so that live changes
//     the consumer has not delivered yet are not called failures. A record
//     still differing at an equal version, an unexpected or target-ahead
//     record, or a record whose live version is below the one staging held
//     (the switch did not take) fails the verification. A record whose live
//     version is below the source but not below staging's is the live path's
//     lag after the staging read: it is left to the live path (logged), and
//     reconciliation runs confirm it.
//  8. Rollback, on a failed verification after the switch: the snapshot is
//     written back (its rows rank below the rebuilt ones, so readers see no
//     change yet; it restores rows a merge may have folded into rebuilt
//     ones), then the rebuilt rows (scope, epoch E, the rebuild's ingest
//     time) are deleted by a mutation, waited for through system.mutations.
//     Readers are back where they were, plus live changes; the mutation is
//     applied part by part, so during it each record shows either its
//     rebuilt or its previous row. The error names the failing records with
//     their stored versions and epochs (chstore Origins).
//  9. Retire. The epoch floor becomes E (a row in projection_epoch_floor,
//     ClickHouse migration 0005; the floor is max(epoch)). (a) Anything
//     written later at a retired epoch — a delayed event of the old path —
//     ranks below the rebuilt row of the same version by construction of
//     row_version. (b) A consumer configured with an epoch below the floor
//     refuses to write: it checks the floor at start and before each insert
//     (re-read at most every few seconds), inserts and acknowledges nothing,
//     logs both epochs and stops with consumer.ErrEpochRetired (the server
//     exits non-zero). The floor is raised only after the verified switch: a
//     failed rebuild changes nothing for writers either.
//  10. Drop staging and the snapshot.
//
// Limits: a rebuild only adds rows, so an unexpected record (no source) or a
// version ahead of the source fails the verification after the switch and
// is rolled back; remove such records first (chstore Origins and
// RemoveAbove). The old path must be stopped or deployed at E before the
// rebuild: new versions it writes at a lower epoch during the rebuild
// outrank the rebuilt rows and fail the verification (its error shows their
// epoch). Between the floor's raise and an old consumer's next check (at
// most consumer.DefaultEpochCheck) that consumer may still write.
package rebuild
