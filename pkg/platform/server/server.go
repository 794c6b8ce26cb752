// Package server is the shared gRPC server bootstrap of every resultsync
// service: authentication and authorization (WithAuth), health and
// reflection services, structured request logging, panic recovery,
// Prometheus metrics on a side HTTP listener, TLS on both listeners when
// Config.TLS names a certificate (pkg/platform/tlsconfig), and one supervisor (Run) for
// the gRPC server, the service's workers and its dependency probes, with
// health that follows them and a bounded graceful shutdown. Health answers
// two questions apart: liveness (/livez, health name "liveness": the
// supervisor and every worker run, none wedged; never a dependency) and
// readiness (/readyz and /healthz, health names "" and "readiness": live and
// every required dependency reachable). Every gRPC listener bounds its
// clients (GRPCLimits: concurrent streams, message sizes, keepalive
// enforcement), from flags and environment.
//
// Typical use, in a service's assembly (pkg/service/<name>svc):
//
//	srv, err := server.New(logger, cfg.Server, server.WithAuth(policy))
//	fitnessv1.RegisterResultServiceServer(srv.GRPC(), impl)
//	if err := srv.Listen(); err != nil { ... }
//	return srv.Run(ctx, workers, probes) // after ctx ends and shutdown completes
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/buildinfo"
	"github.com/resultsync/resultsync/pkg/platform/config"
	"github.com/resultsync/resultsync/pkg/platform/tlsconfig"
)

// Config is the part of every service's configuration that the bootstrap owns.
type Config struct {
	// GRPCAddr is the gRPC listen address, e.g. "127.0.0.1:7101" (":0" picks a port).
	GRPCAddr string
	// HTTPAddr is the listen address of /metrics, /livez, /readyz and
	// /healthz (= /readyz); empty disables it.
	HTTPAddr string
	// ShutdownGrace bounds the graceful drain before in-flight RPCs are cut.
	ShutdownGrace time.Duration
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// RPCTimeout is the deadline given to a unary RPC that arrives without
	// one (0 keeps such RPCs unbounded).
	RPCTimeout time.Duration
	// Auth authenticates callers when the server is built WithAuth: signed
	// JWTs, and the static token list in the local profile only.
	Auth auth.Settings
	// GRPC bounds each client's streams, messages and pings.
	GRPC GRPCLimits
	// TLS serves gRPC and HTTP over TLS when it names a certificate and key
	// (re-read when they change), requiring client certificates from its CA
	// when ClientAuth is set (on gRPC; the metrics and health listener
	// verifies one only when offered, so probes and scrapers need just the
	// CA). Empty: plaintext.
	TLS tlsconfig.Files
}

// Flags defines the bootstrap flags on l, with environment variables named
// <envPrefix>_GRPC_ADDR and so on, and the given default addresses.
func (c *Config) Flags(l *config.Loader, envPrefix, grpcAddr, httpAddr string) {
	l.String(&c.GRPCAddr, "grpc-addr", envPrefix+"_GRPC_ADDR", grpcAddr, "gRPC listen address")
	l.String(&c.HTTPAddr, "http-addr", envPrefix+"_HTTP_ADDR", httpAddr, "metrics and health HTTP listen address (empty disables)")
	l.Duration(&c.ShutdownGrace, "shutdown-grace", envPrefix+"_SHUTDOWN_GRACE", 10*time.Second, "graceful shutdown drain limit")
	l.Duration(&c.RPCTimeout, "rpc-timeout", envPrefix+"_RPC_TIMEOUT", 30*time.Second, "deadline of a unary RPC that arrives without one (0: none)")
	l.String(&c.LogLevel, "log-level", envPrefix+"_LOG_LEVEL", "info", "log level: debug, info, warn, error")
	c.GRPC.Flags(l, envPrefix)
	c.TLS.ServerFlags(l)
	c.Auth.Flags(l)
}

// Validate rejects impossible bootstrap settings.
func (c *Config) Validate() error {
	var authErr error
	if err := c.Auth.Validate(); err != nil {
		authErr = fmt.Errorf("auth: %w", err)
	}
	return errors.Join(authErr, c.validate())
}

