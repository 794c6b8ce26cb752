# shellcheck shell=bash
# Ports and paths of the local stack. Sourced by every script in deploy/local/.
# Every value may be overridden from the environment.

RS_ROOT=${RS_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# Project-local state: data directories, logs and pid files of the local servers.
RS_STATE=${RS_STATE:-$RS_ROOT/.local}
# Cache kept across fresh clones (jar sets and other downloads from the registries).
RS_CACHE=${RS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/resultsync}

# MariaDB (MySQL protocol): one server, databases rs_shard_0, rs_shard_1, rs_control.
RS_MYSQL_HOST=${RS_MYSQL_HOST:-127.0.0.1}
RS_MYSQL_PORT=${RS_MYSQL_PORT:-13306}
RS_MYSQL_USER=${RS_MYSQL_USER:-resultsync}
RS_MYSQL_PASSWORD=${RS_MYSQL_PASSWORD:-resultsync}
RS_MYSQL_SHARDS=${RS_MYSQL_SHARDS:-rs_shard_0 rs_shard_1}
RS_MYSQL_CONTROL=${RS_MYSQL_CONTROL:-rs_control}

# ClickHouse: native protocol and HTTP.
RS_CH_HOST=${RS_CH_HOST:-127.0.0.1}
RS_CH_PORT=${RS_CH_PORT:-19000}
RS_CH_HTTP_PORT=${RS_CH_HTTP_PORT:-18123}
RS_CH_DATABASE=${RS_CH_DATABASE:-resultsync}

# Pulsar standalone (deploy/local/pulsar.sh). 4.0.7: the newest 4.0.x whose jar set
# resolves completely from the registry (4.0.8 lacks jetcd-core-shaded and pulsar-opentelemetry).
RS_PULSAR_VERSION=${RS_PULSAR_VERSION:-4.0.7}
RS_PULSAR_PORT=${RS_PULSAR_PORT:-16650}
RS_PULSAR_WEB_PORT=${RS_PULSAR_WEB_PORT:-18080}
# Port of the bookie embedded in standalone (listens on 127.0.0.1 only).
RS_PULSAR_BOOKIE_PORT=${RS_PULSAR_BOOKIE_PORT:-13181}

export RS_ROOT RS_STATE RS_CACHE RS_MYSQL_HOST RS_MYSQL_PORT RS_MYSQL_USER RS_MYSQL_PASSWORD \
  RS_MYSQL_SHARDS RS_MYSQL_CONTROL RS_CH_HOST RS_CH_PORT RS_CH_HTTP_PORT RS_CH_DATABASE \
  RS_PULSAR_VERSION RS_PULSAR_PORT RS_PULSAR_WEB_PORT RS_PULSAR_BOOKIE_PORT
