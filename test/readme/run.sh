#!/usr/bin/env bash
# Runs every example command of README.md against the running servers
# (deploy/local/servers.sh: gRPC on 127.0.0.1:7101-7106, JSON on :7100), so
# that an example that drifts from the API fails `make test` (make
# test-clients runs this script through deploy/local/test-clients.sh).
#
#   test/readme/run.sh [README]     # with deploy/local/env.sh sourced
#
# Every line of a ```sh block that starts with bin/grpcurl, bin/rsctl, curl or
# clickhouse-client (with its \ continuations, without its trailing
# comment) is run in README order, exactly as written except:
#   - ids are made unique per run so that reruns work: the campaign 10001
#     and record 900002 become fresh ids, every request_id gets a suffix;
#   - the placeholders are filled from the output of earlier examples:
#     <run id> (StartReconciliationRun), <floor+1> (PlanRepair's epoch floor
#     + 1), <removal id> and <id> (CreateRepair's REMOVE repair);
#   - curl gets --fail-with-body, so an HTTP error status fails the example;
#     so does an error in the output (grpcurl's ERROR:, a JSON stream's
#     {"error": ...} line) whatever the exit status.
# Before the first StartReconciliationRun the fresh campaign's projection is
# damaged (its record deleted, a stray record added) so that the repair
# examples have a REPLAY and a REMOVE to act on; nothing outside that
# campaign is touched.
# A line that starts with RS_CONSUMER_EPOCH= (restarting the consumer at a new
# epoch) is not run: it would restart the shared consumer under other tests.
# make and go commands (what make test runs itself) are left out.
# Any other command line in those blocks fails the run (unknown example).
# RS_README_VERBOSE=1 prints every example's output.
# A failing example prints its README line number, the command and its output.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
readme=${1:-$root/README.md}
cd "$root"
for tool in bin/grpcurl bin/rsctl curl clickhouse-client python3; do
  command -v "$tool" >/dev/null || { echo "test/readme: $tool not found (make tools builds bin/grpcurl, make build bin/rsctl)" >&2; exit 1; }
done
: "${RS_CH_PORT:=19000}" "${RS_CH_DATABASE:=resultsync}"
CH="clickhouse-client --port $RS_CH_PORT -d $RS_CH_DATABASE"

# Fresh ids: campaign and record ids above anything the demo and the tests use.
tag=$(date +%s)$(printf '%03d' $((RANDOM % 1000)))
campaign=$((7000000000000 + tag % 1000000000000))
record=$((campaign * 10))
stray=$((record + 1))

field() { python3 -c 'import json,sys
v=json.loads(sys.argv[1])
for k in sys.argv[2].split("."):
    v=v[int(k)] if isinstance(v,list) else v.get(k,"")
print(v)' "$1" "$2"; }

# examples README: "LINE<TAB>COMMAND" for every command line of the sh blocks.
examples() { python3 - "$1" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
fence, i = None, 0
while i < len(lines):
    l = lines[i]
    if l.startswith("```"):
        fence = None if fence is not None else l[3:].strip()
        i += 1
        continue
    if fence != "sh" or not l.strip() or l.lstrip().startswith("#"):
        i += 1
        continue
    start, cmd = i + 1, l
    while cmd.endswith("\\") and i + 1 < len(lines):
        i += 1
        cmd = cmd[:-1].rstrip() + " " + lines[i].strip()
    cmd = re.sub(r"\s+#\s.*$", "", cmd)  # the trailing comment
    print("%d\t%s" % (start, cmd))
    i += 1
PY
}

ran=0 failed=0 skipped=0
declare -A ph=()
damaged=0

# damage: the fresh campaign's record leaves the projection (a lost event:
# REPLAY) and a record no shard has enters it (a stray writer: REMOVE).
damage() {
  local deadline=$(( $(date +%s) + 60 ))
  until [ "$($CH -q "SELECT count() FROM fitness_result_versions FINAL WHERE data_id = $record AND version = 2")" = 1 ]; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "record $record v2 did not reach ClickHouse in 60s" >&2; return 1; }
    sleep 0.3
  done
  $CH -q "ALTER TABLE fitness_result_versions DELETE WHERE detect_id = $campaign AND data_id = $record"
  $CH -q "INSERT INTO fitness_result_versions (detect_id, data_id, user_id, project_id, school_id, grade, version, epoch, result, unit,
      is_deleted, event_id, shard_id, source_commit_unix_ms, ingest_unix_ms)
    SELECT $campaign, $stray, 9, 3, 8, 5, 1, 0, CAST('4.44' AS Decimal(12, 3)), 'm', 0, 'stray-writer-$stray', 'shard-0',
      toInt64(toUnixTimestamp(now())) * 1000, toInt64(toUnixTimestamp(now())) * 1000"
  until [ "$($CH -q "SELECT count() FROM system.mutations WHERE database = currentDatabase() AND is_done = 0")" = 0 ]; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "the ClickHouse mutation did not finish in 60s" >&2; return 1; }
    sleep 0.3
  done
}

