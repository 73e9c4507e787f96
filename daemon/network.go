package daemon

import (
	"context"
	"net"
	"time"

	"prsh/transport"
)

// Network is how a daemon reaches the others: it listens for their links
// and dials theirs. The real one is TCP with the transport's handshake,
// sealing and multiplexing (tcpNetwork); MemNetwork keeps a whole job in
// one process, for the driver's tests.
type Network interface {
	// Listen listens on the address ip ("" = any) for links of the job's
	// daemons; Dial reaches them at the listener's Addr.
	Listen(ip string) (Listener, error)
	// Dial opens a link to the daemon listening at addr, bounded by ctx.
	// An error that wraps transport.ErrBadProof is final: the peer is not
	// one of the job's daemons.
	Dial(ctx context.Context, addr string) (Session, error)
}

// Listener hands over the links other daemons open.
type Listener interface {
	// Accept waits for the next link, until ctx ends or Close.
	Accept(ctx context.Context) (Session, error)
	// Addr is the contact address others dial.
	Addr() string
	// Close stops accepting; links already handed over stay up.
	Close() error
}

// Session is one link to another daemon, carrying streams either side
// opens (the control stream first, then output, input, bulk and stage).
// *transport.Conn is the real one.
type Session interface {
	Open() (net.Conn, error)
	Accept() (net.Conn, error)
	// Close closes the session and every stream on it.
	Close() error
	// Done is closed when the session has ended, for whatever reason.
	Done() <-chan struct{}
	RemoteAddr() net.Addr
	// Err is the failure that ended the session on this side, if one
	// did: a transport.SilentError for a peer gone quiet, or a record
	// that failed to open. nil while it lasts or after an orderly end.
	Err() error
	// Flush waits, at most for wait, until the peer has everything
	// written so far, so that an exiting daemon's last bytes are not lost.
	Flush(wait time.Duration)
}

var _ Session = (*transport.Conn)(nil)

// tcpNetwork is the production network: TCP with the job's secret.
type tcpNetwork struct {
	secret []byte
	opt    transport.Options
}

func (n tcpNetwork) Listen(ip string) (Listener, error) {
	ln, err := transport.Listen(net.JoinHostPort(ip, "0"), n.secret, n.opt)
	if err != nil {
		return nil, err
	}
	return tcpListener{ln}, nil
}

func (n tcpNetwork) Dial(ctx context.Context, addr string) (Session, error) {
	conn, err := transport.Dial(ctx, addr, n.secret, n.opt)
	if err != nil {
		return nil, err // not a nil *Conn in a non-nil Session
	}
	return conn, nil
}

type tcpListener struct{ ln *transport.Listener }

func (l tcpListener) Accept(ctx context.Context) (Session, error) {
	conn, err := l.ln.Accept(ctx)
	if err != nil {
		return nil, err
	}
	return conn, nil
}

func (l tcpListener) Addr() string { return transport.URI(l.ln.Addr()) }
func (l tcpListener) Close() error { return l.ln.Close() }
