# shellcheck shell=bash
# Ports and paths of the local stack. Sourced by every script in deploy/local/.
# Every value may be overridden from the environment.

RS_ROOT=${RS_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# Project-local state: data directories, logs and pid files of the local servers.
RS_STATE=${RS_STATE:-$RS_ROOT/.local}
# Cache kept across fresh clones (jar sets and other downloads from the registries).
RS_CACHE=${RS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/resultsync}

# The local private CA and its certificates (deploy/local/tls.sh, run by every
# engine script when missing). Every engine serves TLS with server.pem beside its
# plaintext port: MySQL and MariaDB on their one port (ssl_ca/ssl_cert/ssl_key),
# ClickHouse on RS_CH_SECURE_PORT, Pulsar on RS_PULSAR_TLS_PORT and
# RS_PULSAR_WEB_TLS_PORT. RS_TLS=1 (`RS_TLS=1 make run`) runs the stack fully
# encrypted: the servers serve mutual TLS and reach every engine over TLS (the
# settings at the end of this file), the migrator too, and the scripts call them
# with the CA and the client certificate (lib.sh: GRPCURL, CURL).
RS_TLS_DIR=${RS_TLS_DIR:-$RS_STATE/tls}
RS_TLS=${RS_TLS:-0}

# MySQL-family servers, each with databases rs_shard_0, rs_shard_1, rs_control:
#   mysql    Oracle MySQL 9.7 LTS (deploy/local/mysql.sh; the engine production runs)
#   mariadb  MariaDB 10.11 (deploy/local/mariadb.sh)
# RS_MYSQL_ENGINE selects the one the stack's DSNs (RS_SHARDS, RS_CONTROL_DSN, RS_MYSQL_PORT)
# point at; RS_MYSQL_ENGINES lists the servers deploy/local/up.sh starts (the selected engine
# is always started), e.g. "mysql mariadb" to run the migrations against both.
RS_MYSQL_ENGINE=${RS_MYSQL_ENGINE:-mysql}
RS_MYSQL_ENGINES=${RS_MYSQL_ENGINES:-$RS_MYSQL_ENGINE}
RS_MYSQL_MYSQL_PORT=${RS_MYSQL_MYSQL_PORT:-13306}
RS_MYSQL_MARIADB_PORT=${RS_MYSQL_MARIADB_PORT:-13307}

# rs_mysql_engine_port ENGINE: the port of the local server of ENGINE; fails on an unknown one.
rs_mysql_engine_port() {
  case "$1" in
    mysql) printf '%s\n' "$RS_MYSQL_MYSQL_PORT" ;;
    mariadb) printf '%s\n' "$RS_MYSQL_MARIADB_PORT" ;;
    *) return 1 ;;
  esac
}

# rs_env_die MESSAGE: a configuration error (lib.sh's die is not defined yet).
rs_env_die() {
  printf 'ERROR: %s\n' "$*" >&2
  case $- in *i*) return 1 ;; esac # sourced by an interactive shell: do not close it
  exit 1
}
case "$RS_MYSQL_ENGINE" in
  mysql | mariadb) ;;
  *) rs_env_die "RS_MYSQL_ENGINE=$RS_MYSQL_ENGINE: must be mysql (Oracle MySQL 9.7) or mariadb (MariaDB 10.11)" ;;
esac
case "$RS_TLS" in
  0 | 1) ;;
  *) rs_env_die "RS_TLS=$RS_TLS: must be 0 (plaintext) or 1 (every hop over TLS)" ;;
esac
for _rs_e in $RS_MYSQL_ENGINES; do
  rs_mysql_engine_port "$_rs_e" >/dev/null \
    || rs_env_die "RS_MYSQL_ENGINES=$RS_MYSQL_ENGINES: $_rs_e is not an engine (each must be mysql or mariadb)"
done
unset _rs_e

RS_MYSQL_HOST=${RS_MYSQL_HOST:-127.0.0.1}
# The port the stack connects to: the selected engine's, unless overridden (e.g. an outside server).
RS_MYSQL_PORT=${RS_MYSQL_PORT:-$(rs_mysql_engine_port "$RS_MYSQL_ENGINE")}
RS_MYSQL_USER=${RS_MYSQL_USER:-resultsync}
RS_MYSQL_PASSWORD=${RS_MYSQL_PASSWORD:-resultsync}
RS_MYSQL_SHARDS=${RS_MYSQL_SHARDS:-rs_shard_0 rs_shard_1}
RS_MYSQL_CONTROL=${RS_MYSQL_CONTROL:-rs_control}

# rs_mysql_dsn HOST PORT DATABASE: a go-sql-driver DSN of the resultsync user (with RS_TLS=1
# over TLS: tls=resultsync, the configuration the RS_MYSQL_TLS_* files make).
rs_mysql_dsn() {
  printf '%s:%s@tcp(%s:%s)/%s%s\n' "$RS_MYSQL_USER" "$RS_MYSQL_PASSWORD" "$1" "$2" "$3" \
    "$([ "$RS_TLS" = 1 ] && printf '?tls=resultsync')"
}