# after CMD OUTPUT: fill the placeholders the output provides.
after() {
  case "$1" in
    *ReconcileService/StartReconciliationRun*) ph["<run id>"]=$(field "$2" run.runId) ;;
    *RepairService/PlanRepair*) ph["<floor+1>"]=$(( $(field "$2" epochFloor | sed 's/^$/0/') + 1 )) ;;
    *RepairService/CreateRepair*)
      ph["<removal id>"]=$(python3 -c 'import json,sys
for r in json.loads(sys.argv[1])["repairs"]:
    if r["action"] == "REPAIR_ACTION_REMOVE": print(r["repairId"])' "$2")
      ph["<id>"]=${ph["<removal id>"]} ;;
  esac
}

while IFS=$'\t' read -r n cmd; do
  case "$cmd" in
    bin/grpcurl\ * | bin/rsctl\ * | curl\ * | clickhouse-client\ *) ;;
    RS_CONSUMER_EPOCH=*)
      echo "README:$n not run (restarts the shared consumer): $cmd"
      skipped=$((skipped + 1)); continue ;;
    make\ * | go\ * | RS_*=*\ go\ *) continue ;; # make targets and go commands: what make test itself runs
    *) echo "README:$n FAILED: not a known example command: $cmd" >&2; failed=$((failed + 1)); continue ;;
  esac
  c=${cmd//10001/$campaign}
  c=${c//900002/$record}
  c=$(sed -E "s/(\"request_id\":\"[^\"]*)\"/\1-$tag\"/g" <<<"$c")
  c=${c/#curl /curl --fail-with-body }
  c=${c/#clickhouse-client --port 19000 -d resultsync /$CH }
  for k in "${!ph[@]}"; do c=${c//"$k"/${ph[$k]}}; done
  if [[ "$c" == *"<"*">"* && "$c" != *clickhouse-client* ]]; then
    echo "README:$n FAILED: a placeholder no earlier example fills: $cmd" >&2
    failed=$((failed + 1)); continue
  fi
  if [[ "$c" == *ReconcileService/StartReconciliationRun* && $damaged = 0 ]]; then
    if ! damage; then echo "README:$n FAILED: damaging campaign $campaign's projection" >&2; failed=$((failed + 1)); fi
    damaged=1
  fi
  ran=$((ran + 1))
  rc=0
  out=$(bash -c "$c" 2>&1) || rc=$?
  if [ "$rc" = 0 ] && grep -qE '^ERROR:|^\{"error":' <<<"$out"; then rc="0 with an error in the output"; fi
  if [ "$rc" = 0 ]; then
    echo "README:$n ok: ${cmd:0:110}"
    if [ "${RS_README_VERBOSE:-0}" = 1 ]; then sed 's/^/  | /' <<<"$out"; fi
    after "$c" "$out"
  else
    echo "README:$n FAILED (exit $rc): $cmd" >&2
    echo "  ran: $c" >&2
    sed 's/^/  | /' <<<"$out" | head -20 >&2
    failed=$((failed + 1))
  fi
done < <(examples "$readme")

echo "README examples: $ran run, $failed failed, $skipped not run (campaign $campaign)"
[ "$failed" = 0 ] && [ "$ran" -gt 0 ]
