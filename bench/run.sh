#!/usr/bin/env bash
# Runs every benchmark program on each MySQL-family engine of the local stack
# (MySQL 9.7 and MariaDB 10.11 by default) in one run, keeps each output under
# $RS_STATE/bench/, and ends with the figures that carry a target, engine
# beside engine.
#
#   bench/run.sh [bench ...]        (default: writepath relay consumer reconcile repair)
#   RS_BENCH_ENGINES="mysql" bench/run.sh writepath
set -euo pipefail
# shellcheck source=deploy/local/lib.sh
. "$(dirname "$0")/../deploy/local/lib.sh"
cd "$RS_ROOT"

engines=${RS_BENCH_ENGINES:-mysql mariadb}
benches=("$@")
[ ${#benches[@]} -gt 0 ] || benches=(writepath relay consumer reconcile repair)
out=$RS_STATE/bench
mkdir -p "$out"

for b in "${benches[@]}"; do
  [ -d "bench/$b" ] || die "no benchmark bench/$b"
  for e in $engines; do
    port=$(rs_mysql_engine_port "$e") || die "unknown engine $e"
    log "bench/$b on $e (127.0.0.1:$port)"
    RS_MYSQL_ENGINE=$e RS_MYSQL_PORT=$port go run "./bench/$b" 2>&1 | tee "$out/$b-$e.txt"
  done
done

echo
echo "== summary: the figures with a target, per engine (full outputs in $out)"
for b in "${benches[@]}"; do
  for e in $engines; do
    grep -i 'target' "$out/$b-$e.txt" | sed "s/^/  $b  $(printf '%-8s' "$e")  /" || echo "  $b  $e  (no target line)"
  done
done
