// Command migrate applies the versioned schema migrations of every shard, the
// control database and the ClickHouse projection, then exits. It is idempotent:
// a second run applies nothing.
package main

import "github.com/resultsync/resultsync/pkg/server"

func main() { server.Main("migrate", realMain) }
