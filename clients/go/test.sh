#!/usr/bin/env bash
# Runs the Go client's checks and tests: go mod tidy -diff, go vet, then
# go test -race of the module: the helper against in-process fakes, and
# against the running servers (RS_RESULTS_ADDR; the local stack's port by
# default; RS_RESULTS_TLS_ADDR, RS_TLS_DIR and RS_TLS_OTHER_DIR for the TLS
# tests and examples, set by deploy/local/test-clients.sh), and every
# ```go example of the documentation (examples_test.go). Tests that need
# the servers are skipped only when RS_RESULTS_ADDR is unset, which this
# script never leaves it.
#
#   clients/go/test.sh [go test args]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
: "${GO:=go}"
export RS_RESULTS_ADDR=${RS_RESULTS_ADDR:-127.0.0.1:7101}
"$GO" mod tidy -diff
"$GO" vet ./...
"$GO" test -race -count=1 -v "$@" ./... | grep -E '^\s*(--- |ok|FAIL|PASS|panic|\S+_test\.go:)'
echo "clients/go: go vet clean, tests passed"
