#!/usr/bin/env bash
# Stops the platform servers and the local infrastructure. With --purge, also
# removes the project-local state directory (data and logs).
set -euo pipefail
# shellcheck source=deploy/local/lib.sh
. "$(dirname "$0")/lib.sh"
here=$(dirname "$0")

"$here/servers.sh" stop || true
# Both MySQL-family engines, whichever RS_MYSQL_ENGINES says: one started under another setting
# must not be left running (stopping one that is not running is a no-op).
for s in pulsar clickhouse mysql mariadb; do
  "$here/$s.sh" stop || log "stopping $s failed"
done
if [ "${1:-}" = "--purge" ]; then
  rm -rf "$RS_STATE"
  log "removed $RS_STATE"
fi
