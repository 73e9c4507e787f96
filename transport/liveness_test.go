package transport

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// freezer relays TCP between a dialer and a listener; once frozen it
// stops passing the listener's bytes on, as a stopped or hung peer would,
// while the TCP connection stays up.
type freezer struct {
	ln     net.Listener
	mu     sync.Mutex
	frozen bool
	thaw   *sync.Cond
}

func newFreezer(t *testing.T, to string) *freezer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	f := &freezer{ln: ln}
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
		go io.Copy(out, in)
		f.relay(in, out)
	}()
	return f
}

// relay copies the listener's bytes to the dialer unless frozen.
func (f *freezer) relay(to io.Writer, from io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		f.mu.Lock()
		for f.frozen {
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

func (f *freezer) freeze() { f.mu.Lock(); f.frozen = true; f.mu.Unlock() }

// TestSilentPeerEndsLink: an idle link whose peer answers pings outlives
// the silence bound many times over; once the peer's bytes stop coming,
// the link ends with a SilentError, which Err reports.
func TestSilentPeerEndsLink(t *testing.T) {
	s := secret(t)
	opt := Options{KeepAlive: 50 * time.Millisecond, Silence: time.Second}
	ln := listen(t, s, opt)
	f := newFreezer(t, ln.Addr().String())
	d, err := Dial(timeout(t), URI(f.ln.Addr()), s, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	l, err := ln.Accept(timeout(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	select {
	case <-d.Done():
		t.Fatalf("an idle link with a live peer ended: %v", d.Err())
	case <-time.After(3 * opt.Silence):
	}
	f.freeze()
	select {
	case <-d.Done():
	case <-time.After(patience):
		t.Fatal("the link outlived a silent peer")
	}
	if err := d.Err(); !errors.As(err, new(SilentError)) {
		t.Errorf("Err() = %v, want a SilentError", err)
	}
	if err := l.Err(); err != nil && !errors.As(err, new(SilentError)) {
		t.Errorf("listener side: Err() = %v", err)
	}
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
