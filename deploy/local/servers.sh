#!/usr/bin/env bash
# Starts, stops and checks the six resultsync servers built into bin/.
#
#   deploy/local/servers.sh start|stop|status
#   deploy/local/servers.sh restart NAME     (one server, e.g. the consumer at a new epoch)
#
# The consumer runs at the transformation epoch in $RS_STATE/consumer.epoch
# (written by `servers.sh restart consumer` when RS_CONSUMER_EPOCH is set;
# 0 when absent): after a controlled rebuild retired the epochs below E, a
# restart of the platform starts the consumer at E again, not at a retired
# epoch it would refuse to run at.
#
# Each server logs JSON to $RS_STATE/logs/<name>.log; start waits until every
# one answers grpc.health.v1.Health/Check with SERVING, or prints the log tail.
set -euo pipefail
# shellcheck source=deploy/local/lib.sh
. "$(dirname "$0")/lib.sh"

BIN=$RS_ROOT/bin
# name:gRPC port:HTTP (metrics) port
SERVERS="results:7101:7201 relay:7102:7202 consumer:7103:7203 reconcile:7104:7204 repair:7105:7205 gateway:7106:7206"

# SERVING exactly (grpcurl prints "status": "SERVING"; NOT_SERVING must not match).
healthy() { "$BIN/grpcurl" -plaintext -max-time 2 "127.0.0.1:$1" grpc.health.v1.Health/Check 2>/dev/null | grep -q '"SERVING"'; }

# spawn NAME: start one server in the background, recording its pid.
spawn() {
  local name=$1
  [ -x "$BIN/$name" ] || die "$BIN/$name is missing (run: make build)"
  stop_pid "$name" "$RS_STATE/$name.pid"
  # A subshell for the working directory and the consumer's epoch; spawn_bg
  # backgrounds only the server itself, so the recorded pid is the server's.
  (
    cd "$RS_ROOT"
    if [ "$name" = consumer ]; then
      RS_CONSUMER_EPOCH=$(cat "$RS_STATE/consumer.epoch" 2>/dev/null || echo 0)
      export RS_CONSUMER_EPOCH
    fi
    spawn_bg "$RS_STATE/logs/$name.log" "$BIN/$name" && echo "$SPAWNED_PID" >"$RS_STATE/$name.pid"
  )
}

# port_of NAME: the gRPC port of a server.
port_of() {
  local ent name gport
  for ent in $SERVERS; do
    IFS=: read -r name gport _ <<<"$ent"
    [ "$name" = "$1" ] && { echo "$gport"; return 0; }
  done
  die "unknown server $1 (one of: results relay consumer reconcile repair gateway)"
}

start() {
  mkdir -p "$RS_STATE/logs"
  local ent name gport
  for ent in $SERVERS; do
    IFS=: read -r name gport _ <<<"$ent"
    if pid_alive "$RS_STATE/$name.pid" && healthy "$gport"; then
      log "$name already running"
      continue
    fi
    spawn "$name"
  done
  for ent in $SERVERS; do
    IFS=: read -r name gport _ <<<"$ent"
    wait_for "$name" 60 "$RS_STATE/logs/$name.log" healthy "$gport" || die "$name did not become healthy"
  done
}

# restart NAME: stop one server (SIGTERM, drained) and start it again; for
# the consumer, RS_CONSUMER_EPOCH (when set) becomes its recorded epoch.
restart() {
  local name=$1 gport
  gport=$(port_of "$name")
  mkdir -p "$RS_STATE/logs"
  if [ "$name" = consumer ] && [ -n "${RS_CONSUMER_EPOCH:-}" ]; then
    echo "$RS_CONSUMER_EPOCH" >"$RS_STATE/consumer.epoch"
  fi
  spawn "$name"
  wait_for "$name" 60 "$RS_STATE/logs/$name.log" healthy "$gport" || die "$name did not become healthy"
  log "$name restarted"
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
  restart) [ -n "${2:-}" ] || die "usage: $0 restart NAME"; restart "$2" ;;
  *) echo "usage: $0 start|stop|status|restart NAME" >&2; exit 2 ;;
esac
