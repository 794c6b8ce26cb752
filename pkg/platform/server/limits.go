package server

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/resultsync/resultsync/pkg/platform/config"
)

// GRPCLimits bound what one client can hold or send on a server's gRPC
// listener. A zero count, size or keepalive duration means its default (the
// Default* constants), so a Config written in code gets the same limits as
// one loaded from flags; the connection idle/age limits keep gRPC's meaning
// of zero (none).
type GRPCLimits struct {
	// MaxConcurrentStreams caps the streams (calls) open at once on one
	// connection; a client that wants more waits for one to end (grpc-go
	// queues them) or is refused by the HTTP/2 layer.
	MaxConcurrentStreams int
	// MaxRecvMsgBytes and MaxSendMsgBytes cap one message in each
	// direction; a larger one fails its call with RESOURCE_EXHAUSTED.
	MaxRecvMsgBytes, MaxSendMsgBytes int
	// KeepaliveMinTime is the shortest interval between a client's pings
	// the server tolerates: a client that pings more often is sent GOAWAY
	// (ENHANCE_YOUR_CALM, "too_many_pings") and disconnected. Clients'
	// keepalive.ClientParameters.Time must be at least this.
	KeepaliveMinTime time.Duration
	// KeepalivePermitWithoutStream lets clients ping connections without
	// an open call (a gateway's idle backend connection). The flag
	// defaults to true; a Config written in code has it false.
	KeepalivePermitWithoutStream bool
	// KeepaliveTime is how long a connection may be silent before the
	// server pings it, and KeepaliveTimeout how long it waits for the
	// answer before closing it (a peer that vanished without a FIN).
	KeepaliveTime, KeepaliveTimeout time.Duration
	// MaxConnectionIdle closes a connection without calls for that long,
	// MaxConnectionAge any connection after that long (clients reconnect,
	// and re-resolve: new pods behind a headless Service get their share),
	// MaxConnectionAgeGrace bounding the calls still open then. 0: never.
	MaxConnectionIdle, MaxConnectionAge, MaxConnectionAgeGrace time.Duration
}

// The default limits.
const (
	DefaultMaxConcurrentStreams = 1000
	DefaultMaxRecvMsgBytes      = 4 << 20 // gRPC's own default
	DefaultMaxSendMsgBytes      = 4 << 20 // what a client accepts by default
	DefaultKeepaliveMinTime     = 20 * time.Second
	DefaultKeepaliveTime        = time.Minute
	DefaultKeepaliveTimeout     = 20 * time.Second
)

// Flags defines the limit flags (--grpc-max-concurrent-streams and so on)
// with environment variables <envPrefix>_GRPC_MAX_CONCURRENT_STREAMS and so on.
func (g *GRPCLimits) Flags(l *config.Loader, envPrefix string) {
	e := envPrefix + "_GRPC_"
	l.Int(&g.MaxConcurrentStreams, "grpc-max-concurrent-streams", e+"MAX_CONCURRENT_STREAMS", DefaultMaxConcurrentStreams,
		"gRPC calls open at once on one connection")
	l.Int(&g.MaxRecvMsgBytes, "grpc-max-recv-bytes", e+"MAX_RECV_BYTES", DefaultMaxRecvMsgBytes,
		"largest gRPC request message in bytes (larger: RESOURCE_EXHAUSTED)")
	l.Int(&g.MaxSendMsgBytes, "grpc-max-send-bytes", e+"MAX_SEND_BYTES", DefaultMaxSendMsgBytes,
		"largest gRPC response message in bytes (larger: RESOURCE_EXHAUSTED)")
	l.Duration(&g.KeepaliveMinTime, "grpc-keepalive-min-time", e+"KEEPALIVE_MIN_TIME", DefaultKeepaliveMinTime,
		"shortest client ping interval tolerated (more often: GOAWAY too_many_pings)")
	l.Bool(&g.KeepalivePermitWithoutStream, "grpc-keepalive-permit-without-stream", e+"KEEPALIVE_PERMIT_WITHOUT_STREAM", true,
		"allow client pings on a connection without open calls")
	l.Duration(&g.KeepaliveTime, "grpc-keepalive-time", e+"KEEPALIVE_TIME", DefaultKeepaliveTime,
		"silence after which the server pings a connection")
	l.Duration(&g.KeepaliveTimeout, "grpc-keepalive-timeout", e+"KEEPALIVE_TIMEOUT", DefaultKeepaliveTimeout,
		"wait for a ping's answer before closing the connection")
	l.Duration(&g.MaxConnectionIdle, "grpc-max-connection-idle", e+"MAX_CONNECTION_IDLE", 0,
		"close a connection without calls after this long (0: never)")
	l.Duration(&g.MaxConnectionAge, "grpc-max-connection-age", e+"MAX_CONNECTION_AGE", 0,
		"close any connection after this long, so clients re-resolve (0: never)")
	l.Duration(&g.MaxConnectionAgeGrace, "grpc-max-connection-age-grace", e+"MAX_CONNECTION_AGE_GRACE", 0,
		"calls still open at max connection age are cut after this long (0: never)")
}

