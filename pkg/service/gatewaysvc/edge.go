package gatewaysvc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/resultsync/resultsync/pkg/platform/config"
)

// APILimits bound what one HTTP client of the JSON API can send and hold.
// A zero field means its default (the Default* constants), so a Config
// written in code gets the limits a loaded one has.
type APILimits struct {
	// MaxBodyBytes caps a request body: a larger one is answered 413 with
	// a JSON error, before it is read when Content-Length says so, as soon
	// as the limit is crossed otherwise.
	MaxBodyBytes int
	// ReadHeaderTimeout bounds reading a request's headers, ReadTimeout the
	// whole request, body included (a body that trickles in slower is
	// answered 408 and the connection closed). There is no write timeout:
	// watch streams answer for as long as their run lasts.
	ReadHeaderTimeout, ReadTimeout time.Duration
	// IdleTimeout closes a keep-alive connection without requests.
	IdleTimeout time.Duration
}

// The default API limits.
const (
	DefaultMaxBodyBytes      = 1 << 20
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
)

func (a *APILimits) flags(l *config.Loader) {
	l.Int(&a.MaxBodyBytes, "max-body-bytes", "RS_GATEWAY_MAX_BODY_BYTES", DefaultMaxBodyBytes,
		"largest JSON API request body in bytes (larger: 413)")
	l.Duration(&a.ReadHeaderTimeout, "api-read-header-timeout", "RS_GATEWAY_API_READ_HEADER_TIMEOUT", DefaultReadHeaderTimeout,
		"time to read a JSON API request's headers")
	l.Duration(&a.ReadTimeout, "api-read-timeout", "RS_GATEWAY_API_READ_TIMEOUT", DefaultReadTimeout,
		"time to read a whole JSON API request, body included (slower: 408)")
	l.Duration(&a.IdleTimeout, "api-idle-timeout", "RS_GATEWAY_API_IDLE_TIMEOUT", DefaultIdleTimeout,
		"idle keep-alive JSON API connections are closed after this long")
}

func (a *APILimits) check() error {
	var errs []error
	if a.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("max-body-bytes must not be negative, got %d", a.MaxBodyBytes))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"api-read-header-timeout", a.ReadHeaderTimeout}, {"api-read-timeout", a.ReadTimeout}, {"api-idle-timeout", a.IdleTimeout}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %s", d.name, d.v))
		}
	}
	if w := a.withDefaults(); w.ReadHeaderTimeout > w.ReadTimeout {
		errs = append(errs, fmt.Errorf("api-read-header-timeout %s must not exceed api-read-timeout %s", w.ReadHeaderTimeout, w.ReadTimeout))
	}
	return errors.Join(errs...)
}

func (a APILimits) withDefaults() APILimits {
	if a.MaxBodyBytes == 0 {
		a.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if a.ReadHeaderTimeout == 0 {
		a.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if a.ReadTimeout == 0 {
		a.ReadTimeout = DefaultReadTimeout
	}
	if a.IdleTimeout == 0 {
		a.IdleTimeout = DefaultIdleTimeout
	}
	return a
}

// limitedBody is a request body read through http.MaxBytesReader that
// remembers why reading it failed, so the error handler can answer 413 or
// 408 instead of the 400 a failed decode would give.
type limitedBody struct {
	io.ReadCloser
	tooLarge, timedOut atomic.Bool
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &mbe):
			b.tooLarge.Store(true)
		case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, http.ErrBodyReadAfterClose):
			b.timedOut.Store(true)
		}
	}
	return n, err
}

// limitBodies answers 413 at once to a request whose Content-Length exceeds
// maxBytes, and gives every other handler a body that fails past maxBytes.
func limitBodies(maxBytes int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > maxBytes {
			tooLarge(w, maxBytes)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &limitedBody{ReadCloser: http.MaxBytesReader(w, r.Body, maxBytes)}
		}
		next.ServeHTTP(w, r)
	})
}

// bodyFailure answers the request when reading its body failed for its size
// or its slowness, and reports whether it did.
func bodyFailure(w http.ResponseWriter, r *http.Request, maxBytes int64) bool {
	b, ok := r.Body.(*limitedBody)
	switch {
	case !ok:
		return false
	case b.tooLarge.Load():
		tooLarge(w, maxBytes)
	case b.timedOut.Load():
		w.Header().Set("Connection", "close")
		writeJSONError(w, http.StatusRequestTimeout, codes.DeadlineExceeded, "request body not received within the read timeout")
	default:
		return false
	}
	return true
}

func tooLarge(w http.ResponseWriter, maxBytes int64) {
	w.Header().Set("Connection", "close") // the rest of the body is not read
	writeJSONError(w, http.StatusRequestEntityTooLarge, codes.ResourceExhausted,
		fmt.Sprintf("request body larger than the limit of %d bytes", maxBytes))
}

// writeJSONError writes an error in the shape of the gateway's other errors
// (a google.rpc.Status as JSON: code, message, details).
func writeJSONError(w http.ResponseWriter, httpCode int, code codes.Code, msg string) {
	body, _ := json.Marshal(struct {
		Code    int32    `json:"code"`
		Message string   `json:"message"`
		Details []string `json:"details"`
	}{int32(code), msg, []string{}}) //nolint:gosec // G115: gRPC codes are small
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(httpCode)
	_, _ = w.Write(body)
}
