package transport

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"prsh/internal/tcp"
)

// freezer relays TCP between a dialer and a listener; once one side is
// frozen it stops passing that side's bytes on, as a stopped or hung peer
// would, while the TCP connection stays up.
type freezer struct {
	ln     net.Listener
	mu     sync.Mutex
	frozen map[side]bool
	thaw   *sync.Cond
}

type side int

const (
	listenerSide side = iota
	dialerSide
)

func newFreezer(t *testing.T, to string) *freezer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	f := &freezer{ln: ln, frozen: map[side]bool{}}
	f.thaw = sync.NewCond(&f.mu)
	go func() {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", to)
		if err != nil {
			in.Close()
			return
		}
		t.Cleanup(func() { in.Close(); out.Close() })
		go f.relay(out, in, dialerSide)
		f.relay(in, out, listenerSide)
	}()
	return f
}

// relay copies one side's bytes to the other unless that side is frozen.
func (f *freezer) relay(to io.Writer, from io.Reader, s side) {
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		f.mu.Lock()
		for f.frozen[s] {
			f.thaw.Wait()
		}
		f.mu.Unlock()
		if n > 0 {
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (f *freezer) freeze(s side) { f.mu.Lock(); f.frozen[s] = true; f.mu.Unlock() }

// frozenLink connects a dialer to a listener through a freezer, with a
// short keep-alive and silence bound.
func frozenLink(t *testing.T) (f *freezer, d, l *Conn, opt Options) {
	s := secret(t)
	opt = Options{KeepAlive: 50 * time.Millisecond, Silence: time.Second}
	ln := listen(t, s, opt)
	f = newFreezer(t, ln.Addr().String())
	d, err := Dial(timeout(t), URI(f.ln.Addr()), s, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if l, err = ln.Accept(timeout(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return f, d, l, opt
}

// outlives fails the test if either end of a link ends within d.
func outlives(t *testing.T, d time.Duration, ends ...*Conn) {
	t.Helper()
	deadline := time.After(d)
	for _, c := range ends {
		select {
		case <-c.Done():
			t.Fatalf("a link with a live peer ended: %v", c.Err())
		case <-deadline:
			return
		}
	}
	<-deadline
}

// endsSilent fails the test unless c ends with a SilentError.
func endsSilent(t *testing.T, c *Conn, what string) {
	t.Helper()
	select {
	case <-c.Done():
	case <-time.After(patience):
		t.Fatalf("the %s's end outlived a silent peer", what)
	}
	if err := c.Err(); !errors.As(err, new(SilentError)) {
		t.Errorf("%s: Err() = %v, want a SilentError", what, err)
	}
}

// TestSilentPeerEndsLink: an idle link whose peer answers pings outlives
// the silence bound many times over; once the peer's bytes stop coming,
// the link ends with a SilentError, which Err reports.
func TestSilentPeerEndsLink(t *testing.T) {
	f, d, l, opt := frozenLink(t)
	outlives(t, 3*opt.Silence, d, l)
	f.freeze(listenerSide)
	endsSilent(t, d, "dialer")
	if err := l.Err(); err != nil && !errors.As(err, new(SilentError)) {
		t.Errorf("listener side: Err() = %v", err)
	}
}

// TestSilentDialerEndsLink: the listener does not ping, yet it ends the
// link with a SilentError once the dialer's bytes stop coming.
func TestSilentDialerEndsLink(t *testing.T) {
	f, d, l, opt := frozenLink(t)
	outlives(t, 3*opt.Silence, d, l)
	f.freeze(dialerSide)
	endsSilent(t, l, "listener")
}

// TestListenerPingsQuietDialer: a dialer that sends nothing (here one
// that never pings, as one whose ping waits for a stuck answer) still
// has a live link: after a quarter of the silence bound the listener
// pings, and the dialer's answer is heard.
func TestListenerPingsQuietDialer(t *testing.T) {
	opt := Options{KeepAlive: 50 * time.Millisecond, Silence: time.Second}
	d, l := directLink(t, opt, Options{KeepAlive: time.Hour, Silence: time.Hour})
	outlives(t, 3*opt.Silence, d, l)
}

// directLink connects a dialer to a listener, each with its options.
func directLink(t *testing.T, listener, dialer Options) (d, l *Conn) {
	s := secret(t)
	ln := listen(t, s, listener)
	d, err := Dial(timeout(t), URI(ln.Addr()), s, dialer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if l, err = ln.Accept(timeout(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return d, l
}

// TestListenerTalkingKeepsLink: a link on which only the listener sends
// (output going down to a node, say) is not taken for one whose dialer is
// silent: the dialer pings when it has sent nothing for a while, even
// though it hears plenty.
func TestListenerTalkingKeepsLink(t *testing.T) {
	_, d, l, opt := frozenLink(t)
	stream, err := l.Open()
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(opt.KeepAlive / 5)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if WriteFrame(stream, 1, []byte("x")) != nil {
				return
			}
		}
	}()
	in, err := d.Accept()
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, in)
	outlives(t, 3*opt.Silence, d, l)
}

// TestClosedLinkHasNoErr: a link that its peer closes ends without a cause
// of this side's making.
func TestClosedLinkHasNoErr(t *testing.T) {
	s := secret(t)
	d, l := connect(t, listen(t, s, Options{}), s)
	l.Close()
	select {
	case <-d.Done():
	case <-time.After(patience):
		t.Fatal("the link outlived its peer's close")
	}
	if err := d.Err(); err != nil {
		t.Errorf("Err() = %v after the peer's close, want nil", err)
	}
}

// tcpPair is a connected pair of plain TCP sockets.
func tcpPair(t *testing.T) (a, b net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	if a, err = net.Dial("tcp", ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	if b = <-accepted; b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// TestUnreadBytesAreLife: a peer not heard for the silence bound whose
// bytes wait unread in this side's socket (this side's reader did not
// run, as on a starved machine) is not silent, and counts as heard now;
// with nothing waiting it is.
func TestUnreadBytesAreLife(t *testing.T) {
	a, b := tcpPair(t)
	long := int64(time.Since(epoch) - time.Hour)
	c := &Conn{link: &sealedConn{Conn: b}}
	c.heard.Store(long)
	if !c.silent() {
		t.Fatal("an empty socket was taken for a sign of life")
	}
	if _, err := a.Write([]byte("record")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); tcp.Unread(b) < len("record"); {
		if time.Now().After(deadline) {
			t.Fatalf("the socket shows %d unread bytes, want %d", tcp.Unread(b), len("record"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if c.silent() {
		t.Fatal("bytes waiting unread did not count as a sign of life")
	}
	if quiet(&c.heard, time.Since(epoch)) > time.Minute {
		t.Fatal("the unread bytes were not counted as heard now")
	}
}
