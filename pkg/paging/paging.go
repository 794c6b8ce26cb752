// Package paging holds the AIP-style pagination rules shared by the list
// RPCs: page_size defaults and caps, and opaque page tokens carrying a
// position.
package paging

import (
	"encoding/base64"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Size returns the effective page size: def when n is 0, max when n exceeds
// it, and INVALID_ARGUMENT when n is negative.
func Size(n int32, def, max int) (int, error) {
	switch {
	case n < 0:
		return 0, status.Error(codes.InvalidArgument, "page_size must not be negative")
	case n == 0:
		return def, nil
	case int(n) > max:
		return max, nil
	}
	return int(n), nil
}

// Token encodes a positive position as an opaque page token.
func Token(pos int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(pos, 10)))
}

// Position decodes a token made by Token; 0 for the empty token (first
// page), INVALID_ARGUMENT for anything malformed.
func Position(tok string) (int64, error) {
	if tok == "" {
		return 0, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, status.Error(codes.InvalidArgument, "malformed page_token")
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || v <= 0 {
		return 0, status.Error(codes.InvalidArgument, "malformed page_token")
	}
	return v, nil
}