# rs_mysql_shard_map HOST PORT: the shard map shard-0=<dsn>,shard-1=<dsn>,... of RS_MYSQL_SHARDS.
rs_mysql_shard_map() {
  local i=0 db map=
  for db in $RS_MYSQL_SHARDS; do
    map+="${map:+,}shard-$i=$(rs_mysql_dsn "$1" "$2" "$db")"
    i=$((i + 1))
  done
  printf '%s\n' "$map"
}

# The services' and the migrator's DSNs (their compiled-in defaults always name port 13306).
RS_SHARDS=${RS_SHARDS:-$(rs_mysql_shard_map "$RS_MYSQL_HOST" "$RS_MYSQL_PORT")}
RS_CONTROL_DSN=${RS_CONTROL_DSN:-$(rs_mysql_dsn "$RS_MYSQL_HOST" "$RS_MYSQL_PORT" "$RS_MYSQL_CONTROL")}

# ClickHouse: native protocol and HTTP.
RS_CH_HOST=${RS_CH_HOST:-127.0.0.1}
RS_CH_PORT=${RS_CH_PORT:-19000}
RS_CH_HTTP_PORT=${RS_CH_HTTP_PORT:-18123}
RS_CH_DATABASE=${RS_CH_DATABASE:-resultsync}
# A second ClickHouse account, with a password (the default account has none):
# the tests of --clickhouse-user / --clickhouse-password log in with it.
RS_CH_APP_USER=${RS_CH_APP_USER:-rs_app}
RS_CH_APP_PASSWORD=${RS_CH_APP_PASSWORD:-rs-app-local-pw}
# The migrator's and the services' ClickHouse address (their compiled-in default is 127.0.0.1:19000).
# The secure native port (tcp_port_secure: TLS with the local CA's server certificate).
RS_CH_SECURE_PORT=${RS_CH_SECURE_PORT:-19440}
RS_CH_SECURE_ADDR=${RS_CH_SECURE_ADDR:-$RS_CH_HOST:$RS_CH_SECURE_PORT}
# With RS_TLS=1 the secure port.
if [ "$RS_TLS" = 1 ]; then
  RS_CH_ADDR=${RS_CH_ADDR:-$RS_CH_SECURE_ADDR}
else
  RS_CH_ADDR=${RS_CH_ADDR:-$RS_CH_HOST:$RS_CH_PORT}
fi