func (c *Config) validate() error {
	if c.GRPCAddr == "" {
		return errors.New("grpc-addr must not be empty")
	}
	if _, _, err := net.SplitHostPort(c.GRPCAddr); err != nil {
		return fmt.Errorf("grpc-addr %q: %w", c.GRPCAddr, err)
	}
	if c.HTTPAddr != "" {
		if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
			return fmt.Errorf("http-addr %q: %w", c.HTTPAddr, err)
		}
	}
	if c.ShutdownGrace <= 0 {
		return fmt.Errorf("shutdown-grace must be positive, got %s", c.ShutdownGrace)
	}
	if c.RPCTimeout < 0 {
		return fmt.Errorf("rpc-timeout must not be negative, got %s", c.RPCTimeout)
	}
	if err := c.GRPC.validate(); err != nil {
		return err
	}
	return c.TLS.CheckServer("server TLS")
}

// Server is a gRPC server with the shared middleware and side services.
type Server struct {
	cfg     Config
	log     *slog.Logger
	grpc    *grpc.Server
	health  *health.Server
	reg     *prometheus.Registry
	mux     *http.ServeMux
	grpcLis net.Listener
	httpLis net.Listener
	tls     *tls.Config // nil: plaintext
	live    *liveness
	state   atomic.Pointer[healthState] // Run's readiness state, once Run started
}

// Option adjusts a Server under construction.
type Option func(*options)

type options struct {
	unary  []grpc.UnaryServerInterceptor
	stream []grpc.StreamServerInterceptor
	policy auth.Policy
}

// WithAuth authenticates every RPC with the configured bearer tokens and
// authorizes it by policy (health and reflection stay open).
func WithAuth(policy auth.Policy) Option {
	return func(o *options) { o.policy = policy }
}

// WithUnaryInterceptor appends a unary interceptor after the shared ones
// (recovery, logging, metrics).
func WithUnaryInterceptor(i grpc.UnaryServerInterceptor) Option {
	return func(o *options) { o.unary = append(o.unary, i) }
}

// WithStreamInterceptor appends a stream interceptor after the shared ones.
func WithStreamInterceptor(i grpc.StreamServerInterceptor) Option {
	return func(o *options) { o.stream = append(o.stream, i) }
}

// New builds a Server. Register services on GRPC() before calling Serve.
func New(log *slog.Logger, cfg Config, opts ...Option) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("server config: %w", err)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.policy != nil {
		a, err := auth.New(log, cfg.Auth)
		if err != nil {
			return nil, fmt.Errorf("server config: %w", err)
		}
		o.unary = append([]grpc.UnaryServerInterceptor{a.Unary(o.policy), noteCallerUnary}, o.unary...)
		o.stream = append([]grpc.StreamServerInterceptor{a.Stream(o.policy), noteCallerStream}, o.stream...)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildinfo.Get().Collector())
	m := newRPCMetrics(reg)

	unary := append([]grpc.UnaryServerInterceptor{redactUnary, m.UnaryServerInterceptor(), logUnary(log), apierr.UnaryServerInterceptor(), recoverUnary(log),
		defaultDeadline(cfg.RPCTimeout)}, o.unary...)
	stream := append([]grpc.StreamServerInterceptor{redactStream, m.StreamServerInterceptor(), logStream(log), apierr.StreamServerInterceptor(), recoverStream(log)}, o.stream...)
	gopts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(stream...)}
	gopts = append(gopts, cfg.GRPC.serverOptions()...)
	var tc *tls.Config
	if cfg.TLS.ServerEnabled() {
		var err error
		if tc, err = tlsconfig.Server(log, cfg.TLS); err != nil {
			return nil, fmt.Errorf("server config: %w", err)
		}
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(tc)))
	}
	gs := grpc.NewServer(gopts...)

	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)
	m.InitializeMetrics(gs)

	s := &Server{cfg: cfg, log: log, grpc: gs, health: hs, reg: reg, mux: http.NewServeMux(), tls: tc, live: newLiveness()}
	s.mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	s.mux.HandleFunc("/livez", s.livez)
	s.mux.HandleFunc("/readyz", s.readyz)
	s.mux.HandleFunc("/healthz", s.readyz) // readiness, as before /livez and /readyz
	// Not live and not ready until Run starts.
	hs.SetServingStatus(LivenessHealthName, healthpb.HealthCheckResponse_NOT_SERVING)
	hs.SetServingStatus(ReadinessHealthName, healthpb.HealthCheckResponse_NOT_SERVING)
	return s, nil
}

