// Package gatewaysvc is the JSON/HTTP gateway as one component: Load reads
// its configuration, New assembles it (one connection per backend, the
// grpc-gateway handlers of every service, the OpenAPI document, /healthz)
// and Run serves it under the supervisor of pkg/platform/server, with a probe per
// backend. The JSON API serves TLS with the server's certificate
// (Config.Server.TLS), and the backends are dialed over TLS when
// Config.BackendTLS is enabled. services/gateway and the tests build the gateway through New.
package gatewaysvc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	// The error details the servers send (google.rpc.BadRequest field
	// violations): the gateway renders an error's details as JSON only for
	// types linked into it, and answers "failed to marshal error message"
	// (500) for any other.
	_ "google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/resultsync/resultsync/clients/go/serviceconfig"
	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/config"
	"github.com/resultsync/resultsync/pkg/platform/logging"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/platform/tlsconfig"
)

// Config is the gateway's configuration.
type Config struct {
	Server server.Config
	// APIAddr is where the JSON API listens (":0" picks a port).
	APIAddr string
	// API bounds the JSON API's requests: body size, read and idle timeouts.
	API APILimits
	// OpenAPIFile is the merged OpenAPI document served under /openapiv2/.
	OpenAPIFile string
	// Backend gRPC addresses.
	ResultsAddr, RelayAddr, ConsumerAddr, ReconcileAddr, RepairAddr string
	// BackendTLS dials every backend over TLS when enabled: their
	// certificates verified against its CA, its client certificate
	// presented to backends that require one (mutual TLS).
	BackendTLS tlsconfig.Files
}

