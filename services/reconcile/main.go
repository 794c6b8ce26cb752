// Command reconcile serves fitness.v1.ReconcileService: scoped comparisons of the projection against the authoritative shards.
package main

import "github.com/resultsync/resultsync/pkg/server"

func main() { server.Main("reconcile", realMain) }
