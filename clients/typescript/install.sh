#!/usr/bin/env bash
# Installs the TypeScript client's pinned dependencies (npm ci from
# package-lock.json) unless node_modules already matches the lock file.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
stamp=$here/node_modules/.resultsync-lock
want=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "clients/typescript: npm ci" >&2
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" >"$stamp"
fi