// Load reads the configuration from args (without the program name) and the
// environment, and validates it. Every missing, malformed or impossible
// setting is reported in one error. --help returns flag.ErrHelp after
// printing the usage.
func Load(args []string) (Config, error) {
	var c Config
	l := config.NewLoader("gateway")
	c.Server.Flags(l, "RS_GATEWAY", "127.0.0.1:7106", "127.0.0.1:7206")
	l.String(&c.APIAddr, "api-addr", "RS_GATEWAY_API_ADDR", "127.0.0.1:7100", "JSON API listen address")
	c.API.flags(l)
	l.String(&c.OpenAPIFile, "openapi-file", "RS_GATEWAY_OPENAPI_FILE", "gen/openapiv2/resultsync.swagger.json", "OpenAPI document to serve")
	l.String(&c.ResultsAddr, "results-addr", "RS_RESULTS_ADDR", "127.0.0.1:7101", "results gRPC address")
	l.String(&c.RelayAddr, "relay-addr", "RS_RELAY_ADDR", "127.0.0.1:7102", "relay gRPC address")
	l.String(&c.ConsumerAddr, "consumer-addr", "RS_CONSUMER_ADDR", "127.0.0.1:7103", "consumer gRPC address")
	l.String(&c.ReconcileAddr, "reconcile-addr", "RS_RECONCILE_ADDR", "127.0.0.1:7104", "reconcile gRPC address")
	l.String(&c.RepairAddr, "repair-addr", "RS_REPAIR_ADDR", "127.0.0.1:7105", "repair gRPC address")
	c.BackendTLS.ClientFlags(l, "backend", "RS_GATEWAY_BACKEND", "the backends")
	if err := l.Load(args, c.check); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate rejects impossible settings, naming every one.
func (c *Config) Validate() error { return config.Validate("gateway", c.check) }

// check reports every invalid setting (config.Loader.Load, config.Validate;
// the gateway has no required setting of its own).
func (c *Config) check(bool) error {
	errs := []error{c.Server.Validate(), c.BackendTLS.CheckClient("backend TLS"), c.API.check()}
	if _, err := logging.New(io.Discard, "gateway", c.Server.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if _, _, err := net.SplitHostPort(c.APIAddr); err != nil {
		errs = append(errs, fmt.Errorf("api-addr %q: %w", c.APIAddr, err))
	}
	for _, a := range []struct{ name, addr string }{
		{"results-addr", c.ResultsAddr}, {"relay-addr", c.RelayAddr},
		{"consumer-addr", c.ConsumerAddr}, {"reconcile-addr", c.ReconcileAddr}, {"repair-addr", c.RepairAddr},
	} {
		if _, err := backendTarget(a.addr); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", a.name, a.addr, err))
		}
	}
	if c.OpenAPIFile == "" {
		errs = append(errs, errors.New("openapi-file must not be empty"))
	}
	return errors.Join(errs...)
}

// The service configuration of every backend connection is the one every
// client ships (serviceconfig.JSON, clients/go/serviceconfig): round_robin
// keeps a connection to every address the backend's name resolves to and
// spreads the calls over those that are ready (gRPC's default, pick_first,
// would send every call of the connection to one address: behind a
// Kubernetes ClusterIP Service, one pod per gateway pod), and the methods
// that are safe to send again (reads, writes with a required request_id)
// are retried on UNAVAILABLE, on another address when there is one: a pod
// that drains or restarts costs a JSON caller nothing.

// backendTarget is the gRPC target dialed for a backend address: host:port
// is resolved by DNS (dns:///host:port), so every address of the name is a
// backend, e.g. every ready pod behind a headless Service; a dns:// target
// is taken as it is, to name the DNS server that resolves it
// (dns://10.96.0.10:53/results:7101). Any other form is an error.
func backendTarget(addr string) (string, error) {
	hostPort := addr
	if strings.Contains(addr, "://") {
		u, err := url.Parse(addr)
		if err != nil {
			return "", fmt.Errorf("parsing gRPC target: %w", err)
		}
		if u.Scheme != "dns" {
			return "", fmt.Errorf("scheme %q: want host:port or dns://[dns server]/host:port", u.Scheme)
		}
		hostPort = strings.TrimPrefix(u.Path, "/")
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "", err
	}
	if host == "" || port == "" {
		return "", errors.New("want host:port, both set")
	}
	if hostPort == addr {
		return "dns:///" + addr, nil
	}
	return addr, nil
}

// dialBackend opens the gateway's one connection to a backend: lazily (it
// connects on the first call or probe), resolved by DNS, balanced round
// robin over every address of the name, idempotent methods retried on
// UNAVAILABLE (serviceconfig.JSON). Service
// configurations published in DNS TXT records are ignored: the balancing
// policy is the gateway's, not the DNS zone's.
func dialBackend(addr string, creds credentials.TransportCredentials) (*grpc.ClientConn, error) {
	target, err := backendTarget(addr)
	if err != nil {
		return nil, err
	}
	return grpc.NewClient(target, grpc.WithTransportCredentials(creds),
		grpc.WithDisableServiceConfig(), grpc.WithDefaultServiceConfig(serviceconfig.JSON))
}

// backend is one gRPC service the gateway forwards to.
type backend struct {
	name string
	conn *grpc.ClientConn
}

// Service is an assembled gateway, listening but not yet serving.
type Service struct {
	log      *slog.Logger
	cfg      Config
	srv      *server.Server
	backends []backend
	api      *http.Server
	apiLis   net.Listener
}

// New validates cfg and assembles the gateway: it reads the OpenAPI
// document, dials each backend once (lazily: a backend that is down fails
// only its own routes, with 503), registers every service's handlers, and
// binds the JSON API and the gRPC health listeners before it returns
// (APIAddr, GRPCAddr and HTTPAddr report them, so ":0" works). The Service
// must then be Run, which releases everything.
func New(ctx context.Context, log *slog.Logger, cfg Config) (_ *Service, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	openapi, err := os.ReadFile(cfg.OpenAPIFile)
	if err != nil {
		return nil, fmt.Errorf("reading OpenAPI document: %w", err)
	}
	cfg.API = cfg.API.withDefaults()
	s := &Service{log: log, cfg: cfg}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	mux := runtime.NewServeMux(runtime.WithErrorHandler(s.httpError), runtime.WithStreamErrorHandler(s.streamError))
	creds := insecure.NewCredentials()
	if cfg.BackendTLS.ClientEnabled() {
		tc, err := tlsconfig.Client(log, cfg.BackendTLS, "the backends")
		if err != nil {
			return nil, fmt.Errorf("gateway config: %w", err)
		}
		creds = credentials.NewTLS(tc)
	}
	for _, b := range []struct {
		name, addr string
		register   func(context.Context, *runtime.ServeMux, *grpc.ClientConn) error
	}{
		{"results", cfg.ResultsAddr, fitnessv1.RegisterResultServiceHandler},
		{"relay", cfg.RelayAddr, fitnessv1.RegisterOutboxServiceHandler},
		{"consumer", cfg.ConsumerAddr, fitnessv1.RegisterProjectionServiceHandler},
		{"reconcile", cfg.ReconcileAddr, fitnessv1.RegisterReconcileServiceHandler},
		{"repair", cfg.RepairAddr, fitnessv1.RegisterRepairServiceHandler},
	} {
		conn, err := dialBackend(b.addr, creds)
		if err != nil {
			return nil, fmt.Errorf("dialing %s at %s: %w", b.name, b.addr, err)
		}
		s.backends = append(s.backends, backend{name: b.name, conn: conn})
		if err := b.register(ctx, mux, conn); err != nil {
			return nil, fmt.Errorf("registering %s handlers: %w", b.name, err)
		}
	}
	if s.srv, err = server.New(log, cfg.Server); err != nil {
		return nil, err
	}
	root := http.NewServeMux()
	root.Handle("/", mux)
	root.HandleFunc("/openapiv2/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openapi)
	})
	root.HandleFunc("/healthz", s.backendHealth)
	s.api = &http.Server{Handler: limitBodies(int64(cfg.API.MaxBodyBytes), root), ReadHeaderTimeout: cfg.API.ReadHeaderTimeout,
		ReadTimeout: cfg.API.ReadTimeout, IdleTimeout: cfg.API.IdleTimeout, ErrorLog: server.HTTPErrorLog(log)}
	var lc net.ListenConfig
	if s.apiLis, err = lc.Listen(ctx, "tcp", cfg.APIAddr); err != nil {
		return nil, fmt.Errorf("listening for the JSON API on %s: %w", cfg.APIAddr, err)
	}
	if tc := s.srv.APITLSConfig(); tc != nil {
		s.apiLis = tls.NewListener(s.apiLis, tc)
	}
	if err := s.srv.Listen(); err != nil {
		return nil, err
	}
	return s, nil
}

