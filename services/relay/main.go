// Command relay drains every shard's outbox into Pulsar and serves fitness.v1.OutboxService for its administration.
package main

import "github.com/resultsync/resultsync/pkg/server"

func main() { server.Main("relay", realMain) }
