package canonical

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Record holds the fields that define business equality of a result.
// Timestamps, the user and the shard are not part of it.
type Record struct {
	DataID    int64  `json:"data_id"`
	Version   int64  `json:"version"`
	IsDeleted bool   `json:"is_deleted"`
	DetectID  int64  `json:"detect_id"`
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
//	data_id|version|is_deleted|detect_id|project_id|school_id|grade|result_milli|unit
//
// Integers only: no engine's printing of a decimal enters it (ClickHouse
// 18.16 prints 2.310, 21.9 and later 2.31). MySQL and MariaDB
// (fitness_result.content_digest) and ClickHouse
// (fitness_result_versions.content_digest) build the same string from the
// values they store.
func String(r Record) (string, error) {
	milli, err := Milli(r.Result)
	if err != nil {
		return "", fmt.Errorf("record %d: %w", r.DataID, err)
	}
	del := "0"
	if r.IsDeleted {
		del = "1"
	}
	return strings.Join([]string{
		strconv.FormatInt(r.DataID, 10), strconv.FormatInt(r.Version, 10), del,
		strconv.FormatInt(r.DetectID, 10), strconv.FormatInt(r.ProjectID, 10), strconv.FormatInt(r.SchoolID, 10),
		strconv.FormatInt(int64(r.Grade), 10), strconv.FormatInt(milli, 10), r.Unit,
	}, "|"), nil
}

// MySQLString and ClickHouseString are String as MySQL/MariaDB and
// ClickHouse build it from the columns of fitness_result and
// fitness_result_versions; the stored content_digest columns hash the same
// expressions (pkg/schema migrations), and the shared vectors prove that
// every engine agrees with String.
const (
	MySQLString = "CONCAT_WS('|', data_id, version, is_deleted, detect_id, project_id, school_id, grade, CAST(result * 1000 AS SIGNED), unit)"

	ClickHouseString = "concat(toString(data_id), '|', toString(version), '|', toString(is_deleted), '|', toString(detect_id), '|', " +
		"toString(project_id), '|', toString(school_id), '|', toString(grade), '|', toString(toInt64(result * 1000)), '|', unit)"
)

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
	sum := sha256.Sum256([]byte(s))
	return binary.BigEndian.Uint64(sum[:8]), nil
}
