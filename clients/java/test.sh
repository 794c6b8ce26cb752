#!/usr/bin/env bash
# Runs the Java client's tests (JUnit 5 through Maven Surefire) against the
# running servers (RS_RESULTS_ADDR, RS_RECONCILE_ADDR, RS_REPAIR_ADDR; the
# local stack's ports by default; RS_RESULTS_TLS_ADDR, RS_TLS_DIR and
# RS_TLS_OTHER_DIR for the TLS tests, set by deploy/local/test-clients.sh).
# Maven fetches the pinned dependencies into ~/.m2 on the first run. It runs
# `mvn package`: the tests, then the jar with its -sources and -javadoc jars
# in target/ (listed at the end).
#
# The documentation's ```java examples (README.md, clients/*/README.md,
# docs/*.md) become classes with a main in target/generated-test-sources/examples
# (clients/examples.py java: the block's import lines on top, its statements
# in main), compiled with the tests and run by ExamplesTest.
#
#   clients/java/test.sh [maven args]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
rm -rf target/generated-test-sources/examples target/examples
python3 "$here/../examples.py" java target
# Surefire's summary ("Tests run: N, Failures: 0, ...") and any failure are
# kept; the build's other lines are not.
set +e
mvn -B -ntp -Dstyle.color=never "$@" package >target.log 2>&1
rc=$?
set -e
grep -E '^\[(INFO|ERROR|WARNING)\] (Tests run:|Running |BUILD|FAIL|ERROR)|^\[ERROR\]' target.log | grep -v '^\[ERROR\] *$' || true
if [ "$rc" != 0 ]; then
  echo "clients/java: mvn test failed (exit $rc); the last lines of its log:" >&2
  tail -40 target.log >&2
fi
rm -f target.log
if [ "$rc" = 0 ]; then
  for j in target/resultsync-client-*.jar; do echo "clients/java: built $j"; done
  for k in "" -sources -javadoc; do
    ls target/resultsync-client-*"$k".jar >/dev/null 2>&1 || { echo "clients/java: no$k jar" >&2; exit 1; }
  done
fi
exit "$rc"
