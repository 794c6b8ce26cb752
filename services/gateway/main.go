// Command gateway serves the JSON/HTTP API of every resultsync service through
// grpc-gateway, the merged OpenAPI document under /openapiv2/, and /healthz.
package main

import (
	"context"
	"os"

	"github.com/resultsync/resultsync/pkg/platform/logging"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/service/gatewaysvc"
)

func main() {
	server.Main("gateway", func(ctx context.Context, args []string) error {
		cfg, err := gatewaysvc.Load(args)
		if err != nil {
			return err
		}
		log, err := logging.New(os.Stderr, "gateway", cfg.Server.LogLevel)
		if err != nil {
			return err
		}
		s, err := gatewaysvc.New(ctx, log, cfg)
		if err != nil {
			return err
		}
		return s.Run(ctx)
	})
}
