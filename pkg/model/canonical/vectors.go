package canonical

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
)

//go:embed testdata/digest_vectors.json
var vectorsJSON []byte

// Vector is one shared test vector: a record, its canonical string and
// digest, and its version string and version digest (digests as decimal
// strings, as JSON numbers cannot hold every uint64).
type Vector struct {
	Name             string `json:"name"`
	Record           Record `json:"record"`
	Canonical        string `json:"canonical"`
	Digest           string `json:"digest"`
	VersionCanonical string `json:"version_canonical"`
	VersionDigest    string `json:"version_digest"`
}

// DigestValue parses the vector's digest.
func (v Vector) DigestValue() uint64 {
	d, _ := strconv.ParseUint(v.Digest, 10, 64)
	return d
}

// VersionDigestValue parses the vector's version digest.
func (v Vector) VersionDigestValue() uint64 {
	d, _ := strconv.ParseUint(v.VersionDigest, 10, 64)
	return d
}

// Vectors returns the shared digest test vectors (testdata/digest_vectors.json)
// that Go, MySQL, MariaDB and ClickHouse (18.16 and current) must all
// reproduce.
func Vectors() ([]Vector, error) {
	var vs []Vector
	if err := json.Unmarshal(vectorsJSON, &vs); err != nil {
		return nil, fmt.Errorf("parsing digest vectors: %w", err)
	}
	return vs, nil
}
