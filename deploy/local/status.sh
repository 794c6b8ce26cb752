#!/usr/bin/env bash
# Prints the state of every local server; exits non-zero if any is down.
set -uo pipefail
# shellcheck source=deploy/local/lib.sh
. "$(dirname "$0")/lib.sh"
here=$(dirname "$0")
rc=0
for s in mariadb clickhouse pulsar; do
  "$here/$s.sh" status || rc=1
done
"$here/servers.sh" status || rc=1
exit $rc
