// Command repair serves fitness.v1.RepairService: planned, audited, verified repairs and controlled rebuilds.
package main

import "github.com/resultsync/resultsync/pkg/server"

func main() { server.Main("repair", realMain) }
