// Command repair serves fitness.v1.RepairService: planned, audited, verified repairs and controlled rebuilds.
package main

import (
	"context"
	"os"

	"github.com/resultsync/resultsync/pkg/platform/logging"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/service/repairsvc"
)

func main() { server.Main("repair", realMain) }

func realMain(ctx context.Context, args []string) error {
	cfg, err := repairsvc.Load(args)
	if err != nil {
		return err
	}
	log, err := logging.New(os.Stderr, "repair", cfg.Server.LogLevel)
	if err != nil {
		return err
	}
	svc, err := repairsvc.New(ctx, log, cfg)
	if err != nil {
		return err
	}
	return svc.Run(ctx)
}
