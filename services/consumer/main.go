// Command consumer consumes result events from Pulsar into the versioned ClickHouse projection and serves fitness.v1.ProjectionService.
package main

import (
	"context"
	"os"

	"github.com/resultsync/resultsync/pkg/platform/logging"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/service/consumersvc"
)

func main() { server.Main("consumer", realMain) }

func realMain(ctx context.Context, args []string) error {
	cfg, err := consumersvc.Load(args)
	if err != nil {
		return err
	}
	log, err := logging.New(os.Stderr, "consumer", cfg.Server.LogLevel)
	if err != nil {
		return err
	}
	svc, err := consumersvc.New(ctx, log, cfg)
	if err != nil {
		return err
	}
	return svc.Run(ctx)
}
