#!/usr/bin/env bash
# Regenerates the Java client's code (src/gen/java/) from proto/ with protoc
# and protoc-gen-grpc-java, the executables Maven Central serves, pinned
# below and fetched once by Maven into .local/clients/java/bin; the
# repository's pinned buf drives them (buf.gen.yaml).
# Deterministic: run twice, nothing changes (make check-generate relies on it).
#
#   clients/java/generate.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# protoc matches the protobuf-java runtime of pom.xml; protoc-gen-grpc-java
# matches its grpc-java (1.83.1: the newest whose linux-x86_64 executable
# Maven Central serves).
PROTOC=com.google.protobuf:protoc:4.33.5:exe:linux-x86_64
GRPC_JAVA=io.grpc:protoc-gen-grpc-java:1.83.1:exe:linux-x86_64
bin=$root/.local/clients/java/bin
stamp=$bin/.installed

if [ "$(cat "$stamp" 2>/dev/null)" != "$PROTOC $GRPC_JAVA" ]; then
  echo "clients/java: fetching $PROTOC and $GRPC_JAVA" >&2
  rm -rf "$bin"
  mkdir -p "$bin"
  for a in "$PROTOC" "$GRPC_JAVA"; do
    mvn -B -q -Dstyle.color=never org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy -Dartifact="$a" \
      -DoutputDirectory="$bin" -Dmdep.stripVersion=true -Dmdep.stripClassifier=true
  done
  for f in "$bin"/*.exe; do mv "$f" "${f%.exe}"; done
  chmod +x "$bin"/*
  echo "$PROTOC $GRPC_JAVA" >"$stamp"
fi
if [ ! -x "$root/bin/buf" ]; then
  (cd "$root" && go build -o bin/buf github.com/bufbuild/buf/cmd/buf)
fi
cd "$root"
bin/buf generate --template clients/java/buf.gen.yaml
# resultsync's gRPC service config, a resource of the jar (Resultsync's
# channels use it, ServiceConfig): a copy of the canonical file
# (test/contract checks the copies).
mkdir -p clients/java/src/main/resources/io/github/resultsync/client
cp clients/go/serviceconfig/service_config.json clients/java/src/main/resources/io/github/resultsync/client/service_config.json
