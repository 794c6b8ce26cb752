#!/usr/bin/env bash
# The repair half of the canonical story, on the running platform (make run
# calls it after demo.sh's write, relay, consumer and reconcile steps):
#
#   1. four more results of campaign 10001 reach the projection;
#   2. the projection is damaged as real defects would damage it: one record
#      missing, one deletion not applied, one record no shard has, one wrong
#      value at the right version (a defective mapping);
#   3. a CONTENT reconciliation finds the four;
#   4. the repair is planned (a dry run), created by an operator, the
#      removal approved by an admin, the fixed consumer deployed at a new
#      transformation epoch and the rebuild approved;
#   5. every repair ends VERIFIED (a comparison of exactly its keys is
#      clean) and a second reconciliation is clean.
#
# Every step is a grpcurl or rsctl command (printed before it runs), so an
# operator can repeat it by hand. Running it again damages and repairs again, whatever
# earlier runs left: active repairs and rebuilds of campaign 10001 are
# cancelled first, the damage is waited for until the projection shows it,
# the request ids carry the run id and the epoch is one above both the
# plan's floor and the consumer's current epoch (docs/design.md, "Controlled
# rebuild under live writes": the consumer moves to the new epoch after
# CreateRepair and before the approval; rows it writes there meanwhile do
# not block the approval).
set -euo pipefail
# shellcheck source=deploy/local/lib.sh
. "$(dirname "$0")/lib.sh"
G="$RS_ROOT/bin/grpcurl ${GRPCURL_TLS[*]}" # plaintext, or with RS_TLS=1 the local CA and client certificate
OP=(-H "authorization: Bearer dev-operator")
ADMIN=(-H "authorization: Bearer dev-admin")
VIEW=(-H "authorization: Bearer dev-viewer")
# rsctl, the operator CLI (make build): addresses from env.sh, with RS_TLS=1 the local CA and client certificate.
RSCTL=("$RS_ROOT/bin/rsctl")
if [ "${RS_TLS:-0}" = 1 ]; then
  RSCTL+=(--tls-ca-file "$RS_TLS_DIR/ca.pem" --tls-cert-file "$RS_TLS_DIR/client.pem" --tls-key-file "$RS_TLS_DIR/client-key.pem")
fi
CH="clickhouse-client $(ch_client_tls_args | tr '\n' ' ')-d $RS_CH_DATABASE"

