// Command results serves fitness.v1.ResultService: the write path that records, corrects and deletes results with a transactional outbox on every shard.
package main

import (
	"context"
	"os"

	"github.com/resultsync/resultsync/pkg/platform/logging"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/service/resultssvc"
)

func main() {
	server.Main("results", func(ctx context.Context, args []string) error {
		cfg, err := resultssvc.Load(args)
		if err != nil {
			return err
		}
		log, err := logging.New(os.Stderr, "results", cfg.Server.LogLevel)
		if err != nil {
			return err
		}
		s, err := resultssvc.New(ctx, log, cfg)
		if err != nil {
			return err
		}
		return s.Run(ctx)
	})
}
