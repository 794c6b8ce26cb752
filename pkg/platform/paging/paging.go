// Package paging holds the AIP-style pagination rules shared by the list
// RPCs: page_size defaults and caps, and opaque page tokens carrying a
// position, bound to the query they were issued for and checked, so that a
// token of another query and a forged or truncated one are INVALID_ARGUMENT.
package paging

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"

	"github.com/resultsync/resultsync/pkg/platform/apierr"
)

// Size returns the effective page size: def when n is 0, max when n exceeds
// it, and INVALID_ARGUMENT when n is negative.
func Size(n int32, def, max int) (int, error) {
	switch {
	case n < 0:
		return 0, (&apierr.Violations{{Field: "page_size", Description: "must not be negative"}}).Err()
	case n == 0:
		return def, nil
	case int(n) > max:
		return max, nil
	}
	return int(n), nil
}

// Token encodes a positive position as an opaque page token of a list
// whose filter the token need not carry (Encode with an empty scope).
func Token(pos int64) string { return Encode("", pos) }

// Position decodes a token made by Token (Decode with an empty scope).
func Position(tok string) (int64, error) { return Decode(tok, "") }

// Encode returns the opaque page token of the positive position pos in the
// list query scope (the filter and caller it was issued for, in any
// injective spelling): a checksum, the position and the scope.
func Encode(scope string, pos int64) string {
	body := strconv.FormatInt(pos, 10) + "|" + scope
	raw := binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE([]byte(body)))
	return base64.RawURLEncoding.EncodeToString(append(raw, body...))
}

// errMalformed is a page token Encode did not make.
var errMalformed = apierr.ReasonError(codes.InvalidArgument, apierr.InvalidPageToken, "malformed page_token", "field", "page_token")

// Decode returns the position of a token made by Encode for the same scope:
// 0 for the empty token (the first page), INVALID_ARGUMENT for a token of
// another scope and for a forged, truncated or otherwise malformed one (the
// checksum catches a cut or changed token; it is no secret, a caller can
// only ever page through a query it can run).
func Decode(tok, scope string) (int64, error) {
	if tok == "" {
		return 0, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(raw) < 4 || binary.BigEndian.Uint32(raw) != crc32.ChecksumIEEE(raw[4:]) {
		return 0, errMalformed
	}
	pos, issued, _ := strings.Cut(string(raw[4:]), "|")
	if issued != scope {
		return 0, apierr.ReasonError(codes.InvalidArgument, apierr.InvalidPageToken, "page_token was issued for a different query", "field", "page_token")
	}
	v, err := strconv.ParseInt(pos, 10, 64)
	if err != nil || v <= 0 {
		return 0, errMalformed
	}
	return v, nil
}
