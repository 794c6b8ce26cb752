#!/usr/bin/env bash
# Regenerates the TypeScript client's code (src/gen/) from proto/ with
# @bufbuild/protoc-gen-es (pinned in package.json, installed by npm ci from
# package-lock.json) run by the repository's pinned buf as a local plugin.
# Deterministic: run twice, nothing changes (make check-generate relies on it).
#
#   clients/typescript/generate.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
"$here/install.sh"
if [ ! -x "$root/bin/buf" ]; then
  (cd "$root" && go build -o bin/buf github.com/bufbuild/buf/cmd/buf)
fi
cd "$root"
bin/buf generate --template clients/typescript/buf.gen.yaml
# resultsync's gRPC service config, shipped in the package (transport()'s
# retries read it): a copy of the canonical file (test/contract checks the
# copies).
cp clients/go/serviceconfig/service_config.json clients/typescript/src/service_config.json
