#!/usr/bin/env bash
# Runs every benchmark program on each MySQL-family engine of the local stack
# (MySQL 9.7 and MariaDB 10.11 by default) in one run, keeps each output under
# $RS_STATE/bench/, and ends with ONE summary table: every program prints
# SUMMARY|bench|figure|value|ceiling|ratio|target|verdict lines (the ceiling
# measured in the same run), collected here, engine beside engine. A verdict
# is "met" only when the target is met and the result was correct (every
# injected discrepancy found, every event applied...); the script exits
# non-zero on any "NOT met", or a program that failed, after printing the
# table either way. The figures of a shared, loaded machine are noisy:
# compare ratios, not rates.
#
#   bench/run.sh [bench ...]        (default: writepath relay consumer reconcile repair e2e idle)
#   bench/run.sh --table DIR bench...   (the table of earlier outputs in DIR only)
#   RS_BENCH_ENGINES="mysql" bench/run.sh writepath
set -euo pipefail
# shellcheck source=deploy/local/lib.sh
. "$(dirname "$0")/../deploy/local/lib.sh"
cd "$RS_ROOT"

engines=${RS_BENCH_ENGINES:-mysql mariadb}
out=$RS_STATE/bench

# table DIR BENCH...: the summary table of the outputs DIR/<bench>-<engine>.txt;
# returns non-zero when a verdict is NOT met (a target missed or a result found
# wrong) or a program printed no SUMMARY line.
table() {
  local dir=$1 b e f bad=0
  shift
  echo "== summary: each benchmark's figure, its ceiling in the same run, the ratio and the target ($(nproc) cores; full outputs in $dir)"
  {
    printf 'bench|engine|figure|value|ceiling|ratio|target|verdict\n'
    for b in "$@"; do
      for e in $engines; do
        f=$dir/$b-$e.txt
        if grep -q '^SUMMARY|' "$f" 2>/dev/null; then
          grep '^SUMMARY|' "$f" | awk -F'|' -v OFS='|' -v e="$e" '{ $1 = $2; $2 = e; print }'
        else
          printf '%s|%s|(no SUMMARY line: failed?)|-|-|-|-|NOT met: no result\n' "$b" "$e"
        fi
      done
    done
  } > "$dir/summary.txt"
  column -t -s'|' < "$dir/summary.txt"
  bad=$(awk -F'|' 'NR > 1 && $8 ~ /^NOT met/' "$dir/summary.txt" | wc -l)
  if [ "$bad" -gt 0 ]; then
    echo "== $bad verdict(s) NOT met"
    return 1
  fi
  echo "== every verdict met"
}

# bench/run.sh --table DIR BENCH...: only the table of earlier outputs (and its
# exit code); the harness test drives it.
if [ "${1:-}" = --table ]; then
  shift
  dir=$1
  shift
  table "$dir" "$@"
  exit
fi

benches=("$@")
[ ${#benches[@]} -gt 0 ] || benches=(writepath relay consumer reconcile repair e2e idle)
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
table "$out" "${benches[@]}" || failed=1
exit "$failed"
