#!/usr/bin/env bash
# Prints the state of every local server; exits non-zero if any is down.
set -uo pipefail
# shellcheck source=deploy/local/lib.sh
. "$(dirname "$0")/lib.sh"
here=$(dirname "$0")
rc=0
# The MySQL-family engines up.sh starts (the selected one and RS_MYSQL_ENGINES) must answer;
# the other engine is shown only when it runs.
for e in mysql mariadb; do
  case " $RS_MYSQL_ENGINE $RS_MYSQL_ENGINES " in
    *" $e "*) "$here/$e.sh" status || rc=1 ;;
    *) out=$("$here/$e.sh" status 2>&1) && printf '%s\n' "$out" >&2 ;;
  esac
done
for s in clickhouse pulsar; do
  "$here/$s.sh" status || rc=1
done
"$here/servers.sh" status || rc=1
exit $rc
