// Package servertest runs a server.Server on a loopback port for the length
// of a test and dials it.
package servertest

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/resultsync/resultsync/pkg/server"
)

// Serve listens (if needed) and serves srv until the test ends, then returns
// a client connection to it. Register services before calling Serve.
func Serve(t testing.TB, srv *server.Server) *grpc.ClientConn {
	t.Helper()
	if srv.GRPCAddr() == "" {
		if err := srv.Listen(); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	conn, err := grpc.NewClient(srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
