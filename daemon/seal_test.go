package daemon

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"

	"prsh/daemon/protocol"
	"prsh/transport"
)

// flippingProxy forwards one connection both ways and, when asked, flips
// a bit of the next bytes the dialer sends: the record they belong to no
// longer opens.
type flippingProxy struct {
	ln   net.Listener
	flip atomic.Bool
}

// via starts the proxy in front of target and returns its address.
func (p *flippingProxy) via(t *testing.T) func(target string) string {
	return func(target string) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		p.ln = ln
		go p.serve(target)
		return ln.Addr().String()
	}
}

func (p *flippingProxy) serve(target string) {
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
		io.Copy(in, out)
		in.Close()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := in.Read(buf)
		if n > 0 && p.flip.CompareAndSwap(true, false) {
			buf[n-1] ^= 0x01
		}
		if _, werr := out.Write(buf[:n]); err != nil || werr != nil {
			return
		}
	}
}

// syncBuffer collects log lines written from a daemon's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A link whose bytes someone on the path changes ends at the changed
// record: the receiver delivers nothing of it, warns naming the daemon,
// and the machine hears the tampering as the link's cause of loss.
func TestTamperedLinkIsDropped(t *testing.T) {
	var proxy flippingProxy
	connA, ctrlA, connB, ctrlB := connectedVia(t, proxy.via(t))
	var logs syncBuffer
	a, b := bare(t, 0), bare(t, 0)
	b.d.log = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	a.l, b.l = a.d.newLink(2, connA, ctrlA), b.d.newLink(1, connB, ctrlB)
	a.d.serve(a.l)
	b.d.serve(b.l)
	a.l.send(protocol.Signal{Sig: 10})
	if msg, err := b.next(t); err != nil || msg != (protocol.Signal{Sig: 10}) {
		t.Fatalf("before the tampering: %v, %v", msg, err)
	}
	proxy.flip.Store(true)
	a.l.send(protocol.Signal{Sig: 9})
	msg, err := b.next(t)
	if msg != nil || !errors.Is(err, transport.ErrBadRecord) {
		t.Fatalf("after the tampering: message %v, link ended with %v; want the link ended with ErrBadRecord", msg, err)
	}
	line := logs.String()
	if !strings.Contains(line, "[WARN]") || !strings.Contains(line, "tampered") || !strings.Contains(line, "daemon=1") ||
		!strings.Contains(line, transport.ErrBadRecord.Error()) || strings.Count(line, "\n") != 1 {
		t.Errorf("want one warning naming daemon 1 and the cause, got:\n%s", line)
	}
}
