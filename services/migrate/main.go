// Command migrate applies the versioned schema migrations of every shard, the
// control database and the ClickHouse projection, and makes the events topic
// and the consumer's subscription exist, then exits (pkg/service/migratesvc).
// It is idempotent: a second run applies nothing.
package main

import (
	"context"
	"os"

	"github.com/resultsync/resultsync/pkg/platform/logging"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/service/migratesvc"
)

func main() { server.Main("migrate", realMain) }

func realMain(ctx context.Context, args []string) error {
	cfg, err := migratesvc.Load(args)
	if err != nil {
		return err
	}
	log, err := logging.New(os.Stderr, "migrate", cfg.LogLevel)
	if err != nil {
		return err
	}
	return migratesvc.Run(ctx, log, cfg)
}
