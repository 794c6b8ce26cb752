#!/usr/bin/env bash
# Local Apache Pulsar standalone broker, assembled from Maven Central jars.
#
#   deploy/local/pulsar.sh install   resolve the jar set into $RS_CACHE/pulsar-$RS_PULSAR_VERSION/lib
#   deploy/local/pulsar.sh start     start (or keep) the broker on 127.0.0.1 and wait until it serves
#   deploy/local/pulsar.sh stop      stop it (SIGTERM, then SIGKILL)
#   deploy/local/pulsar.sh status    exit 0 only when it runs and is healthy
#
# Layout: jars in $RS_CACHE (kept across clones), config/data in $RS_STATE/pulsar,
# log in $RS_STATE/logs/pulsar.log, pid in $RS_STATE/pulsar.pid.
# Ports: broker $RS_PULSAR_PORT, admin/HTTP $RS_PULSAR_WEB_PORT, embedded bookie
# $RS_PULSAR_BOOKIE_PORT; over TLS with the local CA's server certificate
# (deploy/local/tls.sh, made when missing) broker $RS_PULSAR_TLS_PORT (pulsar+ssl://)
# and admin $RS_PULSAR_WEB_TLS_PORT (https://). Metadata lives in RocksDB (no
# ZooKeeper is started). `start` restarts a running broker that serves no TLS
# (started before it was configured; RS_ENGINE_TLS_RESTART=0: keep it).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=deploy/local/lib.sh
. "$HERE/lib.sh"

RS_PULSAR_BOOKIE_PORT=${RS_PULSAR_BOOKIE_PORT:-13181}
# Neither is listened on (no ZooKeeper, no stream storage), but both are pinned
# away from Pulsar's defaults 2181/4181.
RS_PULSAR_ZK_PORT=${RS_PULSAR_ZK_PORT:-12181}
RS_PULSAR_STREAM_PORT=${RS_PULSAR_STREAM_PORT:-14181}
RS_PULSAR_START_TIMEOUT=${RS_PULSAR_START_TIMEOUT:-180}
RS_PULSAR_MEM=${RS_PULSAR_MEM:--Xms512m -Xmx1g -XX:MaxDirectMemorySize=1g}

P_SRC=$HERE/pulsar
P_HOME=$RS_CACHE/pulsar-$RS_PULSAR_VERSION
P_LIB=$P_HOME/lib
P_MARKER=$P_HOME/.complete
P_DIR=$RS_STATE/pulsar
P_DATA=$P_DIR/data
P_CONF=$P_DIR/standalone.conf
P_LOG=$RS_STATE/logs/pulsar.log
P_PID=$RS_STATE/pulsar.pid
P_WEB=http://127.0.0.1:$RS_PULSAR_WEB_PORT
P_URL=pulsar://127.0.0.1:$RS_PULSAR_PORT

# ---------------------------------------------------------------- helpers

