package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/yamux"

	"prsh/internal/tcp"
)

// Options tune a listener or a dialer.
type Options struct {
	// HandshakeTimeout bounds the handshake; 10 s when zero.
	HandshakeTimeout time.Duration
	// KeepAlive is how long a link may be quiet, either way, before the
	// dialer pings it (the listener pings only after a quarter of
	// Silence); 2 s when zero.
	KeepAlive time.Duration
	// Silence is how long a link may go without a byte from the peer
	// before it ends with a SilentError; 20 s when zero. It bounds how long a
	// hung or vanished peer goes unnoticed.
	Silence time.Duration
	// LocalIP is the address Dial connects from, so that a daemon's
	// traffic leaves from the address of its node; "" lets the kernel pick.
	LocalIP string
	// Ports is where Listen may listen when its address has port 0
	// (mpirun --port-range); the zero value lets the kernel pick.
	Ports tcp.Ports
	// MaxHandshakes bounds the handshakes a listener runs at once; 256
	// when zero. More connections wait in the kernel's backlog, so a
	// flood of strangers costs a bounded amount of memory and descriptors.
	MaxHandshakes int
	Logger        hclog.Logger
}

func (o Options) maxHandshakes() int {
	if o.MaxHandshakes > 0 {
		return o.MaxHandshakes
	}
	return 256
}

func (o Options) handshakeTimeout() time.Duration {
	if o.HandshakeTimeout > 0 {
		return o.HandshakeTimeout
	}
	return 10 * time.Second
}

func (o Options) keepAlive() time.Duration {
	if o.KeepAlive > 0 {
		return o.KeepAlive
	}
	return 2 * time.Second
}

func (o Options) silence() time.Duration {
	if o.Silence > 0 {
		return o.Silence
	}
	return 20 * time.Second
}

func (o Options) yamux() *yamux.Config {
	cfg := yamux.DefaultConfig()
	// Liveness is ours (see watch): yamux's keep-alive gives up when one
	// ping is not answered within its write timeout, which on a loaded
	// machine happens to live peers whose answer waits behind a fence's
	// data. A write may take as long as a peer may be silent.
	cfg.EnableKeepAlive = false
	cfg.ConnectionWriteTimeout = o.silence()
	// A larger window keeps output flowing between processes that share
	// few cores; it is also the bound on what one stream buffers.
	cfg.MaxStreamWindowSize = 2 << 20
	// yamux's own lines (a bad frame, a failed write) say
	// why a session ended, which its streams only report as EOF.
	cfg.LogOutput = nil
	cfg.Logger = o.logger().Named("yamux").StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug})
	return cfg
}

func (o Options) logger() hclog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return hclog.NewNullLogger()
}

// Conn is an authenticated, sealed, multiplexed connection to another
// daemon.
type Conn struct {
	sess    *yamux.Session
	link    *sealedConn           // what yamux reads and writes
	heard   atomic.Int64          // see heardConn
	sent    atomic.Int64          // see heardConn
	pinging atomic.Bool           // a ping waits for its answer
	cause   atomic.Pointer[error] // see Err
}

// Open opens a new stream to the peer.
func (c *Conn) Open() (net.Conn, error) { return c.sess.Open() }

// Accept waits for the peer to open a stream.
func (c *Conn) Accept() (net.Conn, error) { return c.sess.Accept() }

// Close closes the connection and every stream on it.
func (c *Conn) Close() error { return c.sess.Close() }

// Done is closed when the connection has ended, for whatever reason.
func (c *Conn) Done() <-chan struct{} { return c.sess.CloseChan() }

// RemoteAddr is the peer's TCP address.
func (c *Conn) RemoteAddr() net.Addr { return c.sess.RemoteAddr() }

// Dial connects to a daemon's contact address (tcp://IP:PORT or IP:PORT),
// proves the secret and checks the daemon's proof.
func Dial(ctx context.Context, addr string, secret []byte, opt Options) (*Conn, error) {
	hostport := strings.TrimPrefix(addr, "tcp://")
	var d net.Dialer
	if opt.LocalIP != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(opt.LocalIP)}
	}
	raw, err := d.DialContext(ctx, "tcp", hostport)
	if err != nil {
		return nil, err
	}
	// The handshake heeds ctx too: a peer that accepts and then says
	// nothing must not hold a cancelled Dial for the whole timeout.
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	k, err := dialerHandshake(raw, secret, opt.handshakeTimeout())
	if !stop() {
		raw.Close()
		return nil, fmt.Errorf("%s: %w", hostport, ctx.Err())
	}
	if err != nil {
		raw.Close()
		return nil, fmt.Errorf("%s: %w", hostport, err)
	}
	c, err := newConn(raw, k, opt, true)
	if err != nil {
		raw.Close()
	}
	return c, err
}

// hungUp says the peer closed the connection before sending anything.
func hungUp(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// URI is the contact address of a listener address.
func URI(a net.Addr) string { return "tcp://" + a.String() }

// Listener accepts authenticated connections. Peers that fail the
// handshake are logged and dropped without disturbing anyone else.
type Listener struct {
	ln     net.Listener
	secret []byte
	opt    Options
	conns  chan *Conn
	slots  chan struct{} // one per handshake under way
	done   chan struct{}
	once   sync.Once // closes done
	// failed is closed when the socket stopped accepting of itself (no
	// descriptor left for a new connection): err says why.
	failed chan struct{}
	err    error
}

// Listen listens on a TCP address ("127.0.0.1:0", ":0", ...); port 0 is
// a port of opt.Ports.
func Listen(addr string, secret []byte, opt Options) (*Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var ln net.Listener
	if port == "0" {
		ln, err = tcp.ListenIn("tcp", host, opt.Ports)
	} else {
		ln, err = tcp.Listen("tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	l := &Listener{ln: ln, secret: secret, opt: opt, conns: make(chan *Conn),
		slots: make(chan struct{}, opt.maxHandshakes()), done: make(chan struct{}), failed: make(chan struct{})}
	go l.acceptLoop()
	return l, nil
}

// Addr is the address the listener is bound to.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Accept returns the next authenticated connection. Once the socket has
// failed (out of descriptors), it returns that failure: a listener that
// accepts nobody must say so rather than leave its peers' dials hanging.
func (l *Listener) Accept(ctx context.Context) (*Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-l.failed:
		return nil, l.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close stops accepting. It is safe to call more than once, and from
// several goroutines at once.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.ln.Close()
}

// acceptLoop takes a handshake slot before it accepts, so that while every
// slot is busy new peers wait in the backlog rather than cost a goroutine.
func (l *Listener) acceptLoop() {
	for {
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return
		}
		raw, err := l.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				l.err = err
				close(l.failed)
			}
			return
		}
		go l.admit(raw)
	}
}

func (l *Listener) admit(raw net.Conn) {
	k, err := listenerHandshake(raw, l.secret, l.opt.handshakeTimeout())
	<-l.slots
	if err != nil {
		log := l.opt.logger().Warn
		if hungUp(err) {
			// Nothing was tried: a port probe, or one of our own daemons
			// that gave up dialing as the job ended. Not worth a warning.
			log = l.opt.logger().Debug
		}
		log("rejected connection", "peer", raw.RemoteAddr().String(), "error", err)
		raw.Close()
		return
	}
	c, err := newConn(raw, k, l.opt, false)
	if err != nil {
		raw.Close()
		return
	}
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}
