package canonical

import (
	"crypto/md5" //nolint:gosec // a content fingerprint shared with MariaDB and ClickHouse, not a security boundary
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

// Fixed prints a decimal at the storage scale, as MariaDB prints
// DECIMAL(12,3) and ClickHouse prints Decimal(12, 3): "2.31" -> "2.310",
// "-1.5" -> "-1.500", "0" -> "0.000".
func Fixed(d string) (string, error) {
	m, err := Milli(d)
	if err != nil {
		return "", err
	}
	sign := ""
	if m < 0 {
		sign, m = "-", -m
	}
	return fmt.Sprintf("%s%d.%03d", sign, m/1000, m%1000), nil
}

// String is the canonical form of r: its equality fields joined by '|' in a
// fixed order, the result at the storage scale and deletion as 0/1:
//
//	data_id|version|is_deleted|detect_id|project_id|school_id|grade|result|unit
//
// MariaDB (fitness_result.content_digest) and ClickHouse
// (fitness_result_versions.content_digest) build the same string from the
// values they store.
func String(r Record) (string, error) {
	res, err := Fixed(r.Result)
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
		strconv.FormatInt(int64(r.Grade), 10), res, r.Unit,
	}, "|"), nil
}

// Digest is the first 8 bytes of MD5(String(r)) read big-endian: the value
// MariaDB computes as CAST(CONV(SUBSTR(MD5(s),1,16),16,10) AS UNSIGNED) and
// ClickHouse as reinterpretAsUInt64(reverse(substring(MD5(s),1,8))).
func Digest(r Record) (uint64, error) {
	s, err := String(r)
	if err != nil {
		return 0, err
	}
	sum := md5.Sum([]byte(s)) //nolint:gosec // see the import
	return binary.BigEndian.Uint64(sum[:8]), nil
}
