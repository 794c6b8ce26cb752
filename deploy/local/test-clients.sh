#!/usr/bin/env bash
# Runs every client package's tests (clients/<lang>/test.sh) and the README's
# examples (test/readme/run.sh, when present) against the six servers started
# by deploy/local/servers.sh on their documented ports, plus one results server
# of its own that serves mutual TLS from the local CA (deploy/local/tls.sh) on
# RS_RESULTS_TLS_ADDR (127.0.0.1:7111): the clients' TLS tests and TLS examples
# call it. A second CA (RS_TLS_OTHER_DIR) gives them a certificate the server
# must refuse and a CA that must not verify the server.
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
mkdir -p "$RS_STATE/clients" "$RS_STATE/logs"

# The TLS results server: the local CA's server certificate, client
# certificates required (--tls-client-auth) and verified by the CA; no HTTP
# listener. Always this script's own (stopped at the end), whatever runs.
: "${RS_TLS_DIR:=$RS_STATE/tls}"
RS_TLS_OTHER_DIR=$RS_STATE/clients/tls-other
RS_RESULTS_TLS_ADDR=127.0.0.1:${RS_RESULTS_TLS_PORT:-7111}
export RS_TLS_DIR RS_TLS_OTHER_DIR RS_RESULTS_TLS_ADDR
ensure_tls
RS_TLS_DIR=$RS_TLS_OTHER_DIR ensure_tls
tls_pid=$RS_STATE/clients/results-tls.pid
tls_log=$RS_STATE/logs/results-tls.log
mtls_healthy() {
  "$RS_ROOT/bin/grpcurl" -max-time 2 -cacert "$RS_TLS_DIR/ca.pem" -cert "$RS_TLS_DIR/client.pem" \
    -key "$RS_TLS_DIR/client-key.pem" "$RS_RESULTS_TLS_ADDR" grpc.health.v1.Health/Check 2>/dev/null | grep -q '"SERVING"'
}
stop_pid results-tls "$tls_pid"
spawn_bg "$tls_log" "$RS_ROOT/bin/results" --grpc-addr="$RS_RESULTS_TLS_ADDR" --http-addr= \
  --tls-cert-file="$RS_TLS_DIR/server.pem" --tls-key-file="$RS_TLS_DIR/server-key.pem" \
  --tls-ca-file="$RS_TLS_DIR/ca.pem" --tls-client-auth
echo "$SPAWNED_PID" >"$tls_pid"
cleanup() {
  stop_pid results-tls "$tls_pid"
  if [ "$was_running" = 0 ] && [ "${RS_KEEP_SERVERS:-0}" != 1 ]; then "$RS_ROOT/deploy/local/servers.sh" stop; fi
}
trap cleanup EXIT
wait_for results-tls 60 "$tls_log" mtls_healthy || die "the TLS results server did not become healthy"

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
# docs/*.md: its python/ts/java blocks ran with the clients above; a shell
# block there that calls the API would run nowhere, so it fails here.
log "== API calls in docs/ shell blocks"
python3 "$RS_ROOT/clients/examples.py" unrun || failed+=(docs)
if [ "${#failed[@]}" -gt 0 ]; then
  die "failed: ${failed[*]} (server logs: $RS_STATE/logs/)"
fi
log "clients and README examples passed"
