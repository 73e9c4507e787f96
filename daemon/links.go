package daemon

import (
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
)

// link is the connection to one other daemon. Messages are queued and
// written by the link's own goroutine, so the event loop never blocks on a
// slow peer.
type link struct {
	id   protocol.LinkID
	peer int
	conn *transport.Conn
	ctrl net.Conn

	mu     sync.Mutex
	queue  [][]byte
	wake   chan struct{}
	closed bool
}

// newLink registers a connection under a fresh id and starts its writer.
func (d *Daemon) newLink(peer int, conn *transport.Conn, ctrl net.Conn) *link {
	d.lastLink++
	l := &link{id: d.lastLink, peer: peer, conn: conn, ctrl: ctrl, wake: make(chan struct{}, 1)}
	d.links[l.id] = l
	go l.writeLoop()
	return l
}

// send queues a message; it never blocks.
func (l *link) send(msg protocol.Message) error {
	kind, payload, err := protocol.Encode(msg)
	if err != nil {
		return err
	}
	frame := append([]byte{kind}, payload...)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("link to daemon %d is closed", l.peer)
	}
	l.queue = append(l.queue, frame)
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
		for _, f := range batch {
			if err := transport.WriteFrame(l.ctrl, f[0], f[1:]); err != nil {
				l.conn.Close()
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

// serve reads the link's control messages and the streams its peer opens.
func (d *Daemon) serve(l *link) {
	go d.readLoop(l)
	go d.acceptStreams(l)
}

// readLoop delivers the peer's control messages to the event loop until
// the stream ends, then reports the link down.
func (d *Daemon) readLoop(l *link) {
	for {
		kind, payload, err := transport.ReadFrame(l.ctrl, transport.MaxFrame)
		if err != nil {
			d.post(linkEnded{l, err})
			return
		}
		msg, err := protocol.Decode(kind, payload)
		if err != nil {
			d.log.Warn("dropping daemon: bad message", "daemon", l.peer, "error", err)
			l.conn.Close()
			d.post(linkEnded{l, err})
			return
		}
		d.post(received{l, msg})
	}
}

// acceptStreams serves the streams the peer opens after the control
// stream: a child's output, or the parent's stdin for our subtree.
func (d *Daemon) acceptStreams(l *link) {
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
		case tag[0] == streamInput && l == d.parent:
			go func() {
				if err := iof.Relay(d.fanout, s); err != nil {
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
func openStream(c *transport.Conn, kind byte) (net.Conn, error) {
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
