package canonical

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Record holds the fields that define business equality of a result: every
// business field of the event. Timestamps, the schema version and the shard
// are not part of it.
type Record struct {
	DataID    int64  `json:"data_id"`
	Version   int64  `json:"version"`
	IsDeleted bool   `json:"is_deleted"`
	DetectID  int64  `json:"detect_id"`
	UserID    int64  `json:"user_id"` // the student the result is credited to
	ProjectID int64  `json:"project_id"`
	SchoolID  int64  `json:"school_id"`
	Grade     int32  `json:"grade"`
	Result    string `json:"result"` // any valid decimal spelling: "2.31" and "2.310" are equal
	Unit      string `json:"unit"`   // canonical unit
}

// String is the canonical form of r: its equality fields joined by '|' in a
// fixed order, the result as an integer number of thousandths of its unit
// (2.31 m -> 2310, -1.5 -> -1500, 0 -> 0) and deletion as 0/1:
//
//	data_id|version|is_deleted|detect_id|user_id|project_id|school_id|grade|result_milli|unit
//
// Integers only: no engine's printing of a decimal enters it (ClickHouse
// 18.16 prints 2.310, 21.9 and later 2.31). MySQL and MariaDB
// (fitness_result.content_digest) and ClickHouse
// (fitness_result_versions.content_digest) build the same string from the
// values they store. Its first three fields are VersionString.
func String(r Record) (string, error) {
	milli, err := Milli(r.Result)
	if err != nil {
		return "", fmt.Errorf("record %d: %w", r.DataID, err)
	}
	return strings.Join([]string{
		VersionString(r),
		strconv.FormatInt(r.DetectID, 10), strconv.FormatInt(r.UserID, 10), strconv.FormatInt(r.ProjectID, 10),
		strconv.FormatInt(r.SchoolID, 10), strconv.FormatInt(int64(r.Grade), 10), strconv.FormatInt(milli, 10), r.Unit,
	}, "|"), nil
}

// VersionString is the identity and version of r, the fields compared at
// VERSIONS depth:
//
//	data_id|version|is_deleted
func VersionString(r Record) string {
	del := "0"
	if r.IsDeleted {
		del = "1"
	}
	return strconv.FormatInt(r.DataID, 10) + "|" + strconv.FormatInt(r.Version, 10) + "|" + del
}

// MySQLString and ClickHouseString are String as MySQL/MariaDB and
// ClickHouse build it from the columns of fitness_result and
// fitness_result_versions; MySQLVersionString and ClickHouseVersionString
// are VersionString. The stored content_digest and version_digest columns
// hash the same expressions (pkg/storage/schema migrations), and the shared vectors
// prove that every engine agrees with String and VersionString.
const (
	MySQLString = "CONCAT_WS('|', data_id, version, is_deleted, detect_id, user_id, project_id, school_id, grade, CAST(result * 1000 AS SIGNED), unit)"

	ClickHouseString = "concat(toString(data_id), '|', toString(version), '|', toString(is_deleted), '|', toString(detect_id), '|', " +
		"toString(user_id), '|', toString(project_id), '|', toString(school_id), '|', toString(grade), '|', toString(toInt64(result * 1000)), '|', unit)"

	MySQLVersionString = "CONCAT_WS('|', data_id, version, is_deleted)"

	ClickHouseVersionString = "concat(toString(data_id), '|', toString(version), '|', toString(is_deleted))"
)

// MySQLHash and ClickHouseHash return the SQL of hash64 over the string
// expression s (one of the string constants above) in each engine.
func MySQLHash(s string) string {
	return "CAST(CONV(SUBSTR(SHA2(" + s + ", 256), 1, 16), 16, 10) AS UNSIGNED)"
}

// ClickHouseHash: see MySQLHash.
func ClickHouseHash(s string) string {
	return "reinterpretAsUInt64(reverse(substring(SHA256(" + s + "), 1, 8)))"
}

// Digest is the first 8 bytes of SHA-256(String(r)) read big-endian: the
// value MySQL and MariaDB compute as
// CAST(CONV(SUBSTR(SHA2(s, 256), 1, 16), 16, 10) AS UNSIGNED) and ClickHouse
// as reinterpretAsUInt64(reverse(substring(SHA256(s), 1, 8))). SHA-256, not
// MD5: MySQL 9 ships MD5 only as an optional component and forbids it in
// generated columns; SHA2 is built into every engine of the support matrix.
func Digest(r Record) (uint64, error) {
	s, err := String(r)
	if err != nil {
		return 0, err
	}
	return hash64(s), nil
}

// VersionDigest is the per-record version fingerprint: hash64 of
// VersionString(r), the same construction as Digest. Bucket aggregates XOR
// it over a bucket's records (campaign_bucket.version_xor and the scan-time
// aggregates of pkg/reconciliation/reconcile): a strong hash, so records of one bucket
// cancel only against an identical (data_id, version, is_deleted) on the
// other side, never against each other (the former (data_id << 20) ^
// (version << 1) ^ is_deleted term let two records with the same version gap
// cancel).
func VersionDigest(r Record) uint64 { return hash64(VersionString(r)) }

// hash64 is the first 8 bytes of SHA-256(s), big-endian.
func hash64(s string) uint64 {
	sum := sha256.Sum256([]byte(s))
	return binary.BigEndian.Uint64(sum[:8])
}
