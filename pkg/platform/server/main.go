package server

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/resultsync/resultsync/pkg/platform/buildinfo"
)

// Main runs realMain with a context that ends on SIGINT or SIGTERM, logs its
// error and exits non-zero when it fails. Every service's main is one call.
// Called with --version (or -version) it prints the build
// (buildinfo.Info.String) and exits 0 without starting; otherwise it logs
// the build ("starting", with version, revision and go_version) first.
func Main(name string, realMain func(ctx context.Context, args []string) error) {
	if printVersion(os.Stdout, name, os.Args[1:]) {
		return
	}
	startLog(os.Stderr, name)
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

// printVersion writes the build line of name to w when args ask for it
// (--version or -version anywhere before a "--"), and reports whether they did.
func printVersion(w io.Writer, name string, args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--version" || a == "-version" {
			_, _ = fmt.Fprintln(w, buildinfo.Get().String(name))
			return true
		}
	}
	return false
}

// startLog logs the binary's build once, before its configuration is read,
// so every log starts by saying which build wrote it.
func startLog(w io.Writer, name string) {
	slog.New(slog.NewJSONHandler(w, nil)).Info("starting", append([]any{"service", name}, buildinfo.Get().Attrs()...)...)
}
