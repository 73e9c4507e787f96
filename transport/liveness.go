package transport

import (
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"prsh/internal/stall"
	"prsh/internal/tcp"

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

// heardConn records when the last byte from the peer arrived and when
// this side last wrote. Every byte counts as a sign of life, not only the
// answer to a ping: on a machine so loaded that a ping's answer waits
// behind megabytes of a fence's data, the data itself shows the peer is
// alive.
type heardConn struct {
	net.Conn
	heard *atomic.Int64 // time.Since(epoch) of the last byte read, in ns
	sent  *atomic.Int64 // time.Since(epoch) of the last byte written, in ns
}

func (c heardConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.heard.Store(int64(time.Since(epoch)))
	}
	return n, err
}

func (c heardConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.sent.Store(int64(time.Since(epoch)))
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
	now := int64(time.Since(epoch))
	c.heard.Store(now)
	c.sent.Store(now)
	start := yamux.Server
	if dialer {
		start = yamux.Client
	}
	if c.sess, err = start(heardConn{Conn: link, heard: &c.heard, sent: &c.sent}, opt.yamux()); err != nil {
		return nil, err
	}
	lost := stall.Lost() // from the link's start: a watch that first runs late forgives that too
	if dialer {
		go c.ping(opt.keepAlive(), opt.silence(), lost)
	} else {
		go c.listen(opt.keepAlive(), opt.silence(), lost)
	}
	return c, nil
}

// silent confirms that a peer not heard for the silence bound is silent:
// bytes of its that wait unread in this side's socket mean that this
// side, not the peer, did not run (a machine so loaded that the watch
// woke before the reader), and count as heard now.
func (c *Conn) silent() bool {
	if tcp.Unread(c.link.Conn) > 0 {
		c.heard.Store(int64(time.Since(epoch)))
		return false
	}
	return true
}

// quiet is how long before now (time.Since(epoch)) the last byte of a
// record (heard or sent) passed. A watch reads the clock once per wake:
// were this side stopped after that, the stall would count against the
// peer in this very verdict, before the next wake could see it was late.
func quiet(last *atomic.Int64, now time.Duration) time.Duration {
	return now - time.Duration(last.Load())
}

// ping is the dialer's watch: it pings when the link has been quiet for a
// keep-alive interval in either direction, so that the listener hears
// from a live dialer even while only the listener talks, and a live
// listener answers; it ends the connection with a SilentError once the
// listener has been quiet for silence. lost is stall.Lost() when the
// link came up.
func (c *Conn) ping(every, silence, lost time.Duration) {
	tick := time.NewTimer(every)
	defer tick.Stop()
	for {
		select {
		case <-c.sess.CloseChan():
			return
		case <-tick.C:
		}
		now := c.forgive(&lost)
		switch heard := quiet(&c.heard, now); {
		case heard >= silence && c.silent():
			c.end(SilentError{silence}) // the bound, which is what a user can act on
			return
		case heard >= every || quiet(&c.sent, now) >= every:
			c.pingOnce()
		}
		tick.Reset(every)
	}
}

// listen is the listener's watch. The dialer's pings keep an idle link
// talking both ways, so the listener pings only when it has heard
// nothing for a quarter of the silence bound (a dialer whose own ping
// waits for an answer stuck behind a long message sends no other), and
// ends the connection with a SilentError once the dialer has been quiet
// for silence. It wakes when the quarter could first have passed, not at
// every keep-alive interval.
func (c *Conn) listen(every, silence, lost time.Duration) {
	backup := max(every, silence/4)
	wait := time.NewTimer(backup)
	defer wait.Stop()
	for {
		select {
		case <-c.sess.CloseChan():
			return
		case <-wait.C:
		}
		now := c.forgive(&lost)
		next := every
		switch heard := quiet(&c.heard, now); {
		case heard >= silence && c.silent():
			c.end(SilentError{silence})
			return
		case heard >= backup:
			c.pingOnce()
		default:
			next = backup - heard
		}
		wait.Reset(next)
	}
}

// forgive reads the clock for a watch's wake-up (as time.Since(epoch)),
// then moves the peer's last-heard time on by the time this process lost
// to stalls since the watch last looked (internal/stall; *lost is
// stall.Lost() then): on a machine so loaded that nothing ran for seconds
// (runs of 20 s were seen at a load of 170 on 2 cores) the peer most
// likely did not run either, so time this side slept through is no
// evidence that the peer is silent. The silence bound thus counts only
// time in which this side ran, as every other bound does. The clock is
// read first: a stall after it is forgiven, never counted.
func (c *Conn) forgive(lost *time.Duration) time.Duration {
	now := time.Since(epoch)
	l := stall.Lost()
	if grew := l - *lost; grew > 0 {
		for {
			h := c.heard.Load()
			moved := min(h+int64(grew), int64(now))
			if moved <= h || c.heard.CompareAndSwap(h, moved) {
				break
			}
		}
	}
	*lost = l
	return now
}

// pingOnce pings the peer unless an earlier ping still waits for its
// answer; the answer, if any, is heard by the reader.
func (c *Conn) pingOnce() {
	if c.pinging.CompareAndSwap(false, true) {
		go func() {
			c.sess.Ping()
			c.pinging.Store(false)
		}()
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
