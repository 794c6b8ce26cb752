package infratest

import (
	"net"
	"sync"
	"testing"
)

// Proxy forwards a loopback port to a server and can cut the path, as if the
// server stopped: Down closes every connection and refuses new ones; Up
// accepts again. Pause holds every byte in both directions (connections stay
// open, as with a hung server or a partitioned network) until Resume;
// HoldToServer holds only what the clients send.
type Proxy struct {
	target string
	lis    net.Listener
	mu     sync.Mutex
	down   bool
	paused chan struct{} // non-nil while paused; closed by Resume
	held   chan struct{} // non-nil while client bytes are held; closed by Resume
	conns  map[net.Conn]struct{}
	cut    int64 // > 0: bytes the servers may still send before Down (CutAfter)
}

// NewProxy starts a proxy to target on 127.0.0.1:0, closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := StartProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// StartProxy starts a proxy to target on 127.0.0.1:0 (outside a test, e.g.
// the chaos soak); Close stops it.
func StartProxy(target string) (*Proxy, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, lis: lis, conns: map[net.Conn]struct{}{}}
	go p.accept()
	return p, nil
}

// Close stops accepting and cuts every connection.
func (p *Proxy) Close() {
	p.lis.Close()
	p.Resume()
	p.Down()
}

// Addr is the proxy's address.
func (p *Proxy) Addr() string { return p.lis.Addr().String() }

func (p *Proxy) accept() {
	for {
		c, err := p.lis.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
		p.mu.Unlock()
		go p.pipe(c, s, false)
		go p.pipe(s, c, true)
	}
}

// pipe copies src to dst; toServer says the bytes come from a client.
func (p *Proxy) pipe(dst, src net.Conn, toServer bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.wait(toServer)
			n, last := p.spend(toServer, n)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
			if last {
				p.Down()
				break
			}
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// wait blocks while the proxy is paused, and while client bytes are held
// when toServer.
func (p *Proxy) wait(toServer bool) {
	p.mu.Lock()
	paused, held := p.paused, p.held
	p.mu.Unlock()
	if paused != nil {
		<-paused
	}
	if toServer && held != nil {
		<-held
	}
}

// CutAfter lets n more bytes of the servers' answers through, then cuts
// every connection and refuses new ones (Down), as when a server or the
// network dies in the middle of a result.
func (p *Proxy) CutAfter(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = max(n, 1)
}

// spend takes n server bytes from what CutAfter allows: how many to pass on,
// and whether the proxy goes down after them.
func (p *Proxy) spend(toServer bool, n int) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if toServer || p.cut <= 0 {
		return n, false
	}
	if int64(n) < p.cut {
		p.cut -= int64(n)
		return n, false
	}
	n, p.cut = int(p.cut), 0
	return n, true
}

// Pause holds all traffic: reads and writes through the proxy hang.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused == nil {
		p.paused = make(chan struct{})
	}
}

// HoldToServer holds what the clients send (requests, acknowledgments)
// while the server's bytes still reach them, as when a client's outgoing
// path fails; Down then drops what was held, Resume delivers it.
func (p *Proxy) HoldToServer() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = make(chan struct{})
	}
}

// Resume lets held traffic through again.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused != nil {
		close(p.paused)
		p.paused = nil
	}
	if p.held != nil {
		close(p.held)
		p.held = nil
	}
}

// Down cuts every connection and refuses new ones.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
}

// Up accepts connections again.
func (p *Proxy) Up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}
