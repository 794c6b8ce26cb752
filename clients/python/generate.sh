#!/usr/bin/env bash
# Regenerates the Python client's protobuf and gRPC modules
# (src/resultsync_client/fitness/v1/)
# from proto/ with PyPI's grpcio-tools (its own protoc; the messages' .pyi
# stubs) and mypy-protobuf's protoc-gen-mypy_grpc (the typed gRPC stubs,
# *_pb2_grpc.pyi), pinned in requirements-generate.txt and installed once
# into a project-local venv.
# Deterministic: run twice, nothing changes (make check-generate relies on it).
#
#   clients/python/generate.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=$root/.local/clients/python/gen-venv
req=$here/requirements-generate.txt
stamp=$venv/.installed

if [ ! -x "$venv/bin/python" ] || ! cmp -s "$req" "$stamp"; then
  echo "clients/python: installing the generator ($(tr '\n' ' ' <"$req"))" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
  cp "$req" "$stamp"
fi

out=$here/src/resultsync_client
rm -rf "$out/fitness" "$here/src/fitness"
mkdir -p "$out/fitness/v1"
# protoc names the modules by the proto path: fitness/v1/result.proto is the
# package fitness.v1 (module result_pb2), importing its siblings as
# "from fitness.v1 import reconcile_pb2". The distribution ships them inside
# its own package, resultsync_client.fitness.v1, so that a top-level
# "fitness" of another distribution cannot collide with them: the absolute
# imports and the modules' names are rewritten (the proto file names in the
# descriptor pool stay fitness/v1/*.proto), and nothing may refer to the
# top-level fitness afterwards.
(cd "$root/proto" && "$venv/bin/python" -m grpc_tools.protoc -I . \
  --python_out="$out" --pyi_out="$out" --grpc_python_out="$out" \
  --plugin=protoc-gen-mypy_grpc="$venv/bin/protoc-gen-mypy_grpc" --mypy_grpc_out="$out" fitness/v1/*.proto)
sed -i -E \
  -e 's/^from fitness\.v1 import /from resultsync_client.fitness.v1 import /' \
  -e "s/(BuildTopDescriptorsAndMessages\(DESCRIPTOR, )'fitness\.v1\./\1'resultsync_client.fitness.v1./" \
  "$out"/fitness/v1/*.py "$out"/fitness/v1/*.pyi
if grep -nE '^(from|import) fitness\b|[^_.]fitness\.v1\.[a-z_]+_pb2\b' "$out"/fitness/v1/*.py "$out"/fitness/v1/*.pyi; then
  echo "clients/python: generated code still refers to the top-level fitness package (above)" >&2
  exit 1
fi
for pkg in "$out/fitness" "$out/fitness/v1"; do
  printf '"""Generated from resultsync'"'"'s proto/ by clients/python/generate.sh: do not edit."""\n' >"$pkg/__init__.py"
done
# PEP 561: the package's modules are typed (the .pyi stubs beside them;
# resultsync_client's own py.typed covers its subpackages, this one says so
# where the generated code is).
: >"$out/fitness/py.typed"
# resultsync's gRPC service config, shipped in the package (connect() uses
# it): a copy of the canonical file (test/contract checks the copies).
cp "$root/clients/go/serviceconfig/service_config.json" "$out/service_config.json"
