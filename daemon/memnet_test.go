package daemon

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// MemNetwork is a Network inside one process, for tests of the driver
// (memberlist's MockNetwork): a link is a pair of yamux sessions over
// net.Pipe, with no handshake and no sealing. Each daemon takes its own
// MemHost, so that a test can end all of one daemon's links at once, as
// the kernel does when a process dies.
type MemNetwork struct {
	mu        sync.Mutex
	listeners map[string]*memListener
	last      int
}

// NewMemNetwork makes an empty in-memory network.
func NewMemNetwork() *MemNetwork { return &MemNetwork{listeners: map[string]*memListener{}} }

// Host is a new daemon's place on the network.
func (n *MemNetwork) Host() *MemHost { return &MemHost{net: n} }

// MemHost is one daemon's side of a MemNetwork.
type MemHost struct {
	net      *MemNetwork
	mu       sync.Mutex
	sessions []*yamux.Session
	crashed  bool
}

// Listen listens at a fresh address mem://N; ip is ignored.
func (h *MemHost) Listen(ip string) (Listener, error) {
	n := h.net
	n.mu.Lock()
	defer n.mu.Unlock()
	n.last++
	l := &memListener{host: h, net: n, addr: "mem://" + strconv.Itoa(n.last),
		conns: make(chan *yamux.Session), done: make(chan struct{})}
	n.listeners[l.addr] = l
	return l, nil
}

// Dial links to the listener at addr, or fails as a refused connection.
func (h *MemHost) Dial(ctx context.Context, addr string) (Session, error) {
	h.net.mu.Lock()
	l := h.net.listeners[addr]
	h.net.mu.Unlock()
	if l == nil {
		return nil, fmt.Errorf("%s: connection refused", addr)
	}
	near, far := net.Pipe()
	client, err := yamux.Client(near, memYamux())
	if err != nil {
		return nil, err
	}
	server, err := yamux.Server(far, memYamux())
	if err != nil {
		client.Close()
		return nil, err
	}
	select {
	case l.conns <- server:
	case <-l.done:
		client.Close()
		server.Close()
		return nil, fmt.Errorf("%s: connection refused", addr)
	case <-ctx.Done():
		client.Close()
		server.Close()
		return nil, ctx.Err()
	}
	return h.keep(client), nil
}

// Crash ends every link of the host and its listener at once, as the
// death of its process would.
func (h *MemHost) Crash() {
	h.mu.Lock()
	h.crashed = true
	sessions := h.sessions
	h.sessions = nil
	h.mu.Unlock()
	for _, s := range sessions {
		s.Close()
	}
	h.net.mu.Lock()
	for addr, l := range h.net.listeners {
		if l.host == h {
			delete(h.net.listeners, addr)
			l.Close()
		}
	}
	h.net.mu.Unlock()
}

// keep records a session of the host; one made after its crash ends.
func (h *MemHost) keep(s *yamux.Session) Session {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.crashed {
		s.Close()
	}
	h.sessions = append(h.sessions, s)
	return memSession{s}
}

func memYamux() *yamux.Config {
	cfg := yamux.DefaultConfig()
	cfg.EnableKeepAlive = false
	cfg.LogOutput = io.Discard
	return cfg
}

type memListener struct {
	host  *MemHost
	net   *MemNetwork
	addr  string
	conns chan *yamux.Session
	done  chan struct{}
	once  sync.Once
}

func (l *memListener) Accept(ctx context.Context) (Session, error) {
	select {
	case s := <-l.conns:
		return l.host.keep(s), nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *memListener) Addr() string { return l.addr }

func (l *memListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// memSession is a yamux session as a Session. net.Pipe hands each write
// to the peer's reader before it returns, so there is nothing to flush,
// and no failure of its own to report.
type memSession struct{ *yamux.Session }

func (s memSession) Open() (net.Conn, error)   { return s.Session.Open() }
func (s memSession) Accept() (net.Conn, error) { return s.Session.Accept() }
func (s memSession) Done() <-chan struct{}     { return s.Session.CloseChan() }
func (s memSession) Err() error                { return nil }
func (s memSession) Flush(time.Duration)       {}