// APIAddr is the bound JSON API address.
func (s *Service) APIAddr() string { return s.apiLis.Addr().String() }

// GRPCAddr is the bound gRPC (health) address.
func (s *Service) GRPCAddr() string { return s.srv.GRPCAddr() }

// HTTPAddr is the bound metrics and health address, or "" when disabled.
func (s *Service) HTTPAddr() string { return s.srv.HTTPAddr() }

// Run serves until ctx ends (nil after a clean shutdown) or the gateway
// fails (its error), then closes the backend connections. Call it once.
//
// Worker "json-api" serves the JSON API and shuts it down within the
// shutdown grace. One probe per backend, named results, relay, consumer,
// reconcile and repair, passes while the backend reports SERVING; each is
// Partial: a backend that is down fails only its own routes, so it shows on
// dependency/<backend> and on /healthz, not on the gateway's own health.
func (s *Service) Run(ctx context.Context) error {
	defer s.close()
	probes := make([]server.Probe, 0, len(s.backends))
	for _, b := range s.backends {
		probes = append(probes, server.Probe{Name: b.name, Partial: true, Check: b.check})
	}
	return s.srv.Run(ctx, []server.Worker{{Name: "json-api", Run: s.serveAPI}}, probes)
}

func (s *Service) serveAPI(ctx context.Context) error {
	s.log.Info("JSON API listening", "addr", s.APIAddr(), "tls", s.cfg.Server.TLS.ServerEnabled(), "backend_tls", s.cfg.BackendTLS.ClientEnabled(),
		"openapi", "/openapiv2/"+filepath.Base(s.cfg.OpenAPIFile))
	errc := make(chan error, 1)
	go func() { errc <- s.api.Serve(s.apiLis) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving the JSON API: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.Server.ShutdownGrace)
	defer cancel()
	if err := s.api.Shutdown(sctx); err != nil {
		_ = s.api.Close()
		return fmt.Errorf("shutting down the JSON API: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving the JSON API: %w", err)
	}
	return nil
}

