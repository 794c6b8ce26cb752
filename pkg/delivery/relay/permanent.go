package relay

import (
	"errors"

	"github.com/go-sql-driver/mysql"
)

// permanentErrors are the MySQL/MariaDB server errors that retrying the same
// statement with the same configuration cannot fix: the account, its grants
// or the database it names are wrong until an operator changes them.
var permanentErrors = map[uint16]string{
	1044: "access denied to the database",
	1045: "access denied (user or password)",
	1049: "unknown database",
	1142: "command denied on a table",
	1143: "command denied on a column",
	1146: "table does not exist (migrations not applied)",
	1227: "missing privilege",
	1370: "command denied on a routine",
	1820: "password must be changed",
	1862: "password expired",
	3118: "account locked",
}

// IsPermanent reports whether err is a shard error that retrying cannot fix:
// a MySQL server error refusing the account or naming a database or table
// that does not exist. Connection failures, timeouts, deadlocks and every
// other error are transient: the relay retries them for as long as they
// last.
func IsPermanent(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	_, ok := permanentErrors[me.Number]
	return ok
}
