package tlstest

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"
)

// Handshakes listens on 127.0.0.1:0 with TLS cfg, completes each handshake
// and closes the connection (it speaks no protocol beyond TLS), reporting
// "client <common name of its certificate>" ("client " without one) or
// "error: <the handshake error>" for every connection. It returns the
// listener's address.
func Handshakes(t testing.TB, cfg *tls.Config) (string, <-chan string) {
	t.Helper()
	var lc net.ListenConfig
	lis, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lis.Close() })
	got := make(chan string, 64)
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				tc := tls.Server(c, cfg)
				if err := tc.Handshake(); err != nil {
					got <- "error: " + err.Error()
					return
				}
				cn := ""
				if pc := tc.ConnectionState().PeerCertificates; len(pc) > 0 {
					cn = pc[0].Subject.CommonName
				}
				got <- "client " + cn
			}()
		}
	}()
	return lis.Addr().String(), got
}
