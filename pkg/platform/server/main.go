package server

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// Main runs realMain with a context that ends on SIGINT or SIGTERM, logs its
// error and exits non-zero when it fails. Every service's main is one call.
func Main(name string, realMain func(ctx context.Context, args []string) error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := realMain(ctx, os.Args[1:])
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return // --help printed the usage
	}
	if err != nil {
		slog.New(slog.NewJSONHandler(os.Stderr, nil)).Error("service failed", "service", name, "err", err)
		os.Exit(1)
	}
}
