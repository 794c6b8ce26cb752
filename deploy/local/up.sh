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

log "applying schema migrations"
(cd "$RS_ROOT" && go run ./services/migrate) || die "schema migrations failed"
log "infrastructure is up (state in $RS_STATE)"
