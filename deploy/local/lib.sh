# shellcheck shell=bash
# Helpers shared by the deploy/local scripts.

# shellcheck source=deploy/local/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

# How the scripts call the local servers: grpcurl's and curl's transport flags and the
# scheme of the gateway's JSON API and the metrics listeners. With RS_TLS=1 (env.sh) the local
# CA verifies the servers and the client certificate is presented (they require it).
if [ "$RS_TLS" = 1 ]; then
  GRPCURL_TLS=(-cacert "$RS_TLS_DIR/ca.pem" -cert "$RS_TLS_DIR/client.pem" -key "$RS_TLS_DIR/client-key.pem")
  CURL_TLS=(--cacert "$RS_TLS_DIR/ca.pem" --cert "$RS_TLS_DIR/client.pem" --key "$RS_TLS_DIR/client-key.pem")
  # shellcheck disable=SC2034 # used by the scripts that source this file
  HTTP_SCHEME=https
else
  GRPCURL_TLS=(-plaintext)
  CURL_TLS=()
  HTTP_SCHEME=http
fi

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

die() { log "ERROR: $*"; exit 1; }

# tail_log FILE: print the last lines of a server log, for a failed start.
tail_log() {
  local f=$1
  if [ -f "$f" ]; then
    log "last lines of $f:"
    tail -n 60 "$f" >&2
  else
    log "no log at $f"
  fi
}

# wait_for NAME SECONDS LOG CMD...: run CMD until it succeeds, or fail with the log tail.
wait_for() {
  local name=$1 secs=$2 logf=$3; shift 3
  local deadline=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "$name did not become ready within ${secs}s"
      tail_log "$logf"
      return 1
    fi
    sleep 1
  done
  log "$name is ready"
}

# loopback_user NAME [PASSWORD]: a ClickHouse <users> entry (users.xml) for
# NAME with PASSWORD (none when empty), reachable from loopback only, with
# the default profile and quota.
loopback_user() {
  cat <<XML
        <$1>
            <password>${2:-}</password>
            <networks>
                <ip>127.0.0.1</ip>
                <ip>::1</ip>
                <ip>::ffff:127.0.0.1</ip>
            </networks>
            <profile>default</profile>
            <quota>default</quota>
        </$1>
XML
}

# pid_alive FILE: true when FILE holds the pid of a running process.
pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# stop_pid NAME FILE: SIGTERM, wait, then SIGKILL.
stop_pid() {
  local name=$1 f=$2 i
  if ! pid_alive "$f"; then rm -f "$f"; return 0; fi
  local pid; pid=$(cat "$f")
  kill "$pid" 2>/dev/null || true
  for i in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$f"; log "$name stopped"; return 0; }
    sleep 0.5
  done
  log "$name did not stop after SIGTERM; killing"
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$f"
}

# need_apt PKG...: install Debian packages that are missing. One apt at a
# time (up.sh installs the engines side by side): the others wait on a lock.
need_apt() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then die "need root to install ${missing[*]}"; fi
  (
    flock 9
    log "installing Debian packages: ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" \
      || die "apt-get install ${missing[*]} failed"
  ) 9>/var/lock/resultsync-apt.lock || exit 1
}

# port_open HOST PORT: true when something accepts TCP connections on HOST:PORT.
# shellcheck disable=SC2016 # $1/$2 expand in the inner bash
port_open() { timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null; }

# spawn_bg LOG CMD...: start CMD detached (own session, stdin closed, output appended to LOG),
# so it outlives the calling shell and its process group. Sets SPAWNED_PID to its pid.
spawn_bg() {
  local logf=$1; shift
  mkdir -p "$(dirname "$logf")"
  nohup setsid "$@" >>"$logf" 2>&1 </dev/null &
  # shellcheck disable=SC2034 # read by the caller
  SPAWNED_PID=$!
}

# proc_alive PID: true when PID is a running process (a zombie that has exited does not count).
proc_alive() {
  local st
  [ -n "${1:-}" ] || return 1
  st=$(sed -n 's/^.*) \(.\).*$/\1/p' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ]
}

# pidfile_alive FILE: like pid_alive, but a zombie does not count as running.
pidfile_alive() { [ -f "$1" ] && proc_alive "$(cat "$1" 2>/dev/null)"; }

# ensure_tls: the local CA and the servers' certificate in $RS_TLS_DIR, made by
# deploy/local/tls.sh when missing (an existing CA and certificates are kept).
# Every engine serves TLS with them beside its plaintext port.
ensure_tls() {
  if [ -s "$RS_TLS_DIR/ca.pem" ] && [ -s "$RS_TLS_DIR/server.pem" ] && [ -s "$RS_TLS_DIR/server-key.pem" ] \
    && [ -s "$RS_TLS_DIR/client.pem" ] && [ -s "$RS_TLS_DIR/client-key.pem" ]; then
    return 0
  fi
  log "creating the local CA and certificates in $RS_TLS_DIR (deploy/local/tls.sh)"
  # A lock: engines started side by side must not each make their own CA.
  mkdir -p "$RS_STATE"
  (
    flock -w 120 7 || die "another tls.sh holds $RS_STATE/tls.lock"
    RS_TLS_DIR=$RS_TLS_DIR "$(dirname "${BASH_SOURCE[0]}")/tls.sh"
  ) 7>"$RS_STATE/tls.lock" || die "deploy/local/tls.sh failed"
}

# ch_client_tls_args: clickhouse-client's arguments for the secure native port with RS_TLS=1
# (a client configuration in $RS_TLS_DIR verifying the server with the CA, presenting the
# client certificate), or the plaintext port.
ch_client_tls_args() {
  if [ "$RS_TLS" != 1 ]; then
    printf '%s\n' --port "$RS_CH_PORT"
    return 0
  fi
  local cfg=$RS_TLS_DIR/clickhouse-client.xml
  if [ ! -s "$cfg" ]; then
    cat >"$cfg.tmp" <<XML
<?xml version="1.0"?>
<!-- Written by deploy/local/lib.sh: clickhouse-client over TLS with the local CA. -->
<yandex>
    <openSSL>
        <client>
            <caConfig>$RS_TLS_DIR/ca.pem</caConfig>
            <certificateFile>$RS_TLS_DIR/client.pem</certificateFile>
            <privateKeyFile>$RS_TLS_DIR/client-key.pem</privateKeyFile>
            <verificationMode>strict</verificationMode>
            <loadDefaultCAFile>false</loadDefaultCAFile>
            <invalidCertificateHandler><name>RejectCertificateHandler</name></invalidCertificateHandler>
        </client>
    </openSSL>
</yandex>
XML
    mv "$cfg.tmp" "$cfg"
  fi
  printf '%s\n' --config-file "$cfg" --secure --port "$RS_CH_SECURE_PORT"
}

# tls_serving HOST PORT: true when HOST:PORT completes a TLS handshake whose
# certificate the local CA verifies (openssl s_client; STARTTLS for MySQL with
# a third argument "mysql").
tls_serving() {
  local -a starttls=()
  [ "${3:-}" = mysql ] && starttls=(-starttls mysql)
  timeout 5 openssl s_client -connect "$1:$2" "${starttls[@]}" -CAfile "$RS_TLS_DIR/ca.pem" \
    -verify_return_error -brief </dev/null >/dev/null 2>&1
}
