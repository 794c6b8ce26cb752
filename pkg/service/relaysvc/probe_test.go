package relaysvc

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/delivery/relay"
)

var errDown = errors.New("connection refused")

func TestBrokerCheck(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		lookup  error
		outcome relay.Outcome
		wantErr bool
	}{
		{"broker answers, nothing published yet", nil, relay.Outcome{}, false},
		{"broker answers, last publish acknowledged", nil, relay.Outcome{At: now.Add(-time.Second)}, false},
		{"lookup fails", errDown, relay.Outcome{}, true},
		{"lookup fails although a publish succeeded", errDown, relay.Outcome{At: now}, true},
		{"lookups answer but the last publish got no ack", nil, relay.Outcome{At: now.Add(-3 * time.Second), Err: relay.ErrNoAck}, true},
		{"a failed publish older than the window is no evidence", nil, relay.Outcome{At: now.Add(-11 * time.Second), Err: relay.ErrNoAck}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := brokerCheck(
				func(context.Context) error { return tc.lookup },
				func() relay.Outcome { return tc.outcome },
				10*time.Second, func() time.Time { return now })
			err := check(context.Background())
			if (err != nil) != tc.wantErr {
				t.Errorf("check = %v, want error: %v", err, tc.wantErr)
			}
		})
	}
}

func TestShardChecks(t *testing.T) {
	ok := func(context.Context) error { return nil }
	down := func(context.Context) error { return errDown }
	refused := errors.New("Error 1045 (28000): Access denied")
	for _, tc := range []struct {
		name    string
		lastErr error
		ping    func(context.Context) error
		wantErr error
	}{
		{"answers and relays", nil, ok, nil},
		{"does not answer", nil, down, errDown},
		{"answers pings but refuses the relay's claims", refused, ok, refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := shardCheck(func() error { return tc.lastErr }, tc.ping)(context.Background())
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Errorf("check = %v, want %v", err, tc.wantErr)
			}
		})
	}
	if err := anyOf([]func(context.Context) error{down, ok})(context.Background()); err != nil {
		t.Errorf("anyOf with one shard up = %v, want nil", err)
	}
	if err := anyOf([]func(context.Context) error{down, down})(context.Background()); !errors.Is(err, errDown) {
		t.Errorf("anyOf with every shard down = %v, want their errors", err)
	}
}
