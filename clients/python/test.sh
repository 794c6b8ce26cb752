#!/usr/bin/env bash
# Runs the Python client's tests (pytest) against the running servers
# (RS_RESULTS_ADDR, RS_RECONCILE_ADDR, RS_REPAIR_ADDR; the local stack's
# ports by default; RS_RESULTS_TLS_ADDR, RS_TLS_DIR and RS_TLS_OTHER_DIR for
# the TLS tests, set by deploy/local/test-clients.sh). Installs the package
# and its test dependencies into a project-local venv first (pinned by
# constraints.txt; skipped when already installed). Before the tests, mypy
# --strict checks the package and the tests against the typed stubs; after
# them, the package is built into a wheel (pip wheel) in
# .local/clients/python/dist, installed into a scratch venv and imported;
# the wheel holds resultsync_client (with the generated
# resultsync_client.fitness.v1) and nothing else.
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
"$venv/bin/python" -m mypy
"$venv/bin/python" -m pytest -v -p no:cacheprovider "$@"

dist=$root/.local/clients/python/dist
# setuptools' build/ would carry modules of an earlier layout into the wheel.
rm -rf "$dist" "$dist.venv" "$here/build"
"$venv/bin/pip" wheel --quiet --disable-pip-version-check --no-deps -w "$dist" "$here"
python3 -m venv "$dist.venv"
"$dist.venv/bin/pip" install --quiet --disable-pip-version-check -c "$here/constraints.txt" "$dist"/resultsync_client-*.whl
(cd "$dist" && "$dist.venv/bin/python" -c '
import importlib.resources as r, importlib.util, resultsync_client, resultsync_client.fitness.v1.result_pb2_grpc
for pkg in ("resultsync_client", "resultsync_client.fitness"):
    assert r.files(pkg).joinpath("py.typed").is_file(), pkg + " has no py.typed"
assert r.files("resultsync_client.fitness.v1").joinpath("result_pb2_grpc.pyi").is_file(), "no typed gRPC stubs"
assert resultsync_client.SERVICE_CONFIG.startswith("{"), "no service config"
assert importlib.util.find_spec("fitness") is None, "the wheel installs a top-level fitness package"
')
python3 - "$dist"/resultsync_client-*.whl <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
other = [n for n in names if not n.startswith("resultsync_client/") and ".dist-info/" not in n]
assert not other, f"the wheel ships files outside resultsync_client: {other}"
PY
echo "clients/python: built $(basename "$dist"/resultsync_client-*.whl) (installed and imported in a scratch venv)"
