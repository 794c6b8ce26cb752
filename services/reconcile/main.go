// Command reconcile serves fitness.v1.ReconcileService: scoped comparisons of the projection against the authoritative shards.
package main

import (
	"context"
	"os"

	"github.com/resultsync/resultsync/pkg/platform/logging"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/service/reconcilesvc"
)

func main() {
	server.Main("reconcile", func(ctx context.Context, args []string) error {
		cfg, err := reconcilesvc.Load(args)
		if err != nil {
			return err
		}
		log, err := logging.New(os.Stderr, "reconcile", cfg.Server.LogLevel)
		if err != nil {
			return err
		}
		s, err := reconcilesvc.New(ctx, log, cfg)
		if err != nil {
			return err
		}
		return s.Run(ctx)
	})
}
