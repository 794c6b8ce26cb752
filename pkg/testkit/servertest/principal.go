package servertest

import (
	"context"

	"google.golang.org/grpc"

	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/server"
)

// Admin is the platform-wide admin AsPlatform makes every caller.
var Admin = auth.Principal{Subject: "servertest-admin", Role: auth.RoleAdmin, Platform: true}

// AsPlatform makes every RPC of a server built without authentication act
// as Admin, for a test of a service's behaviour rather than its callers
// (test/schoolscope checks the callers).
func AsPlatform() []server.Option {
	return []server.Option{
		server.WithUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			return h(auth.WithPrincipal(ctx, Admin), req)
		}),
		server.WithStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			return h(srv, principalStream{ServerStream: ss, ctx: auth.WithPrincipal(ss.Context(), Admin)})
		}),
	}
}

type principalStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s principalStream) Context() context.Context { return s.ctx }
