package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/config"
	"github.com/resultsync/resultsync/pkg/logging"
	"github.com/resultsync/resultsync/pkg/server"
)

// Config is the gateway's configuration.
type Config struct {
	Server server.Config
	// APIAddr is where the JSON API listens.
	APIAddr string
	// OpenAPIFile is the merged OpenAPI document served under /openapiv2/.
	OpenAPIFile string
	// Backend gRPC addresses.
	ResultsAddr, RelayAddr, ConsumerAddr, ReconcileAddr, RepairAddr string
}

func (c *Config) load(args []string) error {
	l := config.NewLoader("gateway")
	c.Server.Flags(l, "RS_GATEWAY", "127.0.0.1:7106", "127.0.0.1:7206")
	l.String(&c.APIAddr, "api-addr", "RS_GATEWAY_API_ADDR", "127.0.0.1:7100", "JSON API listen address")
	l.String(&c.OpenAPIFile, "openapi-file", "RS_GATEWAY_OPENAPI_FILE", "gen/openapiv2/resultsync.swagger.json", "OpenAPI document to serve")
	l.String(&c.ResultsAddr, "results-addr", "RS_RESULTS_ADDR", "127.0.0.1:7101", "results gRPC address")
	l.String(&c.RelayAddr, "relay-addr", "RS_RELAY_ADDR", "127.0.0.1:7102", "relay gRPC address")
	l.String(&c.ConsumerAddr, "consumer-addr", "RS_CONSUMER_ADDR", "127.0.0.1:7103", "consumer gRPC address")
	l.String(&c.ReconcileAddr, "reconcile-addr", "RS_RECONCILE_ADDR", "127.0.0.1:7104", "reconcile gRPC address")
	l.String(&c.RepairAddr, "repair-addr", "RS_REPAIR_ADDR", "127.0.0.1:7105", "repair gRPC address")
	if err := l.Parse(args); err != nil {
		return err
	}
	return c.Validate()
}

// Validate rejects impossible settings.
func (c *Config) Validate() error {
	if err := c.Server.Validate(); err != nil {
		return fmt.Errorf("gateway config: %w", err)
	}
	for name, a := range map[string]string{
		"api-addr": c.APIAddr, "results-addr": c.ResultsAddr, "relay-addr": c.RelayAddr,
		"consumer-addr": c.ConsumerAddr, "reconcile-addr": c.ReconcileAddr, "repair-addr": c.RepairAddr,
	} {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("gateway config: %s %q: %w", name, a, err)
		}
	}
	if c.OpenAPIFile == "" {
		return errors.New("gateway config: openapi-file must not be empty")
	}
	return nil
}

// backend is one gRPC service the gateway forwards to.
type backend struct {
	name     string
	addr     string
	register func(context.Context, *runtime.ServeMux, *grpc.ClientConn) error
}

func realMain(ctx context.Context, args []string) error {
	var cfg Config
	if err := cfg.load(args); err != nil {
		return err
	}
	log, err := logging.New(os.Stderr, "gateway", cfg.Server.LogLevel)
	if err != nil {
		return err
	}
	openapi, err := os.ReadFile(cfg.OpenAPIFile)
	if err != nil {
		return fmt.Errorf("reading OpenAPI document: %w", err)
	}

	backends := []backend{
		{"results", cfg.ResultsAddr, fitnessv1.RegisterResultServiceHandler},
		{"relay", cfg.RelayAddr, fitnessv1.RegisterOutboxServiceHandler},
		{"consumer", cfg.ConsumerAddr, fitnessv1.RegisterProjectionServiceHandler},
		{"reconcile", cfg.ReconcileAddr, fitnessv1.RegisterReconcileServiceHandler},
		{"repair", cfg.RepairAddr, fitnessv1.RegisterRepairServiceHandler},
	}
	mux := runtime.NewServeMux()
	conns := make(map[string]*grpc.ClientConn, len(backends))
	for _, b := range backends {
		conn, err := grpc.NewClient(b.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return fmt.Errorf("dialing %s at %s: %w", b.name, b.addr, err)
		}
		defer conn.Close()
		conns[b.name] = conn
		if err := b.register(ctx, mux, conn); err != nil {
			return fmt.Errorf("registering %s handlers: %w", b.name, err)
		}
	}

	srv, err := server.New(log, cfg.Server)
	if err != nil {
		return err
	}
	root := http.NewServeMux()
	root.Handle("/", mux)
	root.HandleFunc("/openapiv2/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openapi)
	})
	root.HandleFunc("/healthz", backendHealth(log, conns))
	api := &http.Server{Addr: cfg.APIAddr, Handler: root, ReadHeaderTimeout: 10 * time.Second}

	errc := make(chan error, 1)
	var lc net.ListenConfig
	lis, err := lc.Listen(ctx, "tcp", cfg.APIAddr)
	if err != nil {
		return fmt.Errorf("listening for the JSON API on %s: %w", cfg.APIAddr, err)
	}
	go func() {
		log.Info("JSON API listening", "addr", lis.Addr().String(), "openapi", "/openapiv2/"+filepath.Base(cfg.OpenAPIFile))
		if err := api.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("serving the JSON API: %w", err)
		}
	}()

	serveCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case err := <-errc:
			log.Error("JSON API failed", "err", err)
			cancel()
		case <-serveCtx.Done():
		}
	}()
	serveErr := srv.Serve(serveCtx)

	shutCtx, stop := context.WithTimeout(context.Background(), cfg.Server.ShutdownGrace)
	defer stop()
	if err := api.Shutdown(shutCtx); err != nil {
		return fmt.Errorf("shutting down the JSON API: %w", err)
	}
	return serveErr
}

// backendHealth answers 200 when every backend reports SERVING, 503 otherwise,
// with one line per backend.
func backendHealth(log *slog.Logger, conns map[string]*grpc.ClientConn) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		code := http.StatusOK
		body := ""
		for name, conn := range conns {
			st := "SERVING"
			resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
			switch {
			case err != nil:
				st = "UNREACHABLE: " + err.Error()
				code = http.StatusServiceUnavailable
			case resp.GetStatus() != healthpb.HealthCheckResponse_SERVING:
				st = resp.GetStatus().String()
				code = http.StatusServiceUnavailable
			}
			body += name + " " + st + "\n"
		}
		if code != http.StatusOK {
			log.Warn("backend unhealthy", "report", body)
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}
}
