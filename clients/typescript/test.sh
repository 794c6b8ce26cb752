#!/usr/bin/env bash
# Runs the TypeScript client's tests (node's test runner, on the tsc build)
# against the running servers (RS_RESULTS_ADDR, RS_RECONCILE_ADDR,
# RS_REPAIR_ADDR; the local stack's ports by default). Installs the pinned
# dependencies first (npm ci; skipped when node_modules matches the lock).
#
#   clients/typescript/test.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/install.sh"
cd "$here"
rm -rf dist
node_modules/.bin/tsc -p tsconfig.json
exec node --test --test-reporter=spec dist/test/
