package transport

import (
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"
)

// SilentError ends a link whose peer has sent nothing for Options.Silence:
// it hangs, is stopped, or its node is gone without a word.
type SilentError struct{ Quiet time.Duration }

func (e SilentError) Error() string {
	return fmt.Sprintf("nothing heard from it for %v", e.Quiet)
}

// epoch is the origin of the monotonic times a Conn keeps as integers.
var epoch = time.Now()

// heardConn records when the last byte from the peer arrived. Every byte
// counts as a sign of life, not only the answer to a ping: on a machine
// so loaded that a ping's answer waits behind megabytes of a fence's
// data, the data itself shows the peer is alive.
type heardConn struct {
	net.Conn
	heard *atomic.Int64 // time.Since(epoch) of the last byte, in ns
}

func (c heardConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.heard.Store(int64(time.Since(epoch)))
	}
	return n, err
}

// newConn seals an authenticated connection with the handshake's keys,
// runs yamux over it (the dialer is yamux's client) and watches that the
// peer keeps talking.
func newConn(raw net.Conn, k keys, opt Options, dialer bool) (*Conn, error) {
	link, err := seal(raw, k)
	if err != nil {
		return nil, err
	}
	c := &Conn{link: link}
	c.heard.Store(int64(time.Since(epoch)))
	start := yamux.Server
	if dialer {
		start = yamux.Client
	}
	if c.sess, err = start(heardConn{Conn: link, heard: &c.heard}, opt.yamux()); err != nil {
		return nil, err
	}
	go c.watch(opt.keepAlive(), opt.silence())
	return c, nil
}

// watch pings a peer that has been quiet for a keep-alive interval, so
// that a live one answers, and ends the connection with a SilentError once it
// has been quiet for silence.
func (c *Conn) watch(every, silence time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	var pinging atomic.Bool
	for {
		select {
		case <-c.sess.CloseChan():
			return
		case <-tick.C:
		}
		quiet := time.Since(epoch) - time.Duration(c.heard.Load())
		switch {
		case quiet >= silence:
			c.end(SilentError{silence}) // the bound, which is what a user can act on
			return
		case quiet >= every && pinging.CompareAndSwap(false, true):
			go func() {
				c.sess.Ping() // the answer, if any, is heard by the reader
				pinging.Store(false)
			}()
		}
	}
}

// end closes the connection, recording why.
func (c *Conn) end(cause error) {
	c.cause.CompareAndSwap(nil, &cause)
	c.sess.Close()
}

// Err says why the connection ended when this side ended it: a record
// that failed to open (an error wrapping ErrBadRecord: someone changed
// the link's bytes) or a peer gone silent (SilentError). It is nil while the
// connection is up and when it ended otherwise.
func (c *Conn) Err() error {
	if err := c.link.failure(); err != nil {
		return err
	}
	if p := c.cause.Load(); p != nil {
		return *p
	}
	return nil
}
