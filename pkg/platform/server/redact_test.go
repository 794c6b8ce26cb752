package server_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	fitnessv1 "github.com/resultsync/resultsync/gen/fitness/v1"
	"github.com/resultsync/resultsync/pkg/platform/apierr"
	"github.com/resultsync/resultsync/pkg/platform/server"
)

func TestRedactAddresses(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"shard-0 unavailable: dial tcp 127.0.0.1:3307: connect: connection refused",
			"shard-0 unavailable: dial tcp <address>: connect: connection refused"},
		{`connection error: desc = "transport: Error while dialing: dial tcp 10.244.1.5:7101: i/o timeout"`,
			`connection error: desc = "transport: Error while dialing: dial tcp <address>: i/o timeout"`},
		{"dial tcp mysql-0.mysql.resultsync.svc:3306: connect: connection refused",
			"dial tcp <address>: connect: connection refused"},
		{"dial tcp: lookup results.resultsync.svc on 10.96.0.10:53: no such host",
			"dial tcp: lookup <host> on <address>: no such host"},
		{"handshake: failed to read packet from 127.0.0.1:43061 (conn_id=7): read tcp 127.0.0.1:35792->127.0.0.1:43061: read: connection reset by peer",
			"handshake: failed to read packet from <address> (conn_id=7): read tcp <address>-><address>: read: connection reset by peer"},
		{"dial tcp [fd00::12]:9000: connect: network is unreachable", "dial tcp <address>: connect: network is unreachable"},
		{"record 900001 is at version 3, not 2 (result 2.31)", "record 900001 is at version 3, not 2 (result 2.31)"},
	} {
		if got := server.RedactAddresses(tc.in); got != tc.want {
			t.Errorf("RedactAddresses(%q)\n = %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// unavailable answers GetResult with a store's UNAVAILABLE naming the
// shard's address and DeleteResult with a plain error naming one.
type unavailable struct {
	fitnessv1.UnimplementedResultServiceServer
}

func (unavailable) GetResult(context.Context, *fitnessv1.GetResultRequest) (*fitnessv1.GetResultResponse, error) {
	st, err := status.New(codes.Unavailable, "shard shard-1 unavailable: dial tcp 10.1.2.3:3306: connect: connection refused").
		WithDetails(&errdetails.RetryInfo{})
	if err != nil {
		return nil, err
	}
	return nil, st.Err()
}

func (unavailable) DeleteResult(context.Context, *fitnessv1.DeleteResultRequest) (*fitnessv1.DeleteResultResponse, error) {
	return nil, errors.New("writing the audit record: dial tcp 10.1.2.4:3306: i/o timeout")
}

// redactLogSink is a log sink safe for the server's goroutines.
type redactLogSink struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *redactLogSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *redactLogSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A status leaving a server carries no internal address (its code and
// details kept); the server's log line keeps the whole message.
func TestStatusesLeaveWithoutInternalAddresses(t *testing.T) {
	var logs redactLogSink
	srv, err := server.New(slog.New(slog.NewJSONHandler(&logs, nil)), server.Config{GRPCAddr: "127.0.0.1:0", ShutdownGrace: time.Second, LogLevel: "info"})
	if err != nil {
		t.Fatal(err)
	}
	fitnessv1.RegisterResultServiceServer(srv.GRPC(), unavailable{})
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	c := fitnessv1.NewResultServiceClient(dial(t, srv.GRPCAddr()))
	cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer ccancel()

	_, err = c.GetResult(cctx, &fitnessv1.GetResultRequest{})
	st := status.Convert(err)
	// Its details: the RetryInfo kept and the ErrorInfo apierr's
	// interceptor adds (the generic reason UNAVAILABLE).
	if st.Code() != codes.Unavailable || st.Message() != "shard shard-1 unavailable: dial tcp <address>: connect: connection refused" || len(st.Details()) != 2 {
		t.Errorf("GetResult: %v %q details %v, want UNAVAILABLE without the address, RetryInfo kept", st.Code(), st.Message(), st.Details())
	}
	if r, _ := apierr.ReasonOf(err); r != apierr.UnavailableReason {
		t.Errorf("GetResult: reason %s, want UNAVAILABLE", r)
	}
	// A plain error is INTERNAL (apierr.Status), its address redacted.
	_, err = c.DeleteResult(cctx, &fitnessv1.DeleteResultRequest{})
	if st := status.Convert(err); st.Code() != codes.Internal || strings.Contains(st.Message(), "10.1.2.4") {
		t.Errorf("DeleteResult: %v %q, want INTERNAL without the address", st.Code(), st.Message())
	}
	eventually(t, "the log lines", func() bool {
		return strings.Contains(logs.String(), "10.1.2.3:3306") && strings.Contains(logs.String(), "10.1.2.4:3306")
	})
}
