#!/usr/bin/env bash
# promtool from Debian's prometheus package, unpacked into the cache (the
# package itself is not installed: nothing starts a Prometheus server).
#
#   deploy/local/promtool.sh path     install if missing, print the binary's path
#   deploy/local/promtool.sh ARGS...  install if missing, run promtool ARGS
set -euo pipefail
# shellcheck source=deploy/local/lib.sh
. "$(dirname "$0")/lib.sh"

DIR=$RS_CACHE/prometheus-deb
BIN=$DIR/usr/bin/promtool

install_promtool() {
  [ -x "$BIN" ] && return 0
  command -v apt-get >/dev/null 2>&1 || die "apt-get not found: promtool comes from Debian's prometheus package"
  local tmp; tmp=$(mktemp -d)
  # shellcheck disable=SC2064 # expand now
  trap "rm -rf '$tmp'" RETURN
  log "downloading Debian's prometheus package for promtool"
  if ! (cd "$tmp" && apt-get download prometheus >/dev/null 2>&1); then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq || die "apt-get update failed"
    (cd "$tmp" && apt-get download prometheus >/dev/null 2>&1) || die "apt-get download prometheus failed"
  fi
  rm -rf "$DIR.tmp" && mkdir -p "$DIR.tmp"
  dpkg-deb -x "$tmp"/prometheus_*.deb "$DIR.tmp" || die "unpacking the prometheus package failed"
  rm -rf "$DIR" && mv "$DIR.tmp" "$DIR"
  "$BIN" --version 2>&1 | head -1 >&2
}

install_promtool
case "${1:-}" in
  path) echo "$BIN" ;;
  *) exec "$BIN" "$@" ;;
esac
