package mysqldb

import "strings"

// Placeholders returns n bind placeholders separated by commas, "?,?,?",
// for an IN list (`id IN (` + Placeholders(len(ids)) + `)`); "" when n <= 0.
func Placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?,", n-1) + "?"
}

// Rows returns n parenthesized rows of width placeholders each, separated by
// commas, "(?,?),(?,?)", for a multi-row VALUES clause; "" when n <= 0.
func Rows(n, width int) string {
	if n <= 0 {
		return ""
	}
	row := "(" + Placeholders(width) + ")"
	return strings.Repeat(row+",", n-1) + row
}
