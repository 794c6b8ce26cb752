// Command results serves fitness.v1.ResultService: the write path that records, corrects and deletes results with a transactional outbox on every shard.
package main

import "github.com/resultsync/resultsync/pkg/server"

func main() { server.Main("results", realMain) }