// GRPC returns the underlying gRPC server, for service registration.
func (s *Server) GRPC() *grpc.Server { return s.grpc }

// Registry returns the Prometheus registry exported on /metrics.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// HandleHTTP adds a handler to the side HTTP listener (next to /metrics).
func (s *Server) HandleHTTP(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// APITLSConfig is the TLS configuration of an HTTP API served next to the
// gRPC server (the gateway's JSON API): the gRPC server's certificate and
// client-certificate requirement, offering HTTP/2 and HTTP/1.1. Nil when the
// server is plaintext.
func (s *Server) APITLSConfig() *tls.Config {
	if s.tls == nil {
		return nil
	}
	c := s.tls.Clone()
	c.NextProtos = []string{"h2", "http/1.1"}
	return c
}

// HTTPErrorLog is the error log of an HTTP server: what net/http reports
// (a refused TLS handshake: a plaintext client, an unknown certificate) as
// warnings of log, instead of lines on stderr.
func HTTPErrorLog(log *slog.Logger) *stdlog.Logger {
	return slog.NewLogLogger(log.With("component", "http").Handler(), slog.LevelWarn)
}

// Health returns the health server, so a service can report a dependency's state.
func (s *Server) Health() *health.Server { return s.health }

// Listen opens the listeners. After it returns, GRPCAddr and HTTPAddr report
// the bound addresses (useful with ":0").
func (s *Server) Listen() error {
	var lc net.ListenConfig
	lis, err := lc.Listen(context.Background(), "tcp", s.cfg.GRPCAddr)
	if err != nil {
		return fmt.Errorf("listening for gRPC on %s: %w", s.cfg.GRPCAddr, err)
	}
	s.grpcLis = lis
	if s.cfg.HTTPAddr != "" {
		hl, err := lc.Listen(context.Background(), "tcp", s.cfg.HTTPAddr)
		if err != nil {
			_ = lis.Close()
			return fmt.Errorf("listening for HTTP on %s: %w", s.cfg.HTTPAddr, err)
		}
		s.httpLis = hl
		if c := s.APITLSConfig(); c != nil {
			tlsconfig.OptionalClientCert(c) // probes and scrapers: the CA suffices
			s.httpLis = tls.NewListener(hl, c)
		}
	}
	return nil
}

// GRPCAddr is the bound gRPC address (after Listen).
func (s *Server) GRPCAddr() string {
	if s.grpcLis == nil {
		return ""
	}
	return s.grpcLis.Addr().String()
}

// HTTPAddr is the bound metrics address (after Listen), or "".
func (s *Server) HTTPAddr() string {
	if s.httpLis == nil {
		return ""
	}
	return s.httpLis.Addr().String()
}

// Serve is Run without workers or probes: it serves until ctx ends, then
// shuts down (health NOT_SERVING, a short drain, GracefulStop bounded by
// ShutdownGrace, then Stop). It returns nil after a clean shutdown.
func (s *Server) Serve(ctx context.Context) error { return s.Run(ctx, nil, nil) }

func (s *Server) setServing(st healthpb.HealthCheckResponse_ServingStatus) {
	s.health.SetServingStatus("", st)
	s.health.SetServingStatus(ReadinessHealthName, st)
	for name := range s.grpc.GetServiceInfo() {
		s.health.SetServingStatus(name, st)
	}
}

func (s *Server) shutdown(hsrv *http.Server) {
	s.log.Info("server stopping")
	s.health.Shutdown() // every service NOT_SERVING, and stays so
	drain := min(s.cfg.ShutdownGrace/4, time.Second)
	time.Sleep(drain)

	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	t := time.NewTimer(s.cfg.ShutdownGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("graceful stop timed out; stopping", "grace", s.cfg.ShutdownGrace)
		s.grpc.Stop()
		<-done
	}
	if hsrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
		defer cancel()
		if err := hsrv.Shutdown(ctx); err != nil {
			s.log.Warn("HTTP shutdown", "err", err)
		}
	}
	s.log.Info("server stopped")
}
