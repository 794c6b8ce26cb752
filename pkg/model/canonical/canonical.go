// Package canonical is the one definition of business equality for a fitness
// result: which fields count (id, version, deletion state, campaign, student,
// project, school, grade, result, unit) and how each is normalized (decimals
// with no insignificant zeros, canonical unit spelling, UTC milliseconds),
// and the per-record version fingerprint of VERSIONS depth. The write
// path normalizes with it before storing; reconciliation compares with it.
package canonical

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Scale is the number of fraction digits results are stored with
// (DECIMAL(12,3) in MySQL, Decimal(12, 3) in ClickHouse).
const Scale = 3

// MaxIntegerDigits bounds the integer part (12 digits of precision - Scale).
const MaxIntegerDigits = 9

// Decimal errors.
var (
	ErrNotDecimal     = errors.New("not a decimal number")
	ErrTooManyDigits  = fmt.Errorf("more than %d fraction digits", Scale)
	ErrOutOfPrecision = fmt.Errorf("more than %d integer digits", MaxIntegerDigits)
)

// Decimal parses s ("2.310", "+2.31", "002.31", "-0.0") and returns its
// canonical form: optional '-', no leading zeros except a single "0" before
// '.', no trailing fraction zeros, no trailing '.', zero as "0". It accepts at
// most Scale fraction digits and MaxIntegerDigits integer digits; exponents,
// NaN and infinities are rejected.
func Decimal(s string) (string, error) {
	in := strings.TrimSpace(s)
	neg := false
	switch {
	case strings.HasPrefix(in, "-"):
		neg, in = true, in[1:]
	case strings.HasPrefix(in, "+"):
		in = in[1:]
	}
	ip, fp, hasDot := strings.Cut(in, ".")
	if ip == "" && fp == "" {
		return "", fmt.Errorf("%q: %w", s, ErrNotDecimal)
	}
	if hasDot && fp == "" && ip == "" {
		return "", fmt.Errorf("%q: %w", s, ErrNotDecimal)
	}
	for _, part := range []string{ip, fp} {
		for _, r := range part {
			if r < '0' || r > '9' {
				return "", fmt.Errorf("%q: %w", s, ErrNotDecimal)
			}
		}
	}
	fp = strings.TrimRight(fp, "0")
	if len(fp) > Scale {
		return "", fmt.Errorf("%q: %w", s, ErrTooManyDigits)
	}
	ip = strings.TrimLeft(ip, "0")
	if len(ip) > MaxIntegerDigits {
		return "", fmt.Errorf("%q: %w", s, ErrOutOfPrecision)
	}
	if ip == "" {
		ip = "0"
	}
	out := ip
	if fp != "" {
		out += "." + fp
	}
	if neg && out != "0" {
		out = "-" + out
	}
	return out, nil
}

// Milli returns the canonical decimal d as an integer number of thousandths
// (2.31 -> 2310). d must already be canonical.
func Milli(d string) (int64, error) {
	c, err := Decimal(d)
	if err != nil {
		return 0, err
	}
	neg := strings.HasPrefix(c, "-")
	c = strings.TrimPrefix(c, "-")
	ip, fp, _ := strings.Cut(c, ".")
	fp += strings.Repeat("0", Scale-len(fp))
	var v int64
	for _, r := range ip + fp {
		v = v*10 + int64(r-'0')
	}
	if neg {
		v = -v
	}
	return v, nil
}

// units maps accepted spellings to the canonical unit.
var units = map[string]string{
	"m": "m", "meter": "m", "meters": "m", "metre": "m", "metres": "m",
	"cm": "cm", "centimeter": "cm", "centimeters": "cm", "centimetre": "cm", "centimetres": "cm",
	"s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
	"count": "count", "times": "count", "reps": "count", "repetitions": "count",
	"kg": "kg", "kilogram": "kg", "kilograms": "kg",
	"ml": "ml", "milliliter": "ml", "milliliters": "ml", "millilitre": "ml", "millilitres": "ml",
}

// Unit returns the canonical spelling of u (case and surrounding space are
// ignored), or false when the unit is unknown.
func Unit(u string) (string, bool) {
	c, ok := units[strings.ToLower(strings.TrimSpace(u))]
	return c, ok
}

// EventID is the deterministic identity of the event for (dataID, version).
// "fitness-result-<data_id>-v<version>".
func EventID(dataID, version int64) string {
	var buf [64]byte // the longest id is 55 bytes
	return string(AppendEventID(buf[:0], dataID, version))
}

// AppendEventID appends EventID(dataID, version) to b, for a caller that
// compares it without allocating.
func AppendEventID(b []byte, dataID, version int64) []byte {
	b = append(b, "fitness-result-"...)
	b = strconv.AppendInt(b, dataID, 10)
	b = append(b, "-v"...)
	return strconv.AppendInt(b, version, 10)
}
