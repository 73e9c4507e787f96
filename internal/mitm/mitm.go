// Package mitm is a test helper: a man in the middle of one TCP
// connection, for tests of what a link does when someone on the path
// reads or changes its bytes.
package mitm

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
)

// Forward copies what the dialer sends (from) to the target (to), changed
// as it likes. When it returns, the proxy hangs up on both.
type Forward func(from io.Reader, to net.Conn)

// Proxy sits in front of a target for one connection: what the target
// sends goes back untouched, what the dialer sends goes through a Forward,
// and it keeps every byte either side sent.
type Proxy struct {
	ln   net.Listener
	mu   sync.Mutex
	wire bytes.Buffer
}

// Start listens on loopback for one connection to pass to target; it
// stops listening when the test ends.
func Start(tb testing.TB, target string, forward Forward) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	p := &Proxy{ln: ln}
	go p.serve(target, forward)
	return p
}

// Addr is the address to dial in place of the target's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Seen is every byte that has passed so far, both ways, as sent.
func (p *Proxy) Seen() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.Clone(p.wire.Bytes())
}

func (p *Proxy) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.wire.Write(b)
}

func (p *Proxy) serve(target string, forward Forward) {
	in, err := p.ln.Accept()
	if err != nil {
		return
	}
	defer in.Close()
	out, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer out.Close()
	go func() {
		io.Copy(in, io.TeeReader(out, p))
		in.Close()
	}()
	forward(io.TeeReader(in, p), out)
}
