#!/usr/bin/env bash
# Generates the local stack's private CA and its certificates with openssl
# (Debian's) into $RS_TLS_DIR ($RS_STATE/tls by default):
#
#   ca.pem, ca-key.pem          the private CA (the key never leaves this directory)
#   server.pem, server-key.pem  the servers' certificate: localhost, 127.0.0.1, ::1,
#                               usable for serving and as a client (the gateway's
#                               calls to the backends)
#   client.pem, client-key.pem  a caller's certificate (CN resultsync-client)
#   env.sh                      the settings that turn TLS on, to source before
#                               starting the servers (docs/security.md)
#
#   deploy/local/tls.sh           create what is missing (an existing CA is kept)
#   deploy/local/tls.sh --renew   issue new server and client certificates from the
#                                 same CA, replacing the files in place: running
#                                 servers serve them from their next handshake
#   deploy/local/tls.sh --force   a new CA and new certificates
#
# Keys are EC P-256, certificates valid RS_TLS_DAYS days (default 30; the CA
# 365). Every file is written to a temporary name and renamed, so a reader
# never sees half a file.
set -euo pipefail
# shellcheck source=deploy/local/env.sh
. "$(dirname "$0")/env.sh"

DIR=${RS_TLS_DIR:-$RS_STATE/tls}
DAYS=${RS_TLS_DAYS:-30}
mode=${1:-}
case "$mode" in
  "" | --renew | --force) ;;
  *) echo "usage: $0 [--renew|--force]" >&2; exit 2 ;;
esac

command -v openssl >/dev/null || { echo "ERROR: openssl is missing (apt-get install openssl)" >&2; exit 1; }
mkdir -p "$DIR"
chmod 700 "$DIR"
umask 077
tmp=$(mktemp -d "$DIR/.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# key FILE: a new EC P-256 private key (PKCS#8).
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

if [ "$mode" = --force ] || [ ! -s "$DIR/ca.pem" ] || [ ! -s "$DIR/ca-key.pem" ]; then
  key "$tmp/ca-key.pem"
  openssl req -x509 -new -key "$tmp/ca-key.pem" -sha256 -days 365 -subj "/CN=resultsync local CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$tmp/ca.pem"
  mv "$tmp/ca-key.pem" "$DIR/ca-key.pem"
  mv "$tmp/ca.pem" "$DIR/ca.pem"
  mode=--force # a new CA: every certificate is issued again
  echo "created the CA $DIR/ca.pem" >&2
fi

# issue NAME CN SAN: NAME.pem and NAME-key.pem signed by the CA.
issue() {
  local name=$1 cn=$2 san=$3
  if [ "$mode" = "" ] && [ -s "$DIR/$name.pem" ] && [ -s "$DIR/$name-key.pem" ]; then
    return 0
  fi
  key "$tmp/$name-key.pem"
  openssl req -new -key "$tmp/$name-key.pem" -subj "/CN=$cn" -out "$tmp/$name.csr"
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
    "extendedKeyUsage=serverAuth,clientAuth" "subjectAltName=$san" >"$tmp/$name.ext"
  openssl x509 -req -in "$tmp/$name.csr" -CA "$DIR/ca.pem" -CAkey "$DIR/ca-key.pem" -CAcreateserial \
    -CAserial "$tmp/ca.srl" -sha256 -days "$DAYS" -extfile "$tmp/$name.ext" -out "$tmp/$name.pem" 2>/dev/null
  # The key first, then the certificate: a server that reads the pair in
  # between keeps its previous pair (they do not match) until both are new.
  mv "$tmp/$name-key.pem" "$DIR/$name-key.pem"
  mv "$tmp/$name.pem" "$DIR/$name.pem"
  echo "issued $DIR/$name.pem (CN $cn, $DAYS days)" >&2
}

issue server localhost "DNS:localhost,IP:127.0.0.1,IP:::1"
issue client resultsync-client "DNS:resultsync-client"
chmod 644 "$DIR/ca.pem" "$DIR/server.pem" "$DIR/client.pem"

cat >"$tmp/env.sh" <<ENV
# shellcheck shell=bash
# Written by deploy/local/tls.sh: source it before starting the servers to run
# every resultsync hop over mutual TLS with the local CA (docs/security.md).
export RS_TLS_CERT_FILE=$DIR/server.pem
export RS_TLS_KEY_FILE=$DIR/server-key.pem
export RS_TLS_CA_FILE=$DIR/ca.pem
export RS_TLS_CLIENT_AUTH=true
export RS_GATEWAY_BACKEND_TLS_CA_FILE=$DIR/ca.pem
export RS_GATEWAY_BACKEND_TLS_CERT_FILE=$DIR/server.pem
export RS_GATEWAY_BACKEND_TLS_KEY_FILE=$DIR/server-key.pem
ENV
chmod 644 "$tmp/env.sh"
mv "$tmp/env.sh" "$DIR/env.sh"
