#!/usr/bin/env bash
# Installs (idempotently) and starts the local infrastructure: the MySQL-family
# servers of RS_MYSQL_ENGINES (Oracle MySQL and/or MariaDB; two shards + control
# each), ClickHouse and Pulsar standalone, then applies the schema migrations to
# the selected engine (RS_MYSQL_ENGINE) and to every other engine started. Safe to
# run again: running servers are kept, applied migrations skipped.
set -euo pipefail
# shellcheck source=deploy/local/lib.sh
. "$(dirname "$0")/lib.sh"
here=$(dirname "$0")

# The MySQL-family servers to start: the selected engine (the stack's DSNs point at it)
# first, then the other engines of RS_MYSQL_ENGINES.
engines=$RS_MYSQL_ENGINE
for e in $RS_MYSQL_ENGINES; do
  case " $engines " in *" $e "*) ;; *) engines+=" $e" ;; esac
done
if [ "$RS_MYSQL_PORT" != "$(rs_mysql_engine_port "$RS_MYSQL_ENGINE")" ]; then
  log "note: RS_MYSQL_PORT=$RS_MYSQL_PORT is not the port of the local $RS_MYSQL_ENGINE ($(rs_mysql_engine_port "$RS_MYSQL_ENGINE")): the stack connects to $RS_MYSQL_HOST:$RS_MYSQL_PORT"
fi

# The installs run side by side (mostly downloads: the MySQL 9.7 root, the
# Pulsar jars, Debian packages, which need_apt installs one at a time); each
# says what it does, and up.sh stops here, naming them, if any failed.
pids=()
for s in $engines clickhouse pulsar; do
  "$here/$s.sh" install &
  pids+=("$!:$s")
done
failed=""
for p in "${pids[@]}"; do
  wait "${p%%:*}" || failed+=" ${p#*:}"
done
[ -z "$failed" ] || die "installing$failed failed (logs kept in $RS_STATE/logs)"
# Pulsar is the slowest to start; the databases come up meanwhile.
for s in $engines clickhouse pulsar; do
  "$here/$s.sh" start || die "$s failed to start (logs kept in $RS_STATE/logs)"
done

# The events topic: partitioned, keyed by data_id (a record's versions meet in
# one partition; consumers share partitions through a Failover subscription).
# With RS_TLS=1 through the admin API's TLS port (lib.sh CURL_TLS).
topic=$RS_PULSAR_ADMIN_URL/admin/v2/persistent/public/default/fitness-result-changed
# Prints the partition count; 0 when the topic is plain or does not exist.
partitions() {
  local n
  n=$(curl -s "${CURL_TLS[@]}" "$topic/partitions" | sed -n 's/.*"partitions":\([0-9]*\).*/\1/p')
  echo "${n:-0}"
}
if [ "$(partitions)" = 0 ]; then
  # A plain topic of that name (created implicitly by a producer) would shadow
  # the partitioned one: remove it, it holds only already-delivered local events.
  curl -s "${CURL_TLS[@]}" -o /dev/null -X DELETE "$topic?force=true" || true
  code=$(curl -s "${CURL_TLS[@]}" -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Type: application/json' -d "${RS_TOPIC_PARTITIONS:-4}" "$topic/partitions")
  case "$code" in
    204|409) ;;
    *) die "creating the partitioned topic failed (HTTP $code at $topic/partitions)" ;;
  esac
fi
[ "$(partitions)" -gt 0 ] || die "topic fitness-result-changed is not partitioned (see $RS_STATE/logs/pulsar.log)"
log "topic fitness-result-changed has $(partitions) partitions"

log "applying schema migrations ($RS_MYSQL_ENGINE on $RS_MYSQL_HOST:$RS_MYSQL_PORT, ClickHouse) and the consumer's subscription$([ "$RS_TLS" = 1 ] && echo ', over TLS')"
# The migrator also sets the topic's retention and creates the consumer's
# subscription before anything is published (a broker keeps nothing for a
# subscription that does not exist yet).
(cd "$RS_ROOT" && CGO_ENABLED=0 go run ./services/migrate --pulsar-admin-url "$RS_PULSAR_ADMIN_URL") || die "schema migrations failed on $RS_MYSQL_ENGINE ($RS_MYSQL_HOST:$RS_MYSQL_PORT)"
# The other engines get the same MySQL migrations. The migrator reads its DSNs from RS_SHARDS
# and RS_CONTROL_DSN (not from RS_MYSQL_PORT), so both are set to the engine's port; ClickHouse
# was migrated above (an empty address skips it).
for e in $engines; do
  [ "$e" = "$RS_MYSQL_ENGINE" ] && continue
  port=$(rs_mysql_engine_port "$e")
  log "applying schema migrations to $e on 127.0.0.1:$port"
  (cd "$RS_ROOT" && RS_MYSQL_HOST=127.0.0.1 RS_MYSQL_PORT=$port \
      RS_SHARDS=$(rs_mysql_shard_map 127.0.0.1 "$port") \
      RS_CONTROL_DSN=$(rs_mysql_dsn 127.0.0.1 "$port" "$RS_MYSQL_CONTROL") \
      CGO_ENABLED=0 go run ./services/migrate --skip-clickhouse --skip-pulsar) \
    || die "schema migrations failed on $e (127.0.0.1:$port)"
done
log "infrastructure is up (state in $RS_STATE)"
