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
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/resultsync/resultsync/pkg/platform/auth"
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

// callerKey carries an RPC's *caller from its logging interceptor to
// noteCaller, which runs after authentication.
type callerKey struct{}

// caller is who made an RPC, filled once it is authenticated.
type caller struct{ subject string }

// noteCallerUnary records the authenticated subject for the RPC's log line;
// it runs right after the auth interceptor.
func noteCallerUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	noteCaller(ctx)
	return h(ctx, req)
}

func noteCallerStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	noteCaller(ss.Context())
	return h(srv, ss)
}

func noteCaller(ctx context.Context) {
	if c, ok := ctx.Value(callerKey{}).(*caller); ok {
		c.subject = auth.Subject(ctx)
	}
}

// requestID is the request_id field of a request message ("" when the
// message has no singular string field of that name), found by reflection
// so that every RPC that carries one is logged with it.
func requestID(m any) string {
	pm, ok := m.(proto.Message)
	if !ok || pm == nil {
		return ""
	}
	r := pm.ProtoReflect()
	fd := r.Descriptor().Fields().ByName("request_id")
	if fd == nil || fd.Kind() != protoreflect.StringKind || fd.Cardinality() == protoreflect.Repeated {
		return ""
	}
	return r.Get(fd).String()
}

func logUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		start := time.Now()
		c := &caller{}
		resp, err := h(context.WithValue(ctx, callerKey{}, c), req)
		logRPC(ctx, log, info.FullMethod, start, c.subject, requestID(req), err)
		return resp, err
	}
}

// loggedStream gives the handler a context carrying the RPC's caller and
// keeps the request_id of the first message received.
type loggedStream struct {
	grpc.ServerStream
	ctx       context.Context
	received  bool
	requestID string
}

func (s *loggedStream) Context() context.Context { return s.ctx }

func (s *loggedStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err == nil && !s.received {
		s.received, s.requestID = true, requestID(m)
	}
	return err
}

func logStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		start := time.Now()
		c := &caller{}
		ls := &loggedStream{ServerStream: ss, ctx: context.WithValue(ss.Context(), callerKey{}, c)}
		err := h(srv, ls)
		logRPC(ss.Context(), log, info.FullMethod, start, c.subject, ls.requestID, err)
		return err
	}
}

// logRPC writes an RPC's line: method, code, duration, the authenticated
// caller and the request's request_id when there are, and the error.
func logRPC(ctx context.Context, log *slog.Logger, method string, start time.Time, subject, requestID string, err error) {
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
	if subject != "" {
		attrs = append(attrs, "caller", subject)
	}
	if requestID != "" {
		attrs = append(attrs, "request_id", requestID)
	}
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
