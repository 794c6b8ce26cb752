package auth_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/auth"
	"github.com/resultsync/resultsync/pkg/platform/server"
	"github.com/resultsync/resultsync/pkg/testkit/servertest"
)

type whoami struct {
	fitnessv1.UnimplementedResultServiceServer
}

func (whoami) GetResult(ctx context.Context, _ *fitnessv1.GetResultRequest) (*fitnessv1.GetResultResponse, error) {
	p, _ := auth.FromContext(ctx)
	return &fitnessv1.GetResultResponse{Result: &fitnessv1.FitnessResult{Unit: p.Subject}}, nil
}

func (whoami) RecordResult(context.Context, *fitnessv1.RecordResultRequest) (*fitnessv1.RecordResultResponse, error) {
	return &fitnessv1.RecordResultResponse{}, nil
}

func TestPolicyEnforcement(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := server.New(log, server.Config{GRPCAddr: "127.0.0.1:0", ShutdownGrace: time.Second, Auth: auth.Local(auth.DevTokens)},
		server.WithAuth(auth.ResultPolicy))
	if err != nil {
		t.Fatal(err)
	}
	fitnessv1.RegisterResultServiceServer(srv.GRPC(), whoami{})
	conn := servertest.Serve(t, srv)
	c := fitnessv1.NewResultServiceClient(conn)
	as := func(token string) context.Context {
		if token == "" {
			return context.Background()
		}
		return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
	}
	tests := []struct {
		name, token string
		write       bool
		want        codes.Code
	}{
		{"no token read", "", false, codes.Unauthenticated},
		{"unknown token", "not-a-token", false, codes.Unauthenticated},
		{"viewer read", "dev-viewer", false, codes.OK},
		{"viewer write", "dev-viewer", true, codes.PermissionDenied},
		{"operator write", "dev-operator", true, codes.OK},
		{"admin write", "dev-admin", true, codes.OK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.write {
				_, err = c.RecordResult(as(tc.token), &fitnessv1.RecordResultRequest{})
			} else {
				var resp *fitnessv1.GetResultResponse
				resp, err = c.GetResult(as(tc.token), &fitnessv1.GetResultRequest{})
				if err == nil && resp.GetResult().GetUnit() != tc.token {
					t.Errorf("handler saw caller %q, want %q", resp.GetResult().GetUnit(), tc.token)
				}
			}
			if got := status.Code(err); got != tc.want {
				t.Errorf("code = %s (%v), want %s", got, err, tc.want)
			}
		})
	}
	if _, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Errorf("health without a token: %v, want open", err)
	}
	_, err = c.ListResults(as("dev-admin"), &fitnessv1.ListResultsRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("ListResults = %v; want Unimplemented (authorized, not implemented here)", err)
	}
}

func TestParseTokens(t *testing.T) {
	for _, bad := range []string{"", "short=x:viewer", "tokentoken=x:root", "tokentoken=:viewer", "tokentoken", "tokentoken=a:viewer,tokentoken=b:admin"} {
		if _, err := auth.ParseTokens(bad); err == nil {
			t.Errorf("ParseTokens(%q) accepted", bad)
		}
	}
	if _, err := auth.ParseTokens(auth.DevTokens); err != nil {
		t.Errorf("dev tokens rejected: %v", err)
	}
}
