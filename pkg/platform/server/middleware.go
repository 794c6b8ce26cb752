package server

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// recoverUnary turns a handler panic into codes.Internal and logs the stack;
// the process keeps serving.
func recoverUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				log.Error("panic in handler", "method", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
				err = status.Error(codes.Internal, "internal error")
			}
		}()
		return h(ctx, req)
	}
}

func recoverStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
		defer func() {
			if r := recover(); r != nil {
				log.Error("panic in handler", "method", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
				err = status.Error(codes.Internal, "internal error")
			}
		}()
		return h(srv, ss)
	}
}

func logUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := h(ctx, req)
		logRPC(ctx, log, info.FullMethod, start, err)
		return resp, err
	}
}

func logStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		start := time.Now()
		err := h(srv, ss)
		logRPC(ss.Context(), log, info.FullMethod, start, err)
		return err
	}
}

func logRPC(ctx context.Context, log *slog.Logger, method string, start time.Time, err error) {
	code := status.Code(err)
	lvl := slog.LevelDebug
	switch code {
	case codes.OK, codes.Canceled, codes.NotFound, codes.AlreadyExists, codes.InvalidArgument,
		codes.FailedPrecondition, codes.Aborted, codes.Unimplemented:
	case codes.Unauthenticated, codes.PermissionDenied:
		lvl = slog.LevelWarn
	default:
		lvl = slog.LevelError
	}
	if lvl == slog.LevelDebug && code != codes.OK {
		lvl = slog.LevelInfo
	}
	attrs := []any{"method", method, "code", code.String(), "duration_ms", time.Since(start).Milliseconds()}
	if err != nil {
		attrs = append(attrs, "err", err)
	}
	log.Log(ctx, lvl, "rpc", attrs...)
}

// newRPCMetrics registers the gRPC server metrics of the ecosystem's
// Prometheus provider (go-grpc-middleware providers/prometheus): the
// standard names and labels (grpc_server_started_total,
// grpc_server_handled_total{grpc_type,grpc_service,grpc_method,grpc_code},
// grpc_server_handling_seconds, ...) that existing gRPC dashboards read.
func newRPCMetrics(reg prometheus.Registerer) *grpcprom.ServerMetrics {
	m := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(
		grpcprom.WithHistogramBuckets(prometheus.ExponentialBuckets(0.0005, 2, 16))))
	reg.MustRegister(m)
	return m
}

// defaultDeadline gives a unary RPC that arrived without a deadline one of
// d, so no request waits on a stuck dependency forever; a caller's own
// deadline is kept.
func defaultDeadline(d time.Duration) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if _, ok := ctx.Deadline(); ok || d <= 0 {
			return h(ctx, req)
		}
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return h(ctx, req)
	}
}