# pulsar_java: print the java binary to use (Java 17 preferred; 17+ accepted).
pulsar_java() {
  local j="" arch
  arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
  if [ -n "${RS_PULSAR_JAVA:-}" ]; then
    j=$RS_PULSAR_JAVA
  elif [ -x "/usr/lib/jvm/java-17-openjdk-$arch/bin/java" ]; then
    j=/usr/lib/jvm/java-17-openjdk-$arch/bin/java
  elif [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
    j=$JAVA_HOME/bin/java
  else
    j=$(command -v java || true)
  fi
  [ -n "$j" ] || return 1
  local major
  major=$("$j" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = \([0-9]*\).*/\1/p')
  [ -n "$major" ] && [ "$major" -ge 17 ] || return 1
  printf '%s\n' "$j"
}

need_tools() {
  local pkgs=()
  command -v curl >/dev/null 2>&1 || pkgs+=(curl)
  command -v flock >/dev/null 2>&1 || pkgs+=(util-linux)
  pulsar_java >/dev/null 2>&1 || pkgs+=(openjdk-17-jre-headless)
  if [ "${1:-}" = install ]; then
    command -v mvn >/dev/null 2>&1 || pkgs+=(maven)
  fi
  [ ${#pkgs[@]} -eq 0 ] || need_apt "${pkgs[@]}"
  pulsar_java >/dev/null || die "no Java 17+ found (set RS_PULSAR_JAVA to a java binary)"
}

# install key: the pom (and the version) that produced the jar set.
install_key() { { echo "$RS_PULSAR_VERSION"; cat "$P_SRC/pom.xml"; } | sha256sum | cut -d' ' -f1; }

installed() { [ -f "$P_MARKER" ] && [ "$(cat "$P_MARKER")" = "$(install_key)" ] && [ -d "$P_LIB" ]; }

http_ok() { curl -sf -m "${2:-10}" -o /dev/null "$P_WEB$1"; }

# tls_ok: the broker and its admin API serve TLS with the local CA's certificate.
tls_ok() {
  tls_serving 127.0.0.1 "$RS_PULSAR_TLS_PORT" \
    && curl -sf -m 10 --cacert "$RS_TLS_DIR/ca.pem" -o /dev/null "https://127.0.0.1:$RS_PULSAR_WEB_TLS_PORT/admin/v2/clusters"
}

# healthy: the admin API answers and lists public/default.
healthy() {
  curl -sf -m 10 "$P_WEB/admin/v2/namespaces/public" 2>/dev/null | grep -q '"public/default"'
}

# produce_ok: the broker's own health check. It creates a producer and a reader
# on a heartbeat topic, writes a message to the bookie and reads it back.
produce_ok() { [ "$(curl -sf -m 60 "$P_WEB/admin/v2/brokers/health" 2>/dev/null)" = ok ]; }

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# is_standalone PID: PID is a live (not zombie) Pulsar standalone JVM.
is_standalone() {
  local pid=$1 st
  [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] || return 1
  st=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -c1) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q PulsarStandaloneStarter
}

# running: the pid file names a live standalone JVM (a stale file, a zombie or
# a recycled pid do not count).
running() { [ -f "$P_PID" ] && is_standalone "$(cat "$P_PID" 2>/dev/null)"; }

# stop_one PID: SIGTERM (graceful broker and bookie shutdown), then SIGKILL.
stop_one() {
  local pid=$1 _
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 120); do
    is_standalone "$pid" || { log "pulsar (pid $pid) stopped"; return 0; }
    sleep 0.5
  done
  log "pulsar (pid $pid) did not stop within 60s of SIGTERM; killing it"
  kill -9 "$pid" 2>/dev/null || true
  for _ in $(seq 1 20); do is_standalone "$pid" || return 0; sleep 0.5; done
  die "could not kill pulsar (pid $pid)"
}

# Pids of standalone brokers started with this state dir's config.
own_pids() {
  local p
  for p in /proc/[0-9]*; do
    [ -r "$p/cmdline" ] || continue
    if tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- "PulsarStandaloneStarter --config $P_CONF "; then
      echo "${p#/proc/}"
    fi
  done
}

lock() {
  mkdir -p "$RS_STATE"
  exec 9>"$RS_STATE/pulsar.lock"
  flock -w 900 9 || die "another pulsar.sh holds $RS_STATE/pulsar.lock"
}

# ---------------------------------------------------------------- install

cmd_install() {
  need_tools install
  mkdir -p "$RS_CACHE"
  exec 8>"$RS_CACHE/pulsar-$RS_PULSAR_VERSION.lock"
  flock -w 1800 8 || die "another install holds $RS_CACHE/pulsar-$RS_PULSAR_VERSION.lock"
  if installed; then
    log "pulsar $RS_PULSAR_VERSION jars already in $P_LIB"
    exec 8>&-
    return 0
  fi
  log "resolving Pulsar $RS_PULSAR_VERSION jars from Maven Central into $P_LIB (first time: a few minutes, ~250 MB)"
  mkdir -p "$P_HOME" "$RS_STATE/logs"
  local work=$P_HOME/resolve tmp=$P_HOME/lib.tmp mlog=$RS_STATE/logs/pulsar-install.log try ok=0
  rm -rf "$work" "$tmp"
  mkdir -p "$work"
  cp "$P_SRC/pom.xml" "$work/pom.xml"
  : >"$mlog"
  for try in 1 2 3; do
    if (cd "$work" && mvn -B -ntp -s "$P_SRC/settings.xml" -f "$work/pom.xml" \
          -Dpulsar.version="$RS_PULSAR_VERSION" \
          dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp") >>"$mlog" 2>&1; then
      ok=1; break
    fi
    log "maven attempt $try failed (log: $mlog)"
    grep -q 'Could not find artifact' "$mlog" && break   # a missing artifact will not appear on retry
    sleep 5
  done
  if [ "$ok" != 1 ]; then
    grep -E '^\[ERROR\]' "$mlog" | head -n 20 >&2 || true
    die "could not resolve the Pulsar $RS_PULSAR_VERSION jar set (full log: $mlog). Some releases are not complete in the registry (4.0.8 lacks jetcd-core-shaded and pulsar-opentelemetry); try RS_PULSAR_VERSION=4.0.7"
  fi
  [ -f "$tmp/pulsar-broker-$RS_PULSAR_VERSION.jar" ] || die "maven finished but pulsar-broker-$RS_PULSAR_VERSION.jar is missing in $tmp"
  rm -rf "$P_LIB" "$work"
  mv "$tmp" "$P_LIB"
  install_key >"$P_MARKER"
  log "installed $(find "$P_LIB" -name '*.jar' | wc -l) jars ($(du -sh "$P_LIB" | cut -f1)) in $P_LIB"
  exec 8>&-
}

# ---------------------------------------------------------------- start

render_config() {
  mkdir -p "$P_DIR/conf" "$P_DATA/metadata" "$P_DATA/bookkeeper" "$P_DATA/nar" "$RS_STATE/logs"
  # The HS256 key of token authentication (standalone.conf): 32 random bytes,
  # made once; RS_PULSAR_TOKEN_KEY (env.sh) names it for the tests that sign
  # tokens with it.
  if [ ! -s "$RS_PULSAR_TOKEN_KEY" ]; then
    head -c 32 /dev/urandom >"$RS_PULSAR_TOKEN_KEY.tmp"
    chmod 600 "$RS_PULSAR_TOKEN_KEY.tmp"
    mv "$RS_PULSAR_TOKEN_KEY.tmp" "$RS_PULSAR_TOKEN_KEY"
  fi
  sed -e "s|@RS_PULSAR_PORT@|$RS_PULSAR_PORT|g" \
      -e "s|@RS_PULSAR_TLS_PORT@|$RS_PULSAR_TLS_PORT|g" \
      -e "s|@RS_PULSAR_WEB_TLS_PORT@|$RS_PULSAR_WEB_TLS_PORT|g" \
      -e "s|@TLS_DIR@|$RS_TLS_DIR|g" \
      -e "s|@TOKEN_KEY@|$RS_PULSAR_TOKEN_KEY|g" \
      -e "s|@RS_PULSAR_WEB_PORT@|$RS_PULSAR_WEB_PORT|g" \
      -e "s|@DATA_DIR@|$P_DATA|g" \
      "$P_SRC/standalone.conf" >"$P_CONF.tmp"
  mv "$P_CONF.tmp" "$P_CONF"
  cp "$P_SRC/log4j2.xml" "$P_DIR/conf/log4j2.xml"
}

# cds_opt JAVA: a class-data-sharing archive of the broker's classes roughly
# halves the start-up time on 2 cores. The first run records the archive when
# the JVM exits (pulsar.sh stop); later runs map it. The archive is kept with the
# jar set and keyed by the JVM build, so a JDK upgrade just records a new one.
# RS_PULSAR_CDS=0 turns this off.
cds_opt() {
  [ "${RS_PULSAR_CDS:-1}" = 1 ] || return 0
  local java=$1 key jsa
  key=$({ "$java" -version 2>&1; cat "$P_MARKER"; } | sha256sum | cut -c1-16)
  jsa=$P_HOME/cds-$key.jsa
  if [ ! -f "$jsa" ] && [ -f "$jsa.new" ]; then
    # Recorded by the previous run: keep it only if this JVM accepts it.
    if "$java" -Xshare:on -XX:SharedArchiveFile="$jsa.new" -cp "$P_LIB/*" -version >/dev/null 2>&1; then
      mv -f "$jsa.new" "$jsa"
    else
      rm -f "$jsa.new"
    fi
  fi
  if [ -f "$jsa" ]; then
    echo "-XX:SharedArchiveFile=$jsa"
  else
    rm -f "$jsa.new"
    echo "-XX:ArchiveClassesAtExit=$jsa.new"
  fi
}

launch() {
  local java cds mem; java=$(pulsar_java); cds=$(cds_opt "$java")
  read -r -a mem <<<"$RS_PULSAR_MEM"
  # JVM flags as in the distribution's bin/pulsar (Java 17 module opens, BK
  # metadata drivers backed by the Pulsar metadata store, ZK/netty properties).
  local -a opts=(
    -cp "$P_LIB/*"
    "${mem[@]}"
    ${cds:+"$cds"}
    "-Xlog:cds=error,cds+dynamic=error"
    -XX:+UseG1GC -XX:MaxGCPauseMillis=10 -XX:+ParallelRefProcEnabled
    -XX:+PerfDisableSharedMem -XX:+ExitOnOutOfMemoryError
    -Djava.net.preferIPv4Stack=true
    -Djute.maxbuffer=10485760
    -Dio.netty.tryReflectionSetAccessible=true
    --add-opens java.base/java.io=ALL-UNNAMED
    --add-opens java.base/java.util.zip=ALL-UNNAMED
    --add-opens java.base/java.nio=ALL-UNNAMED
    --add-opens java.base/jdk.internal.misc=ALL-UNNAMED
    --add-opens java.base/sun.net=ALL-UNNAMED
    --add-opens java.management/sun.management=ALL-UNNAMED
    --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
    -Dlog4j2.configurationFile="$P_DIR/conf/log4j2.xml"
    -Dlog4j.shutdownHookEnabled=false
    -Dlog4j2.is.webapp=false
    -Dpulsar.log.level="${RS_PULSAR_LOG_LEVEL:-info}"
    "-Dzookeeper.4lw.commands.whitelist=*" -Dzookeeper.snapshot.trust.empty=true
    -Dbookkeeper.metadata.bookie.drivers=org.apache.pulsar.metadata.bookkeeper.PulsarMetadataBookieDriver
    -Dbookkeeper.metadata.client.drivers=org.apache.pulsar.metadata.bookkeeper.PulsarMetadataClientDriver
    -Dpulsar.functions.log.conf="$P_DIR/conf/log4j2.xml"
  )
  local -a args=(
    --config "$P_CONF"
    --no-functions-worker --no-stream-storage
    --advertised-address 127.0.0.1
    --metadata-dir "$P_DATA/metadata"
    --bookkeeper-dir "$P_DATA/bookkeeper"
    --bookkeeper-port "$RS_PULSAR_BOOKIE_PORT"
    --stream-storage-port "$RS_PULSAR_STREAM_PORT"
    --zookeeper-dir "$P_DATA/zookeeper"
    --zookeeper-port "$RS_PULSAR_ZK_PORT"
  )
  # Keep the previous run's log next to the new one.
  [ -f "$P_LOG" ] && mv -f "$P_LOG" "$P_LOG.1"
  {
    echo "=== pulsar.sh start $(date -u +%FT%TZ): $java (Pulsar $RS_PULSAR_VERSION)"
    echo "=== broker $P_URL, admin $P_WEB, bookie 127.0.0.1:$RS_PULSAR_BOOKIE_PORT, TLS $RS_PULSAR_TLS_URL and $RS_PULSAR_ADMIN_TLS_URL"
  } >"$P_LOG"
  # setsid: own session, so Ctrl-C in the calling terminal or make does not reach it.
  # 8>&- 9>&-: the child must not keep the lock files open.
  (
    cd "$P_DIR"
    exec setsid "$java" "${opts[@]}" org.apache.pulsar.PulsarStandaloneStarter "${args[@]}" \
      </dev/null >>"$P_LOG" 2>&1 8>&- 9>&-
  ) &
  local pid=$! _
  echo "$pid" >"$P_PID"
  # Wait for the exec into java, so that `running` recognises the process.
  for _ in $(seq 1 100); do
    is_standalone "$pid" && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  is_standalone "$pid" || { tail_log "$P_LOG"; rm -f "$P_PID"; die "could not launch java (log: $P_LOG)"; }
}

# wait_ready SECS: wait for the admin API with public/default and a working
# produce/consume path, while checking that the process stays alive.
wait_ready() {
  local secs=$1 t0 deadline stage=api
  t0=$(date +%s); deadline=$(( t0 + secs ))
  while :; do
    if ! running; then
      tail_log "$P_LOG"
      rm -f "$P_PID"
      die "pulsar exited during start-up (log: $P_LOG)"
    fi
    case $stage in
      api)
        if http_ok /admin/v2/clusters; then stage=ns; continue; fi ;;
      ns)
        if healthy; then stage=produce; continue
        elif [ $(( $(date +%s) - t0 )) -gt $(( secs / 2 )) ]; then
          # Standalone creates public/default itself right after the web
          # service comes up; create it if that did not happen.
          ensure_namespace || true
        fi ;;
      produce)
        if produce_ok && tls_ok; then
          log "pulsar is ready after $(( $(date +%s) - t0 ))s: $P_URL (admin $P_WEB)"
          return 0
        fi ;;
    esac
    if [ "$(date +%s)" -ge "$deadline" ]; then
      tail_log "$P_LOG"
      log "pulsar did not become ready within ${secs}s (stuck at: $stage); stopping it"
      stop_one "$(cat "$P_PID")" || true
      rm -f "$P_PID"
      die "pulsar did not become ready within ${secs}s (stuck at: $stage; log: $P_LOG)"
    fi
    sleep 0.5
  done
}

