package pulsarbus

import (
	"math/rand/v2"
	"time"

	"github.com/apache/pulsar-client-go/pulsar/backoff"
)

// DefaultReconnectMax caps the reconnection delay of ReconnectBackoff when
// it is given no positive maximum.
const DefaultReconnectMax = 2 * time.Second

// ReconnectBackoff returns a reconnection policy for producers and consumers
// (ProducerOptions.BackOffPolicyFunc): 100 ms, doubling, capped at max, plus
// up to 20% jitter. The client's own policy caps at 60 s, so after a long
// outage a producer could take a minute to notice that the broker is back;
// with this one it reconnects within about max of the broker's return.
func ReconnectBackoff(max time.Duration) func() backoff.Policy {
	if max <= 0 {
		max = DefaultReconnectMax
	}
	return func() backoff.Policy { return &cappedBackoff{max: max} }
}

type cappedBackoff struct {
	max, cur time.Duration
}

func (b *cappedBackoff) Next() time.Duration {
	b.cur = min(max(2*b.cur, 100*time.Millisecond), b.max)
	return b.cur + time.Duration(rand.Float64()*0.2*float64(b.cur))
}

func (b *cappedBackoff) IsMaxBackoffReached() bool { return b.cur >= b.max }

func (b *cappedBackoff) Reset() { b.cur = 0 }
