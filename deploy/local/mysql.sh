#!/usr/bin/env bash
# Project-local Oracle MySQL 9.7 LTS server for the local stack (the engine production shards run).
#
#   deploy/local/mysql.sh install|start|stop|status|sql DATABASE QUERY|version
#
# Debian 12 ships no MySQL server, but Debian sid's mysql-server-core is Oracle MySQL 9.7 (LTS).
# `install` builds a minimal sid root with debootstrap under $RS_CACHE/mysql-9.7-sid (kept
# across fresh clones; ~500 MB) and installs mysql-server-core and mysql-client into it. No
# chroot is needed to run it: the sid binaries run on the host through the sid root's own
# dynamic loader and libraries (see sid()).
#
# Data, config, socket, pid file and logs live under $RS_STATE; the server listens on
# 127.0.0.1:$RS_MYSQL_MYSQL_PORT only, in plaintext and over TLS with the local CA's server
# certificate (deploy/local/tls.sh, made when missing). `start` on a running server points its
# TLS at those files and reloads them (ALTER INSTANCE RELOAD TLS: no restart, and a renewed
# certificate is served from the next connection). `start` is idempotent: it initializes the data directory
# on first use, starts the server when it is not running, and (re)applies the users, databases
# and grants every time. Production defaults are kept on purpose: binary log ON,
# REPEATABLE-READ, log_bin_trust_function_creators=0, server-id 1.
set -euo pipefail
# shellcheck source=deploy/local/lib.sh
. "$(dirname "$0")/lib.sh"

