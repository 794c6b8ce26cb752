// Command rsctl is the operator's command line over resultsync's gRPC APIs
// (pkg/service/rsctl): results, reconciliation runs and their
// discrepancies, repairs, the outbox and the projection. `rsctl --help`
// lists the commands; the exit code says how a command ended.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/resultsync/resultsync/pkg/service/rsctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := rsctl.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
