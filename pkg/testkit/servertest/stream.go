package servertest

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Received is one message of a client stream, or the error that ended it,
// with the time it arrived.
type Received[M any] struct {
	Msg M
	Err error
	At  time.Time
}

// Receive reads a client stream in the background (recv is its Recv) until
// it ends; the channel closes after the ending error.
func Receive[M any](recv func() (M, error)) <-chan Received[M] {
	out := make(chan Received[M], 16)
	go func() {
		defer close(out)
		for {
			m, err := recv()
			out <- Received[M]{m, err, time.Now()}
			if err != nil {
				return
			}
		}
	}()
	return out
}

// Next returns the next message or ending error of ch, failing the test
// when none comes within the deadline or the stream is already over.
func Next[M any](t testing.TB, ch <-chan Received[M], within time.Duration, what string) Received[M] {
	t.Helper()
	select {
	case r, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the stream is closed", what)
		}
		return r
	case <-time.After(within):
		t.Fatalf("%s: nothing within %s", what, within)
	}
	return Received[M]{}
}

// EndsAtBound reads ch, a watch stream opened at start whose server bounds
// it to bound, through its first message and then to its end, and fails
// the test unless the end is UNAVAILABLE naming its "maximum duration of
// <bound>", reached no earlier than bound after start.
func EndsAtBound[M any](t testing.TB, ch <-chan Received[M], start time.Time, bound time.Duration) {
	t.Helper()
	if r := Next(t, ch, 10*time.Second, "the first message"); r.Err != nil {
		t.Fatal(r.Err)
	}
	r := Next(t, ch, bound+20*time.Second, "the end of the stream")
	if status.Code(r.Err) != codes.Unavailable || !strings.Contains(status.Convert(r.Err).Message(), "maximum duration of "+bound.String()) {
		t.Fatalf("stream ended with %v, want UNAVAILABLE naming its maximum duration %s", r.Err, bound)
	}
	if took := r.At.Sub(start); took < bound {
		t.Errorf("the stream ended after %s, before its %s bound", took, bound)
	}
}
