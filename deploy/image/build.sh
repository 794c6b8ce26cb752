#!/usr/bin/env bash
# Builds the servers' OCI image with buildah, from scratch (no registry is
# pulled from), and exports it as an OCI layout for inspection:
#
#   deploy/image/build.sh            (make image; IMAGE and IMAGE_TAG from the Makefile)
#
# 1. buildah (and ca-certificates) are installed from Debian when missing.
# 2. The build context $RS_STATE/image/context/rootfs gets: every ./services/*
#    binary built static (CGO_ENABLED=0, -trimpath, -buildvcs=true: the
#    toolchain records the commit; -ldflags -s -w and the build's version and
#    revision for pkg/platform/buildinfo) in /usr/local/bin;
#    Debian's CA bundle (/etc/ssl/certs/ca-certificates.crt, package
#    ca-certificates); /etc/passwd and /etc/group with root and the user
#    resultsync (65532:65532, no shell, no home); the gateway's OpenAPI
#    document in /usr/share/resultsync; an empty /tmp (1777).
# 3. `buildah build` of deploy/image/Containerfile (FROM scratch) tags
#    $IMAGE:$IMAGE_TAG in buildah's storage, with the OCI labels source,
#    revision (git HEAD, "-dirty" for a modified tree), version ($IMAGE_TAG)
#    and created (the commit's time for a clean tree, so a rebuild of one
#    commit gives the same image; now otherwise; SOURCE_DATE_EPOCH wins).
# 4. `buildah push` writes it to the OCI layout $RS_STATE/image/oci (ref name
#    $IMAGE:$IMAGE_TAG), which deploy/image's test reads. Push it to your
#    registry with `buildah push $IMAGE:$IMAGE_TAG docker://<registry>/...`.
#
# Containers are not run here: this machine's runtime refuses to start them
# (docs/deploy-kubernetes.md, "The image").
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=deploy/local/lib.sh
. "$HERE/../local/lib.sh"
cd "$RS_ROOT"

IMAGE=${IMAGE:-registry.example.com/resultsync/resultsync}
IMAGE_TAG=${IMAGE_TAG:-0.1.0}
SOURCE=${IMAGE_SOURCE:-https://github.com/resultsync/resultsync}
GO=${GO:-go}
REF=$IMAGE:$IMAGE_TAG
OUT=$RS_STATE/image
CTX=$OUT/context
OCI=$OUT/oci

command -v buildah >/dev/null 2>&1 || need_apt buildah
need_apt ca-certificates
[ -s /etc/ssl/certs/ca-certificates.crt ] || die "/etc/ssl/certs/ca-certificates.crt is missing: run update-ca-certificates"

REVISION=$(git rev-parse HEAD)
if [ -z "$(git status --porcelain 2>/dev/null)" ]; then
  DIRTY=
  EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct HEAD)}
else
  DIRTY=-dirty
  EPOCH=${SOURCE_DATE_EPOCH:-$(date +%s)}
  log "the work tree has changes: revision $REVISION$DIRTY"
fi
REVISION=$REVISION$DIRTY
CREATED=$(date -u -d "@$EPOCH" +%Y-%m-%dT%H:%M:%SZ)

rm -rf "$CTX"
ROOTFS=$CTX/rootfs
mkdir -p "$ROOTFS/usr/local/bin" "$ROOTFS/etc/ssl/certs" "$ROOTFS/usr/share/resultsync" "$ROOTFS/tmp"

log "building the servers (static, -trimpath) for $REF at $REVISION"
BUILDINFO=github.com/resultsync/resultsync/pkg/platform/buildinfo
CGO_ENABLED=0 GOOS=linux "$GO" build -trimpath -buildvcs=true \
  -ldflags "-s -w -X $BUILDINFO.version=$IMAGE_TAG -X $BUILDINFO.revision=$REVISION" \
  -o "$ROOTFS/usr/local/bin/" ./services/*/

install -m 0644 /etc/ssl/certs/ca-certificates.crt "$ROOTFS/etc/ssl/certs/ca-certificates.crt"
install -m 0644 gen/openapiv2/resultsync.swagger.json "$ROOTFS/usr/share/resultsync/resultsync.swagger.json"
printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' 'resultsync:x:65532:65532:resultsync:/nonexistent:/sbin/nologin' >"$ROOTFS/etc/passwd"
printf '%s\n' 'root:x:0:' 'resultsync:x:65532:' >"$ROOTFS/etc/group"
chmod 0644 "$ROOTFS/etc/passwd" "$ROOTFS/etc/group"
chmod 0755 "$ROOTFS/usr/local/bin/"*
chmod 1777 "$ROOTFS/tmp"

old=$(buildah images --quiet --no-trunc "$REF" 2>/dev/null || true)
log "buildah build $REF (FROM scratch)"
buildah build --quiet --layers=false --timestamp "$EPOCH" \
  --build-arg SOURCE="$SOURCE" --build-arg REVISION="$REVISION" \
  --build-arg VERSION="$IMAGE_TAG" --build-arg CREATED="$CREATED" \
  -f "$HERE/Containerfile" -t "$REF" "$CTX" >/dev/null
new=$(buildah images --quiet --no-trunc "$REF")
if [ -n "$old" ] && [ "$old" != "$new" ]; then
  buildah rmi "$old" >/dev/null 2>&1 || true # the previous build of this tag
fi

rm -rf "$OCI"
buildah push --quiet "$REF" "oci:$OCI:$REF" >/dev/null
log "image $REF: id ${new#sha256:}, $(du -sh "$OCI" | cut -f1) in the OCI layout $OCI"
