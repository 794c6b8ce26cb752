#!/usr/bin/env bash
# Runs every client package's tests (clients/<lang>/test.sh) and the README's
# examples (test/readme/run.sh, when present) against the six servers started
# by deploy/local/servers.sh on their documented ports.
#
#   deploy/local/test-clients.sh python typescript java
#
# The servers are started if they are not running and stopped at the end
# unless they were already running (or RS_KEEP_SERVERS=1). Each runner's own
# summary line is printed; the first failure fails the whole (after the rest ran).
set -euo pipefail
# shellcheck source=deploy/local/lib.sh
. "$(dirname "$0")/lib.sh"

# The servers' addresses, as the clients' tests read them.
export RS_RESULTS_ADDR=127.0.0.1:7101 RS_RELAY_ADDR=127.0.0.1:7102 RS_CONSUMER_ADDR=127.0.0.1:7103 \
  RS_RECONCILE_ADDR=127.0.0.1:7104 RS_REPAIR_ADDR=127.0.0.1:7105 RS_GATEWAY_ADDR=127.0.0.1:7106 \
  RS_GATEWAY_HTTP=http://127.0.0.1:7100

was_running=0
if "$RS_ROOT/deploy/local/servers.sh" status >/dev/null 2>&1; then was_running=1; fi
"$RS_ROOT/deploy/local/servers.sh" start
if [ "$was_running" = 0 ] && [ "${RS_KEEP_SERVERS:-0}" != 1 ]; then
  trap '"$RS_ROOT/deploy/local/servers.sh" stop' EXIT
fi

failed=()
for lang in "$@"; do
  t=$RS_ROOT/clients/$lang/test.sh
  if [ ! -x "$t" ]; then log "clients/$lang: no test.sh yet"; continue; fi
  log "== $lang client tests"
  "$t" || failed+=("$lang")
done
if [ -x "$RS_ROOT/test/readme/run.sh" ]; then
  log "== README examples"
  "$RS_ROOT/test/readme/run.sh" || failed+=(readme)
fi
if [ "${#failed[@]}" -gt 0 ]; then
  die "failed: ${failed[*]} (server logs: $RS_STATE/logs/)"
fi
log "clients and README examples passed"
