package daemon

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"sync"

	"prsh/daemon/protocol"
	"prsh/iof"
	"prsh/transport"
)

// Streams begin with one byte saying what they carry.
const (
	streamControl byte = 'C'
	streamOutput  byte = 'O' // a child's ranks' output, up to its parent
	streamInput   byte = 'I' // mpirun's stdin, down to a child
	streamBulk    byte = 'B' // the bodies of large messages (bulk.go)
	streamStage   byte = 'S' // the staged files, down to a child (stage.go)
)

// link is the connection to one other daemon. Messages are queued and
// encoded and written by the link's own goroutine, so the event loop
// never blocks on a slow peer or on encoding a large message.
type link struct {
	id         protocol.LinkID
	peer       int
	conn       Session
	ctrl       net.Conn
	maxMessage int           // the largest payload sent or accepted
	bulkIn     chan net.Conn // the peer's bulk stream, once it opens it
	bulkOut    net.Conn      // ours, opened by the writer when first needed
	bulkRead   net.Conn      // the peer's, once the reader has taken it

	mu     sync.Mutex
	queue  []protocol.Message
	wake   chan struct{}
	closed bool
	cause  error // what broke the link on this side, if anything did
}

// newLink registers a connection under a fresh id and starts its writer.
func (d *Daemon) newLink(peer int, conn Session, ctrl net.Conn) *link {
	d.lastLink++
	l := &link{id: d.lastLink, peer: peer, conn: conn, ctrl: ctrl,
		maxMessage: cmp.Or(d.maxMessage, maxMessage),
		bulkIn:     make(chan net.Conn, 1), wake: make(chan struct{}, 1)}
	d.links[l.id] = l
	go l.writeLoop()
	return l
}

// send queues a message; it never blocks.
func (l *link) send(msg protocol.Message) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("link to daemon %d is closed", l.peer)
	}
	l.queue = append(l.queue, msg)
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return nil
}

func (l *link) writeLoop() {
	for {
		select {
		case <-l.wake:
		case <-l.conn.Done():
			return
		}
		l.mu.Lock()
		batch := l.queue
		l.queue = nil
		l.mu.Unlock()
		for _, msg := range batch {
			if err := l.write(msg); errors.As(err, new(oversize)) {
				l.fail(err)
				return
			} else if err != nil {
				l.conn.Close() // the reader reports the loss
				return
			}
		}
	}
}

// close closes the link at once; what is still queued is dropped.
func (l *link) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.conn.Close()
}

// fail closes the link because of err, which becomes the reason the link
// went down unless another came first.
func (l *link) fail(err error) {
	l.mu.Lock()
	if l.cause == nil {
		l.cause = err
	}
	l.mu.Unlock()
	l.close()
}

// failure is the first error that broke the link on this side, if any.
func (l *link) failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cause
}

// serve reads the link's control messages and the streams its peer opens.
func (d *Daemon) serve(l *link) {
	go d.readLoop(l)
	go d.acceptStreams(l)
}

// readLoop delivers the peer's messages to the event loop until the
// stream ends, then reports the link down.
func (d *Daemon) readLoop(l *link) {
	for {
		msg, err := l.read()
		if err != nil {
			why := d.whyEnded(l, err)
			d.post(linkEnded{l, why, errors.As(why, new(transport.SilentError))})
			return
		}
		d.post(received{l, msg})
	}
}

// whyEnded says why a link's reader stopped on err: a bad message from
// the peer or a record that failed to open (someone on the path changed
// the link's bytes), either of which drops the link, a peer gone silent,
// or a failure of this side's writer, which closed the stream under the
// reader and is the real cause.
func (d *Daemon) whyEnded(l *link, err error) error {
	if errors.As(err, new(badMessage)) {
		d.log.Warn("dropping daemon: bad message", "daemon", l.peer, "error", err)
		l.fail(err)
	}
	switch cause := l.conn.Err(); {
	case errors.As(cause, new(transport.SilentError)):
		return cause
	case cause != nil:
		d.log.Warn("dropping daemon: its link was tampered with", "daemon", l.peer, "peer", l.conn.RemoteAddr().String(), "error", cause)
		l.fail(cause)
	}
	if cause := l.failure(); cause != nil {
		if errors.As(cause, new(oversize)) {
			d.log.Error("dropping daemon: cannot send", "daemon", l.peer, "error", cause)
		}
		return cause
	}
	return err
}

// acceptStreams serves the streams the peer opens after the control
// stream: a child's output, the parent's stdin for our subtree, or the
// bodies of the peer's large messages.
func (d *Daemon) acceptStreams(l *link) {
	bulkSeen := false // a link has at most one bulk stream each way
	stageSeen := false
	for {
		s, err := l.conn.Accept()
		if err != nil {
			return
		}
		var tag [1]byte
		if _, err := s.Read(tag[:]); err != nil {
			s.Close()
			continue
		}
		switch {
		case tag[0] == streamOutput:
			d.post(outputOpened{l})
			go func() {
				err := iof.Relay(d.sink, s)
				s.Close()
				d.post(outputClosed{l, err})
			}()
		case tag[0] == streamBulk && !bulkSeen:
			bulkSeen = true
			l.bulkIn <- s
		case tag[0] == streamStage && l == d.parent && !stageSeen:
			stageSeen = true
			go d.receiveStage(s)
		case tag[0] == streamInput && l == d.parent:
			go func() {
				if err := iof.Relay(d.stdinTree, s); err != nil {
					d.log.Debug("stdin stream broke", "error", err)
				}
				s.Close()
			}()
		default:
			s.Close()
		}
	}
}

// openStream opens a stream of the given kind to the peer.
func openStream(c Session, kind byte) (net.Conn, error) {
	s, err := c.Open()
	if err != nil {
		return nil, err
	}
	if _, err := s.Write([]byte{kind}); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}
