#!/usr/bin/env bash
# Starts, stops and checks the six resultsync servers built into bin/.
#
#   deploy/local/servers.sh start|stop|status
#
# Each server logs JSON to $RS_STATE/logs/<name>.log; start waits until every
# one answers grpc.health.v1.Health/Check with SERVING, or prints the log tail.
set -euo pipefail
# shellcheck source=deploy/local/lib.sh
. "$(dirname "$0")/lib.sh"

BIN=$RS_ROOT/bin
# name:gRPC port:HTTP (metrics) port
SERVERS="results:7101:7201 relay:7102:7202 consumer:7103:7203 reconcile:7104:7204 repair:7105:7205 gateway:7106:7206"

healthy() { "$BIN/grpcurl" -plaintext -max-time 2 "127.0.0.1:$1" grpc.health.v1.Health/Check 2>/dev/null | grep -q SERVING; }

start() {
  mkdir -p "$RS_STATE/logs"
  local ent name gport
  for ent in $SERVERS; do
    IFS=: read -r name gport _ <<<"$ent"
    [ -x "$BIN/$name" ] || die "$BIN/$name is missing (run: make build)"
    if pid_alive "$RS_STATE/$name.pid" && healthy "$gport"; then
      log "$name already running"
      continue
    fi
    stop_pid "$name" "$RS_STATE/$name.pid"
    # A subshell for the working directory; spawn_bg backgrounds only the
    # server itself, so the recorded pid is the server's.
    (cd "$RS_ROOT" && spawn_bg "$RS_STATE/logs/$name.log" "$BIN/$name" && echo "$SPAWNED_PID" >"$RS_STATE/$name.pid")
  done
  for ent in $SERVERS; do
    IFS=: read -r name gport _ <<<"$ent"
    wait_for "$name" 60 "$RS_STATE/logs/$name.log" healthy "$gport" || die "$name did not become healthy"
  done
}

stop() {
  local ent name
  # SIGTERM all at once (each drains in parallel), then wait for each.
  for ent in $SERVERS; do
    IFS=: read -r name _ _ <<<"$ent"
    pid_alive "$RS_STATE/$name.pid" && kill "$(cat "$RS_STATE/$name.pid")" 2>/dev/null || true
  done
  for ent in $SERVERS; do
    IFS=: read -r name _ _ <<<"$ent"
    stop_pid "$name" "$RS_STATE/$name.pid"
  done
}

status() {
  local ent name gport hport rc=0
  for ent in $SERVERS; do
    IFS=: read -r name gport hport <<<"$ent"
    if healthy "$gport"; then
      printf '%-10s SERVING  grpc 127.0.0.1:%s  metrics http://127.0.0.1:%s/metrics\n' "$name" "$gport" "$hport"
    else
      printf '%-10s DOWN     grpc 127.0.0.1:%s  (log %s)\n' "$name" "$gport" "$RS_STATE/logs/$name.log"
      rc=1
    fi
  done
  return $rc
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
