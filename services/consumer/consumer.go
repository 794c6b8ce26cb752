package main

import (
	"context"
	"fmt"
	"os"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/auth"
	"github.com/resultsync/resultsync/pkg/config"
	"github.com/resultsync/resultsync/pkg/logging"
	"github.com/resultsync/resultsync/pkg/server"
)

// Config is the consumer server's configuration.
type Config struct {
	Server server.Config
}

func (c *Config) load(args []string) error {
	l := config.NewLoader("consumer")
	c.Server.Flags(l, "RS_CONSUMER", "127.0.0.1:7103", "127.0.0.1:7203")
	if err := l.Parse(args); err != nil {
		return err
	}
	return c.Validate()
}

// Validate rejects impossible settings.
func (c *Config) Validate() error {
	if err := c.Server.Validate(); err != nil {
		return fmt.Errorf("consumer config: %w", err)
	}
	return nil
}

func realMain(ctx context.Context, args []string) error {
	var cfg Config
	if err := cfg.load(args); err != nil {
		return err
	}
	log, err := logging.New(os.Stderr, "consumer", cfg.Server.LogLevel)
	if err != nil {
		return err
	}
	srv, err := server.New(log, cfg.Server, server.WithAuth(auth.ProjectionPolicy))
	if err != nil {
		return err
	}
	fitnessv1.RegisterProjectionServiceServer(srv.GRPC(), fitnessv1.UnimplementedProjectionServiceServer{})
	return srv.Serve(ctx)
}