# Pulsar standalone (deploy/local/pulsar.sh). 4.0.7: the newest 4.0.x whose jar set
# resolves completely from the registry (4.0.8 lacks jetcd-core-shaded and pulsar-opentelemetry).
RS_PULSAR_VERSION=${RS_PULSAR_VERSION:-4.0.7}
RS_PULSAR_PORT=${RS_PULSAR_PORT:-16650}
RS_PULSAR_WEB_PORT=${RS_PULSAR_WEB_PORT:-18080}
# Port of the bookie embedded in standalone (listens on 127.0.0.1 only).
RS_PULSAR_BOOKIE_PORT=${RS_PULSAR_BOOKIE_PORT:-13181}
# The broker's TLS ports (brokerServicePortTls, webServicePortTls; the local CA's
# server certificate), beside the plaintext ones.
RS_PULSAR_TLS_PORT=${RS_PULSAR_TLS_PORT:-16651}
RS_PULSAR_WEB_TLS_PORT=${RS_PULSAR_WEB_TLS_PORT:-18443}
RS_PULSAR_TLS_URL=${RS_PULSAR_TLS_URL:-pulsar+ssl://127.0.0.1:$RS_PULSAR_TLS_PORT}
RS_PULSAR_ADMIN_TLS_URL=${RS_PULSAR_ADMIN_TLS_URL:-https://127.0.0.1:$RS_PULSAR_WEB_TLS_PORT}
# The servers' broker and the migrator's admin API (with RS_TLS=1 over TLS).
if [ "$RS_TLS" = 1 ]; then
  RS_PULSAR_URL=${RS_PULSAR_URL:-$RS_PULSAR_TLS_URL}
  RS_PULSAR_ADMIN_URL=${RS_PULSAR_ADMIN_URL:-$RS_PULSAR_ADMIN_TLS_URL}
else
  RS_PULSAR_URL=${RS_PULSAR_URL:-pulsar://127.0.0.1:$RS_PULSAR_PORT}
  RS_PULSAR_ADMIN_URL=${RS_PULSAR_ADMIN_URL:-http://127.0.0.1:$RS_PULSAR_WEB_PORT}
fi
# The broker's token-authentication key (HS256, made by pulsar.sh): clients
# without a token connect as "anonymous"; the tests of --pulsar-token sign
# tokens with it.
RS_PULSAR_TOKEN_KEY=${RS_PULSAR_TOKEN_KEY:-$RS_STATE/pulsar/token-hs256.key}

# The six servers (deploy/local/servers.sh): gRPC on base+1..base+6 (results, relay,
# consumer, reconcile, repair, gateway), metrics and health on base+101..base+106, the
# gateway's JSON API on base. RS_RESULTS_ADDR ... RS_REPAIR_ADDR are also the gateway's
# backends; RS_GATEWAY_API_ADDR its JSON API.
RS_SERVERS_PORT_BASE=${RS_SERVERS_PORT_BASE:-7100}
RS_RESULTS_ADDR=${RS_RESULTS_ADDR:-127.0.0.1:$((RS_SERVERS_PORT_BASE + 1))}
RS_RELAY_ADDR=${RS_RELAY_ADDR:-127.0.0.1:$((RS_SERVERS_PORT_BASE + 2))}
RS_CONSUMER_ADDR=${RS_CONSUMER_ADDR:-127.0.0.1:$((RS_SERVERS_PORT_BASE + 3))}
RS_RECONCILE_ADDR=${RS_RECONCILE_ADDR:-127.0.0.1:$((RS_SERVERS_PORT_BASE + 4))}
RS_REPAIR_ADDR=${RS_REPAIR_ADDR:-127.0.0.1:$((RS_SERVERS_PORT_BASE + 5))}
RS_GATEWAY_ADDR=${RS_GATEWAY_ADDR:-127.0.0.1:$((RS_SERVERS_PORT_BASE + 6))}
RS_GATEWAY_API_ADDR=${RS_GATEWAY_API_ADDR:-127.0.0.1:$RS_SERVERS_PORT_BASE}

# The servers' profile: "local" lets them fall back to this stack's addresses
# and accept the documented development tokens (dev-viewer, dev-operator,
# dev-admin). Without it (production) every setting must be given.
RS_PROFILE=${RS_PROFILE:-local}

# RS_TLS=1: the servers' TLS settings (pkg/platform/tlsconfig flags, docs/security.md): each
# serves mutual TLS with the local CA's server certificate (its gRPC, its JSON API for the
# gateway, its metrics listener with the client certificate optional), the gateway dials the
# backends over mutual TLS, and every server and the migrator verify MySQL, ClickHouse and Pulsar
# with the CA and present the client certificate.
if [ "$RS_TLS" = 1 ]; then
  export RS_TLS_CERT_FILE=${RS_TLS_CERT_FILE:-$RS_TLS_DIR/server.pem}
  export RS_TLS_KEY_FILE=${RS_TLS_KEY_FILE:-$RS_TLS_DIR/server-key.pem}
  export RS_TLS_CA_FILE=${RS_TLS_CA_FILE:-$RS_TLS_DIR/ca.pem}
  export RS_TLS_CLIENT_AUTH=${RS_TLS_CLIENT_AUTH:-true}
  export RS_GATEWAY_BACKEND_TLS_CA_FILE=${RS_GATEWAY_BACKEND_TLS_CA_FILE:-$RS_TLS_DIR/ca.pem}
  export RS_GATEWAY_BACKEND_TLS_CERT_FILE=${RS_GATEWAY_BACKEND_TLS_CERT_FILE:-$RS_TLS_DIR/server.pem}
  export RS_GATEWAY_BACKEND_TLS_KEY_FILE=${RS_GATEWAY_BACKEND_TLS_KEY_FILE:-$RS_TLS_DIR/server-key.pem}
  for _rs_hop in MYSQL CH PULSAR; do
    export "RS_${_rs_hop}_TLS_CA_FILE=$RS_TLS_DIR/ca.pem" "RS_${_rs_hop}_TLS_CERT_FILE=$RS_TLS_DIR/client.pem" \
      "RS_${_rs_hop}_TLS_KEY_FILE=$RS_TLS_DIR/client-key.pem"
  done
  unset _rs_hop
fi

export RS_ROOT RS_STATE RS_CACHE RS_MYSQL_ENGINE RS_MYSQL_ENGINES RS_MYSQL_MYSQL_PORT \
  RS_MYSQL_MARIADB_PORT RS_MYSQL_HOST RS_MYSQL_PORT RS_MYSQL_USER RS_MYSQL_PASSWORD \
  RS_MYSQL_SHARDS RS_MYSQL_CONTROL RS_SHARDS RS_CONTROL_DSN \
  RS_CH_HOST RS_CH_PORT RS_CH_HTTP_PORT RS_CH_DATABASE RS_CH_ADDR RS_CH_SECURE_PORT RS_CH_SECURE_ADDR RS_CH_APP_USER RS_CH_APP_PASSWORD \
  RS_PULSAR_VERSION RS_PULSAR_PORT RS_PULSAR_WEB_PORT RS_PULSAR_BOOKIE_PORT RS_PULSAR_URL RS_PULSAR_TOKEN_KEY \
  RS_PULSAR_TLS_PORT RS_PULSAR_WEB_TLS_PORT RS_PULSAR_TLS_URL RS_PULSAR_ADMIN_TLS_URL RS_PULSAR_ADMIN_URL RS_TLS_DIR RS_TLS RS_PROFILE \
  RS_SERVERS_PORT_BASE RS_RESULTS_ADDR RS_RELAY_ADDR RS_CONSUMER_ADDR RS_RECONCILE_ADDR RS_REPAIR_ADDR \
  RS_GATEWAY_ADDR RS_GATEWAY_API_ADDR
