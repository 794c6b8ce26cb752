#!/usr/bin/env bash
# Runs the Python client's tests (pytest) against the running servers
# (RS_RESULTS_ADDR, RS_RECONCILE_ADDR, RS_REPAIR_ADDR; the local stack's
# ports by default). Installs the package and pytest into a project-local
# venv first (pinned by constraints.txt; skipped when already installed).
#
#   clients/python/test.sh [pytest args]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=$root/.local/clients/python/venv
stamp=$venv/.installed

want=$(cat "$here/pyproject.toml" "$here/constraints.txt" | sha256sum | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "clients/python: installing the package and its test dependencies into $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -c "$here/constraints.txt" -e "$here[test]"
  echo "$want" >"$stamp"
fi
cd "$here"
exec "$venv/bin/python" -m pytest -v -p no:cacheprovider "$@"
