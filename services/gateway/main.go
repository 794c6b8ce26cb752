// Command gateway serves the JSON/HTTP API of every resultsync service through
// grpc-gateway, the merged OpenAPI document under /openapiv2/, and /healthz.
package main

import "github.com/resultsync/resultsync/pkg/server"

func main() { server.Main("gateway", realMain) }
