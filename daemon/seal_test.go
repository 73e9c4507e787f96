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
	"prsh/internal/mitm"
	"prsh/transport"
)

// bitFlipper forwards what a dialer sends and, once flip is set, flips a
// bit of the next bytes: the record they belong to no longer opens.
type bitFlipper struct{ flip atomic.Bool }

// via puts the flipper in front of target and returns the address to dial.
func (f *bitFlipper) via(t *testing.T) func(target string) string {
	return func(target string) string {
		return mitm.Start(t, target, f.forward).Addr()
	}
}

func (f *bitFlipper) forward(from io.Reader, to net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 && f.flip.CompareAndSwap(true, false) {
			buf[n-1] ^= 0x01
		}
		if _, werr := to.Write(buf[:n]); err != nil || werr != nil {
			return
		}
	}
}

// A link whose bytes someone on the path changes ends at the changed
// record: the receiver delivers nothing of it, warns naming the daemon,
// and the machine hears the tampering as the link's cause of loss.
func TestTamperedLinkIsDropped(t *testing.T) {
	var flipper bitFlipper
	connA, ctrlA, connB, ctrlB := connectedVia(t, flipper.via(t))
	var logs bytes.Buffer
	var logMu sync.Mutex // hclog holds it while it writes
	a, b := bare(t, 0), bare(t, 0)
	b.d.log = hclog.New(&hclog.LoggerOptions{Output: &logs, Mutex: &logMu, Level: hclog.Info})
	a.l, b.l = a.d.newLink(2, connA, ctrlA), b.d.newLink(1, connB, ctrlB)
	a.d.serve(a.l)
	b.d.serve(b.l)
	a.l.send(protocol.Signal{Sig: 10})
	if msg, err := b.next(t); err != nil || msg != (protocol.Signal{Sig: 10}) {
		t.Fatalf("before the tampering: %v, %v", msg, err)
	}
	flipper.flip.Store(true)
	a.l.send(protocol.Signal{Sig: 9})
	msg, err := b.next(t)
	if msg != nil || !errors.Is(err, transport.ErrBadRecord) {
		t.Fatalf("after the tampering: message %v, link ended with %v; want the link ended with ErrBadRecord", msg, err)
	}
	logMu.Lock()
	line := logs.String()
	logMu.Unlock()
	if !strings.Contains(line, "[WARN]") || !strings.Contains(line, "tampered") || !strings.Contains(line, "daemon=1") ||
		!strings.Contains(line, transport.ErrBadRecord.Error()) || strings.Count(line, "\n") != 1 {
		t.Errorf("want one warning naming daemon 1 and the cause, got:\n%s", line)
	}
}
