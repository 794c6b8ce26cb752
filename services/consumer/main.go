// Command consumer consumes result events from Pulsar into the versioned ClickHouse projection and serves fitness.v1.ProjectionService.
package main

import "github.com/resultsync/resultsync/pkg/server"

func main() { server.Main("consumer", realMain) }
