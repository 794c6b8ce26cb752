#!/usr/bin/env bash
# Runs the TypeScript client's tests (node's test runner, on the tsc build)
# against the running servers (RS_RESULTS_ADDR, RS_RECONCILE_ADDR,
# RS_REPAIR_ADDR; the local stack's ports by default; RS_RESULTS_TLS_ADDR,
# RS_TLS_DIR and RS_TLS_OTHER_DIR for the TLS tests, set by
# deploy/local/test-clients.sh). Installs the pinned dependencies first (npm
# ci; skipped when node_modules matches the lock).
#
# After the tests the package is packed (npm pack) as users install it.
#
# The documentation's ```ts examples (README.md, clients/*/README.md,
# docs/*.md; clients/examples.py extracts them) are written to examples-gen/,
# type-checked against the built package (they import "@resultsync/client")
# and run by src/test/examples.test.ts.
#
#   clients/typescript/test.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/install.sh"
cd "$here"
rm -rf dist examples-gen
node_modules/.bin/tsc -p tsconfig.json
mkdir -p examples-gen
python3 "$here/../examples.py" json typescript >examples-gen/examples.json
python3 - examples-gen <<'PY'
import json, os, sys
out = sys.argv[1]
for ex in json.load(open(os.path.join(out, "examples.json"))):
    with open(os.path.join(out, ex["name"] + ".ts"), "w") as f:
        f.write(f"// {ex['file']}:{ex['line']} (extracted by clients/examples.py; fresh ids)\n" + ex["code"])
PY
node_modules/.bin/tsc -p tsconfig.examples.json
node --test --test-reporter=spec dist/test/

# The package as users get it: npm pack (its prepare script builds dist/)
# into .local/clients/typescript; the tarball must hold the build and no tests.
out=$here/../../.local/clients/typescript
rm -rf "$out" && mkdir -p "$out"
tgz=$(npm pack --silent --pack-destination "$out" | tail -1)
files=$(tar -tzf "$out/$tgz")
grep -qx 'package/dist/index.js' <<<"$files" || { echo "clients/typescript: $tgz has no dist/index.js" >&2; exit 1; }
grep -qx 'package/src/service_config.json' <<<"$files" || { echo "clients/typescript: $tgz has no service config" >&2; exit 1; }
if grep -q '^package/\(dist\|src\)/test/' <<<"$files"; then echo "clients/typescript: $tgz ships the tests" >&2; exit 1; fi
echo "clients/typescript: packed $tgz ($(wc -l <<<"$files") files)"
