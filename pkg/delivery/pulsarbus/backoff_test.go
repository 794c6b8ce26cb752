package pulsarbus_test

import (
	"testing"
	"time"

	"github.com/resultsync/resultsync/pkg/delivery/pulsarbus"
)

// Reconnection delays grow from 100ms, never pass the cap (plus its 20%
// jitter), and start again from the bottom after Reset.
func TestReconnectBackoff(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  time.Duration
		want time.Duration // the cap in effect
	}{
		{"explicit cap", 700 * time.Millisecond, 700 * time.Millisecond},
		{"default cap", 0, pulsarbus.DefaultReconnectMax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := pulsarbus.ReconnectBackoff(tc.max)()
			first := b.Next()
			if first < 100*time.Millisecond || first > 120*time.Millisecond {
				t.Errorf("first delay %s, want 100-120ms", first)
			}
			for range 20 {
				if d := b.Next(); d > tc.want+tc.want/5 {
					t.Fatalf("delay %s beyond the cap %s (+20%%)", d, tc.want)
				}
			}
			if !b.IsMaxBackoffReached() {
				t.Error("cap never reported as reached")
			}
			b.Reset()
			if d := b.Next(); d > 120*time.Millisecond {
				t.Errorf("after Reset the delay is %s, want 100-120ms", d)
			}
		})
	}
}
