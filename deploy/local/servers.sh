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
#
# RS_TLS=1 (env.sh) runs them fully encrypted: every server serves mutual TLS
# with the local CA's certificates (.local/tls, deploy/local/tls.sh), the
# gateway dials the backends over mutual TLS and serves its JSON API over
# HTTPS, and every server reaches MySQL (tls=resultsync), ClickHouse (its
# secure native port) and Pulsar (pulsar+ssl://) over TLS. start restarts
# servers running in the other mode.
set -euo pipefail
# shellcheck source=deploy/local/lib.sh
. "$(dirname "$0")/lib.sh"

BIN=$RS_ROOT/bin
# name:gRPC port:HTTP (metrics) port, from RS_SERVERS_PORT_BASE (env.sh; 7100: 7101:7201 ...).
B=$RS_SERVERS_PORT_BASE
SERVERS="results:$((B + 1)):$((B + 101)) relay:$((B + 2)):$((B + 102)) consumer:$((B + 3)):$((B + 103))
  reconcile:$((B + 4)):$((B + 104)) repair:$((B + 5)):$((B + 105)) gateway:$((B + 6)):$((B + 106))"

# SERVING exactly (grpcurl prints "status": "SERVING"; NOT_SERVING must not match).
# With RS_TLS=1 over mutual TLS (lib.sh GRPCURL_TLS): a server of the other mode does not answer.
healthy() { "$BIN/grpcurl" "${GRPCURL_TLS[@]}" -max-time 2 "127.0.0.1:$1" grpc.health.v1.Health/Check 2>/dev/null | grep -q '"SERVING"'; }

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
    # Its listeners (RS_<NAME>_GRPC_ADDR, RS_<NAME>_HTTP_ADDR; the gateway's backends and JSON
    # API come from env.sh's RS_*_ADDR).
    local ent n gport hport up
    for ent in $SERVERS; do
      IFS=: read -r n gport hport <<<"$ent"
      [ "$n" = "$name" ] || continue
      up=$(printf '%s' "$name" | tr '[:lower:]' '[:upper:]')
      export "RS_${up}_GRPC_ADDR=127.0.0.1:$gport" "RS_${up}_HTTP_ADDR=127.0.0.1:$hport"
    done
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
  if [ "$RS_TLS" = 1 ]; then
    ensure_tls
    log "RS_TLS=1: every server serves mutual TLS from $RS_TLS_DIR and reaches MySQL, ClickHouse and Pulsar over TLS"
  fi
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
      printf '%-10s SERVING  grpc 127.0.0.1:%s%s  metrics %s://127.0.0.1:%s/metrics\n' "$name" "$gport" \
        "$([ "$RS_TLS" = 1 ] && echo ' (mutual TLS)')" "$HTTP_SCHEME" "$hport"
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