# show CMD...: print a command, then run it.
show() { printf '+ %s\n' "$*" >&2; "$@"; }
# field JSON PATH: one value out of grpcurl's JSON output (python3: always on the machine).
field() { python3 -c 'import json,sys
v=json.loads(sys.argv[1])
for k in sys.argv[2].split("."):
    v=v[int(k)] if isinstance(v,list) else v.get(k,"")
print(v)' "$1" "$2"; }
# until_true SECONDS WHAT CMD...: poll CMD until it succeeds.
until_true() {
  local secs=$1 what=$2; shift 2
  local deadline=$(( $(date +%s) + secs ))
  until "$@" >/dev/null; do
    [ "$(date +%s)" -lt "$deadline" ] || die "timed out after ${secs}s waiting for $what"
    sleep 0.3
  done
}
ch_count_is() { [ "$($CH -q "$1")" = "$2" ]; }
# sql DATABASE QUERY: through the script of the engine the stack runs on (RS_MYSQL_ENGINE).
sql() { "$RS_ROOT/deploy/local/$RS_MYSQL_ENGINE.sh" sql "$@"; }
# repairs_in STATE: "repair_id detect_id" of the repairs in a state.
repairs_in() {
  $G "${VIEW[@]}" -d "{\"state\":\"$1\",\"page_size\":1000}" $RS_REPAIR_ADDR fitness.v1.RepairService/ListRepairs | python3 -c 'import json,sys
for r in json.load(sys.stdin).get("repairs",[]):
    print(r["repairId"], r.get("scope",{}).get("detectId","0"))'
}
active_rebuilds() {
  local n=0 st
  for st in REPAIR_STATE_AWAITING_APPROVAL REPAIR_STATE_EXECUTING; do
    n=$((n + $($G "${VIEW[@]}" -d "{\"detect_id\":10001,\"state\":\"$st\"}" $RS_REPAIR_ADDR fitness.v1.RepairService/ListRebuilds \
      | python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("rebuilds",[])))')))
  done
  echo "$n"
}
no_active_rebuild() { [ "$(active_rebuilds)" = 0 ]; }

echo
echo "== repair 0/5: what earlier runs left in campaign 10001 (active repairs and rebuilds) is cancelled"
for st in REPAIR_STATE_AWAITING_APPROVAL REPAIR_STATE_EXECUTING REPAIR_STATE_AWAITING_VERIFICATION; do
  repairs_in "$st" | while read -r id detect; do
    [ "$detect" = 10001 ] || continue
    show $G "${ADMIN[@]}" -d "{\"repair_id\":\"$id\",\"reason\":\"left by an earlier demo run\"}" \
      $RS_REPAIR_ADDR fitness.v1.RepairService/CancelRepair >/dev/null || true
  done
done
for st in REPAIR_STATE_AWAITING_APPROVAL REPAIR_STATE_EXECUTING; do
  $G "${VIEW[@]}" -d "{\"detect_id\":10001,\"state\":\"$st\"}" $RS_REPAIR_ADDR fitness.v1.RepairService/ListRebuilds | python3 -c 'import json,sys
for r in json.load(sys.stdin).get("rebuilds",[]):
    print(r["rebuildId"])' | while read -r id; do
    show $G "${ADMIN[@]}" -d "{\"rebuild_id\":\"$id\",\"reason\":\"left by an earlier demo run\"}" \
      $RS_REPAIR_ADDR fitness.v1.RepairService/CancelRebuild >/dev/null || true
  done
done
# A rebuild already switching readers cannot be cancelled: it ends by itself.
until_true 300 "the earlier rebuilds of campaign 10001 to end" no_active_rebuild

echo
echo "== repair 1/5: four more results of campaign 10001 (a deletion among them)"
record() {
  $G "${OP[@]}" -d "{\"request_id\":\"demo-record-$1\",\"data_id\":$1,\"detect_id\":10001,\"user_id\":$2,\"project_id\":3,\"school_id\":7,\"grade\":5,\"result\":\"$3\",\"unit\":\"m\"}" \
    $RS_RESULTS_ADDR fitness.v1.ResultService/RecordResult >/dev/null
}
record 900002 5 1.95
record 900003 6 2.02
record 900004 8 2.05
$G "${OP[@]}" -d '{"request_id":"demo-delete-900003","school_id":7,"data_id":900003,"expected_version":1,"reason":"entered twice"}' \
  $RS_RESULTS_ADDR fitness.v1.ResultService/DeleteResult >/dev/null
# The four are recorded with fixed request ids, so a run after an earlier
# one writes nothing new: the records are already in the shards, their
# events SENT. When an earlier run was stopped after damaging the projection
# (step 2) and before repairing it (step 4), ClickHouse still shows the
# damage and no new event will undo it: once every event of the four is
# SENT and the projection still lacks them after a few seconds, their
# events are sent again from the outbox (the same versions and event ids:
# a replay, harmless to every read).
new_results() {
  ch_count_is "SELECT count() FROM fitness_result_versions FINAL WHERE data_id IN (900002, 900003, 900004) AND (data_id != 900003 OR is_deleted = 1)" 3
}
demo_outbox="SELECT status FROM rs_shard_0.outbox_event WHERE data_id IN (900002, 900003, 900004)
  UNION ALL SELECT status FROM rs_shard_1.outbox_event WHERE data_id IN (900002, 900003, 900004)"
all_sent() {
  local n
  n=$(sql rs_control "SELECT COUNT(*) AS n FROM ($demo_outbox) o WHERE status != 'SENT'" | grep -o '[0-9]\+' | tail -1)
  [ "${n:-1}" = 0 ]
}
started=$(date +%s)
resent=0
until new_results; do
  now=$(date +%s)
  [ "$now" -lt $((started + 60)) ] || die "timed out after 60s waiting for the new results in ClickHouse"
  if [ "$resent" = 0 ] && [ "$now" -ge $((started + 5)) ] && all_sent; then
    echo "   an earlier run was stopped between damaging the projection and repairing it: the four records' events are sent again from the outbox"
    for shard in rs_shard_0 rs_shard_1; do
      show sql "$shard" "UPDATE outbox_event SET status = 'NEW', due_time = UTC_TIMESTAMP(3), claim_token = NULL, attempts = 0, sent_time = NULL
        WHERE data_id IN (900002, 900003, 900004)" >/dev/null
    done
    resent=1
  fi
  sleep 0.3
done
$CH -q "SELECT data_id, version, toString(result) AS result, is_deleted, epoch FROM fitness_result_versions FINAL
        WHERE detect_id = 10001 ORDER BY data_id FORMAT PrettyCompactNoEscapes"

echo
echo "== repair 2/5: damage the projection (what lost events, a missed deletion, a stray writer and a defective mapping leave)"
# The deletion not applied: 900003 back at its live v1, its v2 tombstone
# gone. The v1 row is written after the mutations are done, from values read
# before them: a copy written beside the tombstone would depend on merges (a
# ReplacingMergeTree merge keeps only the tombstone, the higher version) and
# on reads beside a running mutation (on a loaded machine, the record once
# vanished instead of coming back at v1).
row=$($CH -q "SELECT detect_id, user_id, project_id, school_id, grade, epoch, toString(result), unit, shard_id, source_commit_unix_ms, ingest_unix_ms
  FROM fitness_result_versions FINAL WHERE data_id = 900003 FORMAT TSV")
read -r d3 u3 p3 s3 g3 e3 r3 unit3 sh3 c3 i3 <<<"$row"
[ -n "${i3:-}" ] || die "record 900003 is not in the projection: $row"
show $CH -q "ALTER TABLE fitness_result_versions DELETE WHERE data_id IN (900002, 900003)"
# ALTER TABLE ... DELETE is a mutation that ClickHouse applies in the
# background: wait until it is done before writing the rest.
until_true 60 "the mutations" ch_count_is \
  "SELECT count() FROM system.mutations WHERE database = currentDatabase() AND table = 'fitness_result_versions' AND is_done = 0" 0
cols="detect_id, data_id, user_id, project_id, school_id, grade, version, epoch, result, unit, is_deleted, event_id, shard_id, source_commit_unix_ms, ingest_unix_ms"
show $CH -q "INSERT INTO fitness_result_versions ($cols)
  SELECT $d3, 900003, $u3, $p3, $s3, $g3, 1, $e3, CAST('$r3' AS Decimal(12, 3)), '$unit3', 0, 'fitness-result-900003-v1', '$sh3', $c3, $i3"
show $CH -q "INSERT INTO fitness_result_versions ($cols)
  SELECT 10001, 900099, 9, 3, 7, 5, 1, 0, CAST('4.44' AS Decimal(12, 3)), 'm', 0, 'stray-writer-900099', 'shard-0', toInt64(toUnixTimestamp(now())) * 1000, toInt64(toUnixTimestamp(now())) * 1000"
show $CH -q "INSERT INTO fitness_result_versions ($cols)
  SELECT detect_id, data_id, user_id, project_id, school_id, grade, version, epoch, CAST('9.99' AS Decimal(12, 3)), unit, is_deleted, event_id, shard_id,
         source_commit_unix_ms, toInt64(toUnixTimestamp(now())) * 1000
  FROM fitness_result_versions FINAL WHERE data_id = 900004"
# Then until the projection shows every damage (a reconciliation started
# earlier would not see it).
damaged() {
  ch_count_is "SELECT count() FROM fitness_result_versions FINAL WHERE data_id = 900002" 0 &&
    ch_count_is "SELECT count() FROM fitness_result_versions FINAL WHERE data_id = 900003 AND is_deleted = 0 AND version = 1" 1 &&
    ch_count_is "SELECT count() FROM fitness_result_versions FINAL WHERE data_id = 900099" 1 &&
    ch_count_is "SELECT count() FROM fitness_result_versions FINAL WHERE data_id = 900004 AND result = CAST('9.99' AS Decimal(12, 3))" 1
}
until_true 60 "the damage visible in the projection" damaged

echo
echo "== repair 3/5: reconcile campaign 10001 (CONTENT depth)"
out=$(show $G "${OP[@]}" -d '{"scope":{"detect_id":10001},"depth":"RECONCILE_DEPTH_CONTENT"}' $RS_RECONCILE_ADDR fitness.v1.ReconcileService/StartReconciliationRun)
run=$(field "$out" run.runId)
run_done() {
  local s
  s=$(field "$($G "${VIEW[@]}" -d "{\"run_id\":\"$run\"}" $RS_RECONCILE_ADDR fitness.v1.ReconcileService/GetReconciliationRun)" run.state)
  [ "$s" = RUN_STATE_SUCCEEDED ] || [ "$s" = RUN_STATE_FAILED ]
}
until_true 60 "reconciliation run $run" run_done
out=$(show $G "${VIEW[@]}" -d "{\"run_id\":\"$run\"}" $RS_RECONCILE_ADDR fitness.v1.ReconcileService/ListDiscrepancies)
python3 -c 'import json,sys
for d in json.loads(sys.argv[1]).get("discrepancies",[]):
    print("  %-45s data_id %s" % (d["class"], d["dataId"]))' "$out"
found=$(python3 -c 'import json,sys
print(" ".join(sorted("%s:%s" % (d["dataId"], d["class"].replace("DISCREPANCY_CLASS_","")) for d in json.loads(sys.argv[1]).get("discrepancies",[]))))' "$out")
want="900002:MISSING_IN_TARGET 900003:DELETION_NOT_APPLIED 900004:CONTENT_MISMATCH 900099:UNEXPECTED_TARGET_RECORD"
[ "$found" = "$want" ] || die "reconciliation run $run found [$found], want [$want]"

echo
echo "== repair 4/5: plan (dry run: nothing changes), create, approve, redeploy the consumer, approve the rebuild"
plan=$(show $G "${OP[@]}" -d "{\"run_id\":\"$run\"}" $RS_REPAIR_ADDR fitness.v1.RepairService/PlanRepair)
python3 -c 'import json,sys
p=json.loads(sys.argv[1])
for a in p.get("actions",[]):
    print("  %-24s %s item(s)%s" % (a["action"], a["items"], "  (needs an admin approval)" if a.get("requiresApproval") else ""))
for i in p.get("items",[]):
    print("    data_id %s  %s  source v%s  target v%s" % (i["dataId"], i["class"], i.get("sourceVersion","0"), i.get("targetVersion","0")))
print("  epoch floor %s" % p.get("epochFloor", 0))' "$plan"
# The rebuild runs at a new transformation epoch: above the plan's floor
# (every epoch stored in the campaign or retired) and the consumer's epoch.
floor=$(field "$plan" epochFloor | sed 's/^$/0/')
live=$(cat "$RS_STATE/consumer.epoch" 2>/dev/null || echo 0)
epoch=$(( (floor > live ? floor : live) + 1 ))
out=$(show $G "${OP[@]}" -d "{\"run_id\":\"$run\",\"reason\":\"demo: damaged projection\",\"request_id\":\"demo-repair-$run\",\"rebuild_epoch\":$epoch}" \
  $RS_REPAIR_ADDR fitness.v1.RepairService/CreateRepair)
repair_of() {
  python3 -c 'import json,sys
for r in json.loads(sys.argv[1])["repairs"]:
    if r["action"] == sys.argv[2]: print(r["repairId"])' "$out" "$1"
}
replay=$(repair_of REPAIR_ACTION_REPLAY)
tombstone=$(repair_of REPAIR_ACTION_TOMBSTONE)
removal=$(repair_of REPAIR_ACTION_REMOVE)
rebuild=$(repair_of REPAIR_ACTION_REBUILD)
for a in replay tombstone removal rebuild; do
  [ -n "${!a}" ] || die "CreateRepair did not make a $a repair (one repair per action expected): $out"
done
echo "  replay $replay, tombstone $tombstone (run at once); removal $removal, rebuild $rebuild (await approval)"
state_of() { field "$($G "${VIEW[@]}" -d "{\"repair_id\":\"$1\"}" $RS_REPAIR_ADDR fitness.v1.RepairService/GetRepair)" repair.state; }
verified() {
  local s; s=$(state_of "$1")
  case "$s" in
    REPAIR_STATE_VERIFIED) return 0 ;;
    REPAIR_STATE_FAILED | REPAIR_STATE_CANCELLED) die "repair $1 ended $s: $($G "${VIEW[@]}" -d "{\"repair_id\":\"$1\"}" $RS_REPAIR_ADDR fitness.v1.RepairService/GetRepair)" ;;
  esac
  return 1
}
echo "  the operator who requested it cannot approve it (PERMISSION_DENIED):"
show $G "${OP[@]}" -d "{\"repair_id\":\"$removal\",\"reason\":\"mine\"}" $RS_REPAIR_ADDR fitness.v1.RepairService/ApproveRepair 2>&1 | sed 's/^/    /' || true
echo "  the origins of what the removal takes out:"
show $G "${VIEW[@]}" -d "{\"repair_id\":\"$removal\"}" $RS_REPAIR_ADDR fitness.v1.RepairService/ListRepairItems \
  | python3 -c 'import json,sys
for i in json.load(sys.stdin).get("items",[]):
    for o in i.get("origins",[]):
        print("    data_id %s v%s epoch %s event %s shard %s ingested %s" % (i["dataId"], o.get("version",0), o.get("epoch",0), o.get("eventId",""), o.get("shardId",""), o.get("ingestTime","")))'
show $G "${ADMIN[@]}" -d "{\"repair_id\":\"$removal\",\"reason\":\"origin is a stray writer\"}" $RS_REPAIR_ADDR fitness.v1.RepairService/ApproveRepair >/dev/null
until_true 120 "the removal verified" verified "$removal"
# Removals first: a rebuild only adds rows, so a stray record left in its
# scope would fail its verification (and roll it back).
echo "  the fixed mapping is deployed: the consumer restarts at epoch $epoch (it writes the campaign there before the approval)"
(export RS_CONSUMER_EPOCH=$epoch && show "$RS_ROOT/deploy/local/servers.sh" restart consumer)
show $G "${ADMIN[@]}" -d "{\"repair_id\":\"$rebuild\",\"reason\":\"mapping fixed in epoch $epoch\"}" $RS_REPAIR_ADDR fitness.v1.RepairService/ApproveRepair >/dev/null
echo "  watching the rebuild (rsctl repair watch: WatchRepair's progress on stderr, until it ends; exit 7 unless VERIFIED):"
show "${RSCTL[@]}" --token dev-viewer repair watch "$rebuild" 2>&1 | sed 's/^/    /' | tail -8 || true
for r in "$replay" "$tombstone" "$removal" "$rebuild"; do
  [ -n "$r" ] || die "CreateRepair did not make one repair per action: $out"
  until_true 180 "repair $r verified" verified "$r"
done

echo
echo "== repair 5/5: every repair VERIFIED; the replay kept the source's version and event id; reconcile again"
show $G "${VIEW[@]}" -d "{\"run_id\":\"$run\"}" $RS_REPAIR_ADDR fitness.v1.RepairService/ListRepairs \
  | python3 -c 'import json,sys
for r in json.load(sys.stdin).get("repairs",[]):
    print("  %-24s %-24s verification %-28s by %s, approved by %s" % (r["action"], r["state"], r.get("verification",""), r.get("createdBy",""), r.get("approvedBy","-")))'
show $G "${VIEW[@]}" -d "{\"repair_id\":\"$replay\"}" $RS_REPAIR_ADDR fitness.v1.RepairService/ListRepairItems \
  | python3 -c 'import json,sys
for i in json.load(sys.stdin).get("items",[]):
    print("  replayed data_id %s at source v%s as %s: %s" % (i["dataId"], i.get("appliedVersion",0), i.get("eventId",""), i.get("outcome","")))'
# --fail-on-discrepancies: exit 8 when the run finds any, 7 when it fails.
rc=0
show "${RSCTL[@]}" --token dev-operator reconcile start --detect-id 10001 --depth content --wait --fail-on-discrepancies || rc=$?
[ "$rc" = 0 ] || die "the follow-up reconciliation did not end clean (rsctl exit $rc)"
$CH -q "SELECT data_id, version, toString(result) AS result, is_deleted, epoch FROM fitness_result_versions FINAL
        WHERE detect_id = 10001 ORDER BY data_id FORMAT PrettyCompactNoEscapes"
