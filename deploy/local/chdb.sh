#!/usr/bin/env bash
# Current ClickHouse, in-process: chdb-core from PyPI in a virtualenv, for tests run with
# RS_CH_ENGINE=chdb (pkg/testkit/chdb drives deploy/local/chdb/chdb_server.py with it).
#
#   deploy/local/chdb.sh install   create or update $RS_CACHE/chdb-venv from chdb/requirements.txt
#   deploy/local/chdb.sh status    exit 0 only when the venv is current and chdb answers
#
# The venv lives in $RS_CACHE (kept across clones). It is rebuilt only when requirements.txt
# changes: the venv stores the hash of the requirements it was built from. No server runs.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=deploy/local/lib.sh
. "$HERE/lib.sh"

REQS=$HERE/chdb/requirements.txt
VENV=$RS_CACHE/chdb-venv
STAMP=$VENV/.requirements.sha256
PY=$VENV/bin/python

want_hash() { sha256sum "$REQS" | cut -d' ' -f1; }

# current: the venv exists and was built from the present requirements.txt.
current() { [ -x "$PY" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$(want_hash)" ]; }

chdb_version() {
  "$PY" -c 'import chdb.session as s; print(s.Session().query("SELECT version()", "CSV").bytes().decode().strip().strip(chr(34)))'
}

cmd_install() {
  local t0; t0=$(date +%s)
  [ -f "$REQS" ] || die "missing $REQS"
  if current; then
    log "chdb venv $VENV is current"
  else
    command -v python3 >/dev/null 2>&1 || die "python3 not found"
    if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
      need_apt python3-venv
    fi
    mkdir -p "$RS_CACHE"
    if [ ! -x "$PY" ]; then
      log "creating virtualenv $VENV"
      rm -rf "$VENV"
      python3 -m venv "$VENV" || die "python3 -m venv $VENV failed"
    fi
    rm -f "$STAMP"
    log "installing $(grep -v '^#' "$REQS" | xargs) into $VENV"
    "$PY" -m pip install --quiet --disable-pip-version-check -r "$REQS" \
      || die "pip install -r $REQS failed"
    want_hash >"$STAMP"
  fi
  local v; v=$(chdb_version) || die "chdb does not run from $VENV"
  log "chdb ready: ClickHouse $v in $VENV ($(( $(date +%s) - t0 ))s)"
}

cmd_status() {
  if ! current; then
    log "chdb venv $VENV is missing or out of date (run: $0 install)"
    return 1
  fi
  local v
  if ! v=$(chdb_version 2>/dev/null); then
    log "chdb venv $VENV exists but chdb does not run (run: $0 install)"
    return 1
  fi
  log "chdb: ClickHouse $v in $VENV"
}

case "${1:-}" in
  install) cmd_install ;;
  status) cmd_status ;;
  *) echo "usage: $0 install|status" >&2; exit 2 ;;
esac
