package apierr_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/resultsync/resultsync/pkg/apierr"
)

func TestCode(t *testing.T) {
	errGone := apierr.New(apierr.NotFound, "result 7 not found")
	tests := []struct {
		name string
		err  error
		want codes.Code
	}{
		{"nil", nil, codes.OK},
		{"cancelled context", context.Canceled, codes.Canceled},
		{"wrapped cancellation", fmt.Errorf("reading shard-1: %w", context.Canceled), codes.Canceled},
		{"deadline", fmt.Errorf("claiming: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{"a status passes through", status.Error(codes.PermissionDenied, "no"), codes.PermissionDenied},
		{"a wrapped status passes through", fmt.Errorf("calling: %w", status.Error(codes.Unavailable, "down")), codes.Unavailable},
		{"validation", apierr.New(apierr.InvalidArgument, "bad"), codes.InvalidArgument},
		{"not found sentinel", errGone, codes.NotFound},
		{"wrapped not found", fmt.Errorf("getting: %w", errGone), codes.NotFound},
		{"kind wrapped directly", fmt.Errorf("run 9: %w", apierr.NotFound), codes.NotFound},
		{"already exists", apierr.New(apierr.AlreadyExists, "taken"), codes.AlreadyExists},
		{"failed precondition", apierr.New(apierr.FailedPrecondition, "deleted"), codes.FailedPrecondition},
		{"conflict", apierr.New(apierr.Aborted, "version moved"), codes.Aborted},
		{"permission", apierr.New(apierr.PermissionDenied, "self approval"), codes.PermissionDenied},
		{"limit", apierr.New(apierr.ResourceExhausted, "queue full"), codes.ResourceExhausted},
		{"deadlock", fmt.Errorf("committing: %w", &mysql.MySQLError{Number: 1213, Message: "Deadlock"}), codes.Aborted},
		{"lock wait timeout", &mysql.MySQLError{Number: 1205, Message: "Lock wait timeout"}, codes.Aborted},
		{"refused connection", fmt.Errorf("shard-0: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), codes.Unavailable},
		{"broken connection", driver.ErrBadConn, codes.Unavailable},
		{"invalid connection", mysql.ErrInvalidConn, codes.Unavailable},
		{"closed connection", sql.ErrConnDone, codes.Unavailable},
		{"another server error", &mysql.MySQLError{Number: 1146, Message: "Table doesn't exist"}, codes.Internal},
		{"anything else", errors.New("boom"), codes.Internal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := apierr.Code(tc.err); got != tc.want {
				t.Errorf("Code(%v) = %v, want %v", tc.err, got, tc.want)
			}
			st := apierr.Status(tc.err)
			if tc.err == nil {
				if st != nil {
					t.Errorf("Status(nil) = %v", st)
				}
				return
			}
			if got := status.Code(st); got != tc.want {
				t.Errorf("Status(%v) has code %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestSentinelKeepsIdentityAndMessage(t *testing.T) {
	errGone := apierr.New(apierr.NotFound, "result not found")
	err := fmt.Errorf("shard-1: %w", errGone)
	if !errors.Is(err, errGone) || !errors.Is(err, apierr.NotFound) || errors.Is(err, apierr.AlreadyExists) {
		t.Errorf("errors.Is on a wrapped sentinel: identity %v, kind %v, other kind %v",
			errors.Is(err, errGone), errors.Is(err, apierr.NotFound), errors.Is(err, apierr.AlreadyExists))
	}
	if got := status.Convert(apierr.Status(err)).Message(); got != "shard-1: result not found" {
		t.Errorf("message = %q", got)
	}
}