# The MySQL series this script provisions; the sid root is verified to hold it.
MYSQL_SERIES=9.7
SID_ROOT=$RS_CACHE/mysql-$MYSQL_SERIES-sid
SID_BUILD=$SID_ROOT.build
SID_MARKER=$SID_ROOT/.rs-installed
SID_LOCK=$SID_ROOT.lock
DEBIAN_MIRROR=${RS_DEBIAN_MIRROR:-http://deb.debian.org/debian}

MY_PORT=$RS_MYSQL_MYSQL_PORT
MY_DIR=$RS_STATE/mysql
MY_DATA=$MY_DIR/data
MY_TMP=$MY_DIR/tmp
MY_CNF=$MY_DIR/my.cnf
MY_PID=$MY_DIR/mysql.pid
MY_SOCK=$MY_DIR/mysql.sock
MY_LOG=$RS_STATE/logs/mysql.log
MY_INIT_LOG=$RS_STATE/logs/mysql-initialize.log
MY_INSTALL_LOG=$RS_STATE/logs/mysql-install.log
START_TIMEOUT=${RS_MYSQL_START_TIMEOUT:-120}

# A unix socket path must fit in 108 bytes; a deep checkout falls back to a short path in /tmp.
if [ ${#MY_SOCK} -gt 100 ]; then
  MY_SOCK=/tmp/rs-mysql-$(printf '%s' "$MY_DIR" | md5sum | cut -c1-12).sock
fi

# The OS user the server runs as (mysqld runs as root only when told so: user=root). The admin
# account is MySQL's root@localhost, which --initialize-insecure creates without a password; it
# is reachable over the unix socket only (with skip-name-resolve a TCP client from 127.0.0.1 never
# matches 'localhost').
RUN_USER=$(id -un)

# sid_argv BINARY: the command line prefix that runs a binary of the sid root (path relative to
# it) on the host, through the root's own loader and libraries, so the host's older glibc and
# libraries are never involved. Set in the array SID_ARGV (usable with timeout, spawn_bg).
sid_argv() {
  SID_ARGV=("$SID_ROOT/lib64/ld-linux-x86-64.so.2"
    --library-path "$SID_ROOT/lib/x86_64-linux-gnu:$SID_ROOT/usr/lib/x86_64-linux-gnu"
    "$SID_ROOT/$1")
}

# sid BINARY ARGS...: run a binary of the sid root (see sid_argv).
sid() {
  local SID_ARGV
  sid_argv "$1"; shift
  "${SID_ARGV[@]}" "$@"
}

# binary_version [ROOT]: the version of mysqld in the sid root, e.g. 9.7.4-2.
binary_version() {
  local root=${1:-$SID_ROOT}
  SID_ROOT=$root sid usr/sbin/mysqld --version 2>/dev/null | sed -n 's/.* Ver \([^ ]*\) .*/\1/p'
}

installed() {
  [ -f "$SID_MARKER" ] || return 1
  case "$(binary_version)" in "$MYSQL_SERIES".*) return 0 ;; *) return 1 ;; esac
}

need_installed() { installed || die "MySQL $MYSQL_SERIES is not installed in $SID_ROOT (run: $0 install)"; }

# remove_tree DIR: delete a (possibly half-built) root. debootstrap mounts proc, sys and device
# nodes inside its target while it runs; an interrupted run can leave them mounted, so unmount
# what is left first and never cross into another file system.
remove_tree() {
  local d=$1 m
  [ -e "$d" ] || return 0
  while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done < <(awk -v d="$d/" 'index($2 "/", d) == 1 { print $2 }' /proc/mounts | sort -r)
  rm -rf --one-file-system "$d"
}

# ---------------------------------------------------------------- install

cmd_install() {
  mkdir -p "$RS_CACHE" "$RS_STATE/logs"
  command -v flock >/dev/null 2>&1 || need_apt util-linux
  exec 8>"$SID_LOCK"
  flock -w 1800 8 || die "another install holds $SID_LOCK"
  if installed; then
    log "MySQL $(binary_version) already installed in $SID_ROOT"
    exec 8>&-
    return 0
  fi
  [ "$(id -u)" -eq 0 ] || die "building the Debian sid root in $SID_ROOT needs root (debootstrap, chroot)"
  need_apt debootstrap
  local t0; t0=$(date +%s)
  # The build happens in $SID_BUILD and is renamed to $SID_ROOT only when complete and verified,
  # so an interrupted build is never taken as done; a leftover build (or a final directory
  # without a valid marker) is removed and rebuilt from nothing.
  remove_tree "$SID_BUILD"
  if [ -e "$SID_ROOT" ]; then
    log "removing incomplete MySQL root $SID_ROOT"
    remove_tree "$SID_ROOT"
  fi
  trap 'remove_tree "$SID_BUILD"' EXIT
  : >"$MY_INSTALL_LOG"
  log "building a Debian sid root in $SID_ROOT from $DEBIAN_MIRROR (first time: ~30 s, ~500 MB; log $MY_INSTALL_LOG)"
  if ! debootstrap --variant=minbase sid "$SID_BUILD" "$DEBIAN_MIRROR" >>"$MY_INSTALL_LOG" 2>&1; then
    tail_log "$MY_INSTALL_LOG"
    die "debootstrap of Debian sid failed (log: $MY_INSTALL_LOG)"
  fi
  # No service may be started inside the root by package scripts.
  printf '#!/bin/sh\nexit 101\n' >"$SID_BUILD/usr/sbin/policy-rc.d"
  chmod 755 "$SID_BUILD/usr/sbin/policy-rc.d"
  log "installing mysql-server-core and mysql-client into the sid root"
  # The archive's sid index is a fixed snapshot whose Release file has expired.
  if ! chroot "$SID_BUILD" /bin/bash -c 'apt-get -o Acquire::Check-Valid-Until=false update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mysql-server-core mysql-client &&
        apt-get clean' >>"$MY_INSTALL_LOG" 2>&1; then
    tail_log "$MY_INSTALL_LOG"
    die "installing MySQL into the sid root failed (log: $MY_INSTALL_LOG)"
  fi
  rm -rf "${SID_BUILD:?}"/var/lib/apt/lists/*
  local v; v=$(binary_version "$SID_BUILD")
  case "$v" in
    "$MYSQL_SERIES".*) ;;
    "") die "mysqld from the sid root does not run on this host (see: $SID_BUILD/usr/sbin/mysqld --version)" ;;
    *) die "Debian sid now ships MySQL $v, not $MYSQL_SERIES; update MYSQL_SERIES in $0" ;;
  esac
  if awk -v d="$SID_BUILD/" 'index($2 "/", d) == 1 { f = 1 } END { exit !f }' /proc/mounts; then
    die "file systems are still mounted under $SID_BUILD"
  fi
  echo "$v" >"$SID_BUILD/.rs-installed"
  mv -T "$SID_BUILD" "$SID_ROOT"
  trap - EXIT
  log "installed MySQL $v in $SID_ROOT ($(du -sh "$SID_ROOT" | cut -f1), $(( $(date +%s) - t0 ))s)"
  exec 8>&-
}

# ---------------------------------------------------------------- server

write_cnf() {
  mkdir -p "$MY_DIR" "$MY_TMP" "$(dirname "$MY_LOG")"
  # --defaults-file makes the server and our clients read only this file, never /etc/mysql.
  cat >"$MY_CNF.new" <<EOF
# Generated by deploy/local/mysql.sh; rewritten on every start.
[mysqld]
user                           = $RUN_USER
basedir                        = $SID_ROOT/usr
lc-messages-dir                = $SID_ROOT/usr/share/mysql
character-sets-dir             = $SID_ROOT/usr/share/mysql/charsets
plugin-dir                     = $SID_ROOT/usr/lib/mysql/plugin
bind-address                   = 127.0.0.1
port                           = $MY_PORT
socket                         = $MY_SOCK
pid-file                       = $MY_PID
datadir                        = $MY_DATA
tmpdir                         = $MY_TMP
log-error                      = $MY_LOG
mysqlx                         = OFF
# Without it mysqld aborts: the compiled-in /var/lib/mysql-files does not exist on the host.
secure-file-priv               = ""
skip-name-resolve
character-set-server           = utf8mb4
# performance_schema is OFF unless RS_MYSQL_PERFORMANCE_SCHEMA=ON (for profiling statements).
# Kept as in production: binary log ON, REPEATABLE-READ, log_bin_trust_function_creators=0,
# server-id 1 and the default collation (utf8mb4_0900_ai_ci). The binary log is expired after
# an hour (checked at each rotation and start), so repeated test runs do not fill the disk.
binlog_expire_logs_seconds     = 3600
default-time-zone              = '+00:00'
max_connections                = 500
max_allowed_packet             = 64M
innodb_buffer_pool_size        = 512M
performance_schema             = ${RS_MYSQL_PERFORMANCE_SCHEMA:-OFF}
# TLS with the local CA's server certificate (deploy/local/tls.sh), so a client that verifies
# the server with the CA (the services' tls=resultsync) is served; plaintext stays allowed.
ssl_ca                         = $RS_TLS_DIR/ca.pem
ssl_cert                       = $RS_TLS_DIR/server.pem
ssl_key                        = $RS_TLS_DIR/server-key.pem
tls_version                    = TLSv1.2,TLSv1.3

[client]
socket                         = $MY_SOCK
character-sets-dir             = $SID_ROOT/usr/share/mysql/charsets
default-character-set          = utf8mb4
EOF
  mv -f "$MY_CNF.new" "$MY_CNF"
}

# init_datadir: create the system tables once. Done in a scratch directory and renamed, so an
# interrupted initialization never leaves a half-made data directory behind.
init_datadir() {
  [ -d "$MY_DATA/mysql" ] && return 0
  local scratch=$MY_DIR/data.init
  rm -rf "$scratch"
  log "initializing MySQL data directory $MY_DATA"
  rm -f "$MY_INIT_LOG"
  if ! sid usr/sbin/mysqld --defaults-file="$MY_CNF" --datadir="$scratch" --log-error="$MY_INIT_LOG" \
      --initialize-insecure >>"$MY_INIT_LOG" 2>&1; then
    tail_log "$MY_INIT_LOG"
    die "mysqld --initialize-insecure failed (log: $MY_INIT_LOG)"
  fi
  rm -rf "$MY_DATA"
  mv "$scratch" "$MY_DATA"
}

# ping_sock: the server answers the admin account on its unix socket. Used for readiness,
# because over TCP a fresh server knows no account but root@localhost until provision() runs.
ping_sock() {
  [ -S "$MY_SOCK" ] || return 1
  sid usr/bin/mysqladmin --defaults-file="$MY_CNF" -u root --connect-timeout=2 ping >/dev/null 2>&1
}

# client_tcp ARGS...: the sid mysql client as the resultsync user over TCP. The credentials go in
# an option file on a pipe: with -p on the command line the MySQL client prints a warning.
client_tcp() {
  sid usr/bin/mysql --defaults-file=<(printf '[client]\nuser="%s"\npassword="%s"\n' \
      "$(opt_escape "$RS_MYSQL_USER")" "$(opt_escape "$RS_MYSQL_PASSWORD")") \
    --character-sets-dir="$SID_ROOT/usr/share/mysql/charsets" \
    --protocol=TCP -h 127.0.0.1 -P "$MY_PORT" --connect-timeout=5 "$@"
}

# opt_escape VALUE: VALUE for a double-quoted option-file value (backslash and quote escaped).
opt_escape() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }

# ping_tcp: the application account logs in on 127.0.0.1:$MY_PORT (a real login: mysqladmin
# ping also succeeds when access is denied).
ping_tcp() { client_tcp --batch --skip-column-names -e "SELECT 1" >/dev/null 2>&1; }

# sql_admin: run SQL from stdin as root over the unix socket.
sql_admin() { sid usr/bin/mysql --defaults-file="$MY_CNF" -u root --batch --skip-column-names; }

sql_quote() { printf "'%s'" "$(printf '%s' "$1" | sed "s/\\\\/\\\\\\\\/g; s/'/''/g")"; }

provision() {
  local pw db host
  pw=$(sql_quote "$RS_MYSQL_PASSWORD")
  {
    for host in 127.0.0.1 localhost '%'; do
      # IDENTIFIED WITH: without it MySQL logs a warning for every existing account on each start.
      echo "CREATE USER IF NOT EXISTS '$RS_MYSQL_USER'@'$host' IDENTIFIED WITH caching_sha2_password BY $pw;"
      echo "ALTER USER '$RS_MYSQL_USER'@'$host' IDENTIFIED WITH caching_sha2_password BY $pw;"
    done
    for db in $RS_MYSQL_SHARDS $RS_MYSQL_CONTROL; do
      echo "CREATE DATABASE IF NOT EXISTS \`$db\` CHARACTER SET utf8mb4;"
      for host in 127.0.0.1 localhost '%'; do
        echo "GRANT ALL PRIVILEGES ON \`$db\`.* TO '$RS_MYSQL_USER'@'$host';"
      done
    done
    # Integration tests create and drop fresh per-test databases named rs_test_*; database-level
    # grants cannot cover databases that do not exist yet, so the user gets ALL on *.* (without
    # GRANT OPTION). Acceptable for a loopback-only development server, never for production.
    # On MySQL the global ALL also includes SUPER (and the dynamic admin privileges): the shard
    # migrations create triggers, which with the binary log ON and
    # log_bin_trust_function_creators=0 (kept as in production) require SUPER (error 1419).
    for host in 127.0.0.1 localhost '%'; do
      echo "GRANT ALL PRIVILEGES ON *.* TO '$RS_MYSQL_USER'@'$host';"
    done
  } | sql_admin || { tail_log "$MY_LOG"; die "could not create MySQL users and databases"; }
  # Prove the application account works over TCP, as the services will connect.
  client_tcp -e "SELECT 1" "$RS_MYSQL_CONTROL" >/dev/null \
    || die "user $RS_MYSQL_USER cannot log in over TCP on 127.0.0.1:$MY_PORT"
}

# reload_tls: the server's TLS from the local CA's files (a server started before they were
# configured, or certificates renewed by tls.sh --renew), without a restart; then checks that a
# client verifying with the CA is served.
reload_tls() {
  write_cnf # the same settings at the next start
  {
    echo "SET GLOBAL ssl_ca = $(sql_quote "$RS_TLS_DIR/ca.pem");"
    echo "SET GLOBAL ssl_cert = $(sql_quote "$RS_TLS_DIR/server.pem");"
    echo "SET GLOBAL ssl_key = $(sql_quote "$RS_TLS_DIR/server-key.pem");"
    echo "ALTER INSTANCE RELOAD TLS;"
  } | sql_admin || { tail_log "$MY_LOG"; die "could not load the TLS certificate of $RS_TLS_DIR into MySQL"; }
  tls_serving 127.0.0.1 "$MY_PORT" mysql \
    || die "MySQL on 127.0.0.1:$MY_PORT does not serve TLS with the certificate of $RS_TLS_DIR"
}

# port_owner_hint: explain a busy port when it is our own MariaDB (e.g. one started before the
# MySQL/MariaDB port split, when MariaDB listened on 13306).
port_owner_hint() {
  local cnf=$RS_STATE/mariadb/my.cnf
  if pidfile_alive "$RS_STATE/mariadb/mariadb.pid" && [ -f "$cnf" ] \
      && grep -Eq "^port[[:space:]]*=[[:space:]]*$MY_PORT\$" "$cnf"; then
    printf '; it is the project MariaDB (pid %s, %s): restart it to move it to port %s: deploy/local/mariadb.sh stop && deploy/local/mariadb.sh start' \
      "$(cat "$RS_STATE/mariadb/mariadb.pid")" "$cnf" "$RS_MYSQL_MARIADB_PORT"
  fi
}

cmd_start() {
  local t0; t0=$(date +%s)
  need_installed
  ensure_tls
  [ -f "$MY_PID" ] && ! pidfile_alive "$MY_PID" && { log "removing stale pid file $MY_PID"; rm -f "$MY_PID"; }
  if pidfile_alive "$MY_PID"; then
    # Ours is running (or still starting: crash recovery can take a while); wait for it below.
    log "MySQL already running (pid $(cat "$MY_PID"))"
  else
    if port_open 127.0.0.1 "$MY_PORT"; then
      die "port $MY_PORT is in use by another process, not our MySQL (set RS_MYSQL_MYSQL_PORT)$(port_owner_hint)"
    fi
    write_cnf
    init_datadir
    rm -f "$MY_SOCK" "$MY_SOCK.lock"
    log "starting MySQL on 127.0.0.1:$MY_PORT (data $MY_DATA, log $MY_LOG)"
    sid_argv usr/sbin/mysqld
    spawn_bg "$MY_LOG" "${SID_ARGV[@]}" --defaults-file="$MY_CNF"
    local spawned=$SPAWNED_PID deadline=$(( $(date +%s) + START_TIMEOUT ))
    until ping_sock; do
      if ! proc_alive "$spawned"; then
        tail_log "$MY_LOG"
        die "MySQL exited during start-up (log: $MY_LOG)"
      fi
      if [ "$(date +%s)" -ge "$deadline" ]; then
        tail_log "$MY_LOG"
        die "MySQL did not answer within ${START_TIMEOUT}s (log: $MY_LOG)"
      fi
      sleep 0.3
    done
  fi
  wait_for "MySQL" "$START_TIMEOUT" "$MY_LOG" ping_sock || die "MySQL does not answer (log: $MY_LOG)"
  pidfile_alive "$MY_PID" || { tail_log "$MY_LOG"; die "MySQL answers but its pid file $MY_PID is missing"; }
  local port
  port=$(echo "SELECT @@port;" | sql_admin) || die "cannot query the running MySQL"
  [ "$port" = "$MY_PORT" ] || die "the running MySQL (pid $(cat "$MY_PID")) listens on port $port, not RS_MYSQL_MYSQL_PORT=$MY_PORT: restart it ($0 stop && $0 start)"
  provision
  ping_tcp || { tail_log "$MY_LOG"; die "login over TCP 127.0.0.1:$MY_PORT failed"; }
  reload_tls
  local version; version=$(echo "SELECT VERSION();" | sql_admin)
  log "MySQL $version ready on 127.0.0.1:$MY_PORT (plaintext and TLS), user $RS_MYSQL_USER, databases $RS_MYSQL_SHARDS $RS_MYSQL_CONTROL ($(( $(date +%s) - t0 ))s)"
}

cmd_stop() {
  if ! pidfile_alive "$MY_PID"; then
    rm -f "$MY_PID"
    log "MySQL is not running"
    return 0
  fi
  log "stopping MySQL (pid $(cat "$MY_PID"))"
  # mysqladmin shutdown returns once the server has removed its pid file.
  if [ -f "$MY_CNF" ] && installed; then
    sid_argv usr/bin/mysqladmin
    timeout 120 "${SID_ARGV[@]}" --defaults-file="$MY_CNF" -u root shutdown >/dev/null 2>&1 || true
    local _
    for _ in $(seq 1 60); do pidfile_alive "$MY_PID" || break; sleep 0.5; done
  fi
  # Fallback: SIGTERM (also a clean InnoDB shutdown), then SIGKILL.
  if pidfile_alive "$MY_PID"; then stop_pid "MySQL" "$MY_PID"; fi
  rm -f "$MY_PID"
  log "MySQL stopped"
}

cmd_status() {
  if installed && ping_tcp; then
    log "MySQL $(client_tcp --batch --skip-column-names -e 'SELECT VERSION()') answering on 127.0.0.1:$MY_PORT$(pidfile_alive "$MY_PID" && echo " (pid $(cat "$MY_PID"))")"
    return 0
  fi
  if pidfile_alive "$MY_PID"; then
    log "MySQL pid $(cat "$MY_PID") is alive but does not answer $RS_MYSQL_USER on 127.0.0.1:$MY_PORT"
  else
    log "MySQL is not running"
  fi
  return 1
}

# sql DATABASE QUERY: run a query as the resultsync user over TCP, as a table with headers;
# with RS_TLS=1 over TLS, the server verified with the local CA (name and chain).
cmd_sql() {
  [ $# -eq 2 ] || { echo "usage: $0 sql DATABASE QUERY" >&2; exit 2; }
  need_installed
  local -a tls=()
  if [ "$RS_TLS" = 1 ]; then
    tls=(--ssl-mode=VERIFY_IDENTITY --ssl-ca="$RS_TLS_DIR/ca.pem" --ssl-cert="$RS_TLS_DIR/client.pem" --ssl-key="$RS_TLS_DIR/client-key.pem")
  fi
  client_tcp "${tls[@]}" --table "$1" -e "$2"
}

# version: the version of the installed mysqld (e.g. 9.7.4-2).
cmd_version() {
  need_installed
  binary_version
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  sql) shift; cmd_sql "$@" ;;
  version) cmd_version ;;
  *) echo "usage: $0 install|start|stop|status|sql DATABASE QUERY|version" >&2; exit 2 ;;
esac
