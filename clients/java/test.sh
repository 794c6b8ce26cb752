#!/usr/bin/env bash
# Runs the Java client's tests (JUnit 5 through Maven Surefire) against the
# running servers (RS_RESULTS_ADDR, RS_RECONCILE_ADDR, RS_REPAIR_ADDR; the
# local stack's ports by default). Maven fetches the pinned dependencies into
# ~/.m2 on the first run.
#
#   clients/java/test.sh [maven args]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
# Surefire's summary ("Tests run: N, Failures: 0, ...") and any failure are
# kept; the build's other lines are not.
set +e
mvn -B -ntp -Dstyle.color=never "$@" test >target.log 2>&1
rc=$?
set -e
grep -E '^\[(INFO|ERROR|WARNING)\] (Tests run:|Running |BUILD|FAIL|ERROR)|^\[ERROR\]' target.log | grep -v '^\[ERROR\] *$' || true
if [ "$rc" != 0 ]; then
  echo "clients/java: mvn test failed (exit $rc); the last lines of its log:" >&2
  tail -40 target.log >&2
fi
rm -f target.log
exit "$rc"
