#!/usr/bin/env bash
# Installs (idempotently) and starts the local infrastructure: MariaDB (two
# shards + control), ClickHouse and Pulsar standalone, then applies the schema
# migrations. Safe to run again: running servers are kept, applied migrations skipped.
set -euo pipefail
# shellcheck source=deploy/local/lib.sh
. "$(dirname "$0")/lib.sh"
here=$(dirname "$0")

for s in mariadb clickhouse pulsar; do
  "$here/$s.sh" install
done
# Pulsar is the slowest to start; the databases come up meanwhile.
for s in mariadb clickhouse pulsar; do
  "$here/$s.sh" start || die "$s failed to start (logs kept in $RS_STATE/logs)"
done

# The events topic: partitioned, keyed by data_id (a record's versions meet in
# one partition; consumers share partitions through a Failover subscription).
topic=http://127.0.0.1:$RS_PULSAR_WEB_PORT/admin/v2/persistent/public/default/fitness-result-changed
# Prints the partition count; 0 when the topic is plain or does not exist.
partitions() {
  local n
  n=$(curl -s "$topic/partitions" | sed -n 's/.*"partitions":\([0-9]*\).*/\1/p')
  echo "${n:-0}"
}
if [ "$(partitions)" = 0 ]; then
  # A plain topic of that name (created implicitly by a producer) would shadow
  # the partitioned one: remove it, it holds only already-delivered local events.
  curl -s -o /dev/null -X DELETE "$topic?force=true" || true
  code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Type: application/json' -d "${RS_TOPIC_PARTITIONS:-4}" "$topic/partitions")
  case "$code" in
    204|409) ;;
    *) die "creating the partitioned topic failed (HTTP $code at $topic/partitions)" ;;
  esac
fi
[ "$(partitions)" -gt 0 ] || die "topic fitness-result-changed is not partitioned (see $RS_STATE/logs/pulsar.log)"
log "topic fitness-result-changed has $(partitions) partitions"

log "applying schema migrations"
(cd "$RS_ROOT" && go run ./services/migrate) || die "schema migrations failed"
log "infrastructure is up (state in $RS_STATE)"
