#!/usr/bin/env bash
# Runs every benchmark program on each MySQL-family engine of the local stack
# (MySQL 9.7 and MariaDB 10.11 by default) in one run, keeps each output under
# $RS_STATE/bench/, and ends with ONE summary table: every program prints
# SUMMARY|bench|figure|value|ceiling|ratio|target|met lines (the ceiling
# measured in the same run), collected here, engine beside engine. The
# figures of a shared, loaded machine are noisy: compare ratios, not rates.
#
#   bench/run.sh [bench ...]        (default: writepath relay consumer reconcile repair e2e)
#   RS_BENCH_ENGINES="mysql" bench/run.sh writepath
set -euo pipefail
# shellcheck source=deploy/local/lib.sh
. "$(dirname "$0")/../deploy/local/lib.sh"
cd "$RS_ROOT"

engines=${RS_BENCH_ENGINES:-mysql mariadb}
benches=("$@")
[ ${#benches[@]} -gt 0 ] || benches=(writepath relay consumer reconcile repair e2e)
out=$RS_STATE/bench
mkdir -p "$out"
failed=0

for b in "${benches[@]}"; do
  [ -d "bench/$b" ] || die "no benchmark bench/$b"
  for e in $engines; do
    port=$(rs_mysql_engine_port "$e") || die "unknown engine $e"
    log "bench/$b on $e (127.0.0.1:$port)"
    # A failed program still leaves its output; the table shows it failed.
    RS_MYSQL_ENGINE=$e RS_MYSQL_PORT=$port go run "./bench/$b" 2>&1 | tee "$out/$b-$e.txt" ||
      { log "bench/$b on $e failed"; failed=1; }
  done
done

echo
echo "== summary: each benchmark's figure, its ceiling in the same run, the ratio and the target ($(nproc) cores; full outputs in $out)"
{
  printf 'bench|engine|figure|value|ceiling|ratio|target|met\n'
  for b in "${benches[@]}"; do
    for e in $engines; do
      f=$out/$b-$e.txt
      if grep -q '^SUMMARY|' "$f" 2>/dev/null; then
        grep '^SUMMARY|' "$f" | awk -F'|' -v OFS='|' -v e="$e" '{ $1 = $2; $2 = e; print }'
      else
        printf '%s|%s|(no SUMMARY line: failed?)|-|-|-|-|-\n' "$b" "$e"
      fi
    done
  done
} | column -t -s'|'
exit "$failed"