// validate rejects impossible limits (zero keeps a default).
func (g *GRPCLimits) validate() error {
	var errs []error
	for _, n := range []struct {
		name string
		v    int
	}{
		{"grpc-max-concurrent-streams", g.MaxConcurrentStreams},
		{"grpc-max-recv-bytes", g.MaxRecvMsgBytes},
		{"grpc-max-send-bytes", g.MaxSendMsgBytes},
	} {
		if n.v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %d", n.name, n.v))
		}
	}
	if g.MaxRecvMsgBytes > 0 && g.MaxRecvMsgBytes < 4<<10 || g.MaxSendMsgBytes > 0 && g.MaxSendMsgBytes < 4<<10 {
		errs = append(errs, errors.New("grpc-max-recv-bytes and grpc-max-send-bytes must be at least 4096 (a page of results does not fit below)"))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"grpc-keepalive-min-time", g.KeepaliveMinTime},
		{"grpc-keepalive-time", g.KeepaliveTime},
		{"grpc-keepalive-timeout", g.KeepaliveTimeout},
		{"grpc-max-connection-idle", g.MaxConnectionIdle},
		{"grpc-max-connection-age", g.MaxConnectionAge},
		{"grpc-max-connection-age-grace", g.MaxConnectionAgeGrace},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %s", d.name, d.v))
		}
	}
	if g.KeepaliveTime > 0 && g.KeepaliveTime < time.Second {
		errs = append(errs, fmt.Errorf("grpc-keepalive-time must be at least 1s (gRPC's floor), got %s", g.KeepaliveTime))
	}
	return errors.Join(errs...)
}

// withDefaults is g with every zero count, size and keepalive duration
// replaced by its default.
func (g GRPCLimits) withDefaults() GRPCLimits {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&g.MaxConcurrentStreams, DefaultMaxConcurrentStreams)
	def(&g.MaxRecvMsgBytes, DefaultMaxRecvMsgBytes)
	def(&g.MaxSendMsgBytes, DefaultMaxSendMsgBytes)
	defDur(&g.KeepaliveMinTime, DefaultKeepaliveMinTime)
	defDur(&g.KeepaliveTime, DefaultKeepaliveTime)
	defDur(&g.KeepaliveTimeout, DefaultKeepaliveTimeout)
	return g
}

// serverOptions are the gRPC server options that enforce g.
func (g GRPCLimits) serverOptions() []grpc.ServerOption {
	g = g.withDefaults()
	return []grpc.ServerOption{
		grpc.MaxConcurrentStreams(uint32(min(g.MaxConcurrentStreams, 1<<31-1))), //nolint:gosec // G115: bounded above
		grpc.MaxRecvMsgSize(g.MaxRecvMsgBytes),
		grpc.MaxSendMsgSize(g.MaxSendMsgBytes),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime:             g.KeepaliveMinTime,
			PermitWithoutStream: g.KeepalivePermitWithoutStream,
		}),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			Time:                  g.KeepaliveTime,
			Timeout:               g.KeepaliveTimeout,
			MaxConnectionIdle:     g.MaxConnectionIdle,
			MaxConnectionAge:      g.MaxConnectionAge,
			MaxConnectionAgeGrace: g.MaxConnectionAgeGrace,
		}),
	}
}