ensure_namespace() {
  healthy && return 0
  log "creating tenant public and namespace public/default"
  curl -sf -m 30 -o /dev/null "$P_WEB/admin/v2/tenants/public" ||
    curl -sf -m 30 -X PUT -H 'Content-Type: application/json' \
      -d '{"adminRoles":[],"allowedClusters":["standalone"]}' "$P_WEB/admin/v2/tenants/public" || true
  curl -sf -m 30 -X PUT "$P_WEB/admin/v2/namespaces/public/default" || true
  healthy
}

cmd_start() {
  need_tools
  installed || cmd_install
  ensure_tls
  lock
  if running && healthy && ! tls_ok && [ "${RS_ENGINE_TLS_RESTART:-1}" = 1 ]; then
    log "pulsar (pid $(cat "$P_PID")) serves no TLS on :$RS_PULSAR_TLS_PORT / :$RS_PULSAR_WEB_TLS_PORT (started before it was configured): restarting it"
    stop_one "$(cat "$P_PID")"
    rm -f "$P_PID"
  fi
  if running; then
    local pid; pid=$(cat "$P_PID")
    if healthy && produce_ok; then
      log "pulsar already running (pid $pid) and healthy: $P_URL"
      return 0
    fi
    local grace=$(( RS_PULSAR_START_TIMEOUT < 60 ? RS_PULSAR_START_TIMEOUT : 60 ))
    log "pulsar (pid $pid) runs but is not healthy; waiting up to ${grace}s"
    if (wait_ready "$grace") 2>/dev/null; then
      log "pulsar (pid $pid) is ready: $P_URL"
      return 0
    fi
    if is_standalone "$pid"; then
      log "pulsar (pid $pid) did not become healthy; restarting it"
      stop_one "$pid"
    else
      log "pulsar (pid $pid) exited; starting it again"
    fi
  fi
  rm -f "$P_PID"
  local p
  for p in $(own_pids); do
    log "stopping a leftover pulsar of this state dir that has no pid file (pid $p)"
    stop_one "$p"
  done
  local port
  for port in "$RS_PULSAR_PORT" "$RS_PULSAR_WEB_PORT" "$RS_PULSAR_BOOKIE_PORT" "$RS_PULSAR_TLS_PORT" "$RS_PULSAR_WEB_TLS_PORT"; do
    if port_busy "$port"; then
      die "port 127.0.0.1:$port is taken by another process (not ours; see: ss -ltnp 'sport = :$port'). Stop it or change RS_PULSAR_PORT / RS_PULSAR_WEB_PORT / RS_PULSAR_BOOKIE_PORT / RS_PULSAR_TLS_PORT / RS_PULSAR_WEB_TLS_PORT."
    fi
  done
  render_config
  log "starting pulsar $RS_PULSAR_VERSION standalone (data $P_DATA, log $P_LOG)"
  launch
  wait_ready "$RS_PULSAR_START_TIMEOUT"
}

# ---------------------------------------------------------------- stop / status

cmd_stop() {
  lock
  if running; then stop_one "$(cat "$P_PID")"; fi
  rm -f "$P_PID"
  local p
  for p in $(own_pids); do stop_one "$p"; done
  log "pulsar is not running"
}

cmd_status() {
  if ! running; then
    echo "pulsar: not running"
    return 1
  fi
  local pid; pid=$(cat "$P_PID")
  if healthy && produce_ok; then
    if tls_ok; then
      echo "pulsar: running (pid $pid), healthy: $P_URL admin $P_WEB, TLS $RS_PULSAR_TLS_URL admin $RS_PULSAR_ADMIN_TLS_URL"
    else
      echo "pulsar: running (pid $pid), healthy: $P_URL admin $P_WEB; serves no TLS (started before it was configured; $0 start restarts it)"
    fi
    return 0
  fi
  echo "pulsar: running (pid $pid) but NOT healthy (admin API $P_WEB; log $P_LOG)"
  return 1
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  restart) cmd_stop; cmd_start ;;
  *) echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac
