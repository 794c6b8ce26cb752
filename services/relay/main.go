// Command relay drains every shard's outbox into Pulsar and serves fitness.v1.OutboxService for its administration.
package main

import (
	"context"
	"os"

	"github.com/resultsync/resultsync/pkg/platform/logging"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/service/relaysvc"
)

func main() { server.Main("relay", realMain) }

func realMain(ctx context.Context, args []string) error {
	cfg, err := relaysvc.Load(args)
	if err != nil {
		return err
	}
	log, err := logging.New(os.Stderr, "relay", cfg.Server.LogLevel)
	if err != nil {
		return err
	}
	svc, err := relaysvc.New(ctx, log, cfg)
	if err != nil {
		return err
	}
	return svc.Run(ctx)
}
