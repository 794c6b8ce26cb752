package apierr

import (
	"context"

	"google.golang.org/grpc"
)

// UnaryServerInterceptor makes every error a handler (or an interceptor
// after it, authentication included) returns a status with its ErrorInfo:
// Status(err), so an error no site marked gets the generic reason of its
// code and a marked one keeps its reason.
func UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		if err != nil {
			return resp, Status(err)
		}
		return resp, nil
	}
}

// StreamServerInterceptor is UnaryServerInterceptor for streams: the error
// that ends the stream.
func StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if err := h(srv, ss); err != nil {
			return Status(err)
		}
		return nil
	}
}