// httpError answers an error as grpc-gateway does, after renderable has
// dropped the details it could not render and the internal addresses; a
// request whose body was too large or too slow is answered 413 or 408.
func (s *Service) httpError(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	if bodyFailure(w, r, int64(s.cfg.API.MaxBodyBytes)) {
		return
	}
	runtime.DefaultHTTPErrorHandler(ctx, mux, m, w, r, s.renderable(err).Err())
}

// streamError is the error line of a stream that fails after its first
// message, with the details renderable keeps.
func (s *Service) streamError(_ context.Context, err error) *status.Status { return s.renderable(err) }

// renderable is err's status without the details of types the gateway does
// not link: the JSON of an error renders every detail through the type
// registry, and one unknown type would turn the whole answer into 500
// "failed to marshal error message" instead of the backend's code and
// message. Each dropped detail is logged. The message loses any internal
// address (server.RedactAddresses): a backend that is down answers 503
// "... dial tcp <address>: connect: connection refused".
func (s *Service) renderable(err error) *status.Status {
	st := status.Convert(err)
	p := st.Proto()
	if msg := server.RedactAddresses(p.GetMessage()); msg != p.GetMessage() {
		p.Message = msg
		st = status.FromProto(p)
		p = st.Proto()
	}
	var kept []*anypb.Any
	for _, d := range p.Details {
		if _, ferr := protoregistry.GlobalTypes.FindMessageByURL(d.GetTypeUrl()); ferr != nil {
			s.log.Warn("error detail of a type the gateway does not know dropped", "type", d.GetTypeUrl(), "code", st.Code().String())
			continue
		}
		kept = append(kept, d)
	}
	if len(kept) == len(p.Details) {
		return st
	}
	p.Details = kept
	return status.FromProto(p)
}

// check passes while the backend answers its health check with SERVING.
func (b backend) check(ctx context.Context) error {
	resp, err := healthpb.NewHealthClient(b.conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return fmt.Errorf("backend %s unreachable: %w", b.name, err)
	}
	if st := resp.GetStatus(); st != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("backend %s is %s", b.name, st)
	}
	return nil
}

// backendHealth answers 200 when every backend reports SERVING, 503
// otherwise, with one line per backend in a fixed order.
func (s *Service) backendHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	code := http.StatusOK
	var body strings.Builder
	for _, b := range s.backends {
		st := "SERVING"
		resp, err := healthpb.NewHealthClient(b.conn).Check(ctx, &healthpb.HealthCheckRequest{})
		switch {
		case err != nil:
			st = "UNREACHABLE: " + server.RedactAddresses(err.Error())
			code = http.StatusServiceUnavailable
		case resp.GetStatus() != healthpb.HealthCheckResponse_SERVING:
			st = resp.GetStatus().String()
			code = http.StatusServiceUnavailable
		}
		body.WriteString(b.name + " " + st + "\n")
	}
	if code != http.StatusOK {
		s.log.Warn("backend unhealthy", "report", body.String())
	}
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body.String()))
}

func (s *Service) close() {
	if s.apiLis != nil {
		_ = s.apiLis.Close()
	}
	for _, b := range s.backends {
		_ = b.conn.Close()
	}
}
