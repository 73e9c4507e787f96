package transport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"prsh/internal/fdlimit/fdtest"
)

// patience turns a hang into a failure; nothing here is meant to take
// anywhere near this long, even on a loaded machine.
const patience = time.Minute

// dialerMsgSize is the size of step 2 of the handshake.
const dialerMsgSize = 5 + nonceSize + sha256.Size

func secret(t testing.TB) []byte {
	t.Helper()
	s, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// logBuffer collects what a listener logs; it is written from the
// listener's goroutines and read by the test.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func logger(b *logBuffer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Trace, Output: b})
}

// listen starts a listener on 127.0.0.1 that the test closes at its end.
func listen(t *testing.T, s []byte, opt Options) *Listener {
	t.Helper()
	ln, err := Listen("127.0.0.1:0", s, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	t.Cleanup(cancel)
	return ctx
}

// connect dials ln with the secret and accepts on the other side; both
// ends must succeed.
func connect(t *testing.T, ln *Listener, s []byte) (dialer, listener *Conn) {
	t.Helper()
	ctx := timeout(t)
	type accepted struct {
		c   *Conn
		err error
	}
	acc := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept(ctx)
		acc <- accepted{c, err}
	}()
	d, err := Dial(ctx, URI(ln.Addr()), s, Options{})
	if err != nil {
		t.Fatalf("Dial with the right secret: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	a := <-acc
	if a.err != nil {
		t.Fatalf("Accept after a good Dial: %v", a.err)
	}
	t.Cleanup(func() { a.c.Close() })
	return d, a.c
}

// TestStreamsBothWays: a dialer and a listener that share the secret get a
// connection on which either side opens streams that carry frames.
func TestStreamsBothWays(t *testing.T) {
	s := secret(t)
	ln := listen(t, s, Options{})
	d, l := connect(t, ln, s)
	tests := []struct {
		name         string
		opener, peer *Conn
	}{
		{"dialer opens", d, l},
		{"listener opens", l, d},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			accepted := make(chan net.Conn, 1)
			go func() {
				st, err := tt.peer.Accept()
				if err != nil {
					t.Errorf("Accept stream: %v", err)
				}
				accepted <- st
			}()
			st, err := tt.opener.Open()
			if err != nil {
				t.Fatalf("Open stream: %v", err)
			}
			defer st.Close()
			payload := bytes.Repeat([]byte(tt.name), 1000)
			if err := WriteFrame(st, 7, payload); err != nil {
				t.Fatalf("WriteFrame: %v", err)
			}
			peer := <-accepted
			if peer == nil {
				return
			}
			defer peer.Close()
			kind, got, err := ReadFrame(peer, MaxFrame)
			if err != nil || kind != 7 || !bytes.Equal(got, payload) {
				t.Fatalf("ReadFrame = kind %d, %d bytes, %v; want kind 7, %d bytes", kind, len(got), err, len(payload))
			}
			// And back on the same stream.
			if err := WriteFrame(peer, 8, []byte("ack")); err != nil {
				t.Fatalf("WriteFrame back: %v", err)
			}
			kind, got, err = ReadFrame(st, MaxFrame)
			if err != nil || kind != 8 || string(got) != "ack" {
				t.Fatalf("reply = kind %d %q, %v; want kind 8 \"ack\"", kind, got, err)
			}
		})
	}
	if d.RemoteAddr().String() != ln.Addr().String() {
		t.Errorf("dialer's RemoteAddr %s, want the listener's %s", d.RemoteAddr(), ln.Addr())
	}
	d.Close()
	select {
	case <-l.Done():
	case <-time.After(patience):
		t.Fatal("the listener's side never noticed the dialer closed")
	}
}

// TestURI: Dial takes the contact address with or without its scheme.
func TestURI(t *testing.T) {
	s := secret(t)
	ln := listen(t, s, Options{})
	for _, addr := range []string{URI(ln.Addr()), ln.Addr().String()} {
		ctx := timeout(t)
		go func() {
			if c, err := ln.Accept(ctx); err == nil {
				c.Close()
			}
		}()
		c, err := Dial(ctx, addr, s, Options{LocalIP: "127.0.0.1"})
		if err != nil {
			t.Fatalf("Dial(%q): %v", addr, err)
		}
		c.Close()
	}
}

// TestWrongSecret: a dialer with another secret is refused, the listener
// logs it with the peer's address, and the next good dialer still gets in.
func TestWrongSecret(t *testing.T) {
	var logs logBuffer
	s := secret(t)
	ln := listen(t, s, Options{Logger: logger(&logs)})
	c, err := Dial(timeout(t), URI(ln.Addr()), secret(t), Options{})
	if err == nil {
		c.Close()
		t.Fatal("Dial with a wrong secret succeeded")
	}
	if !errors.Is(err, ErrBadProof) {
		t.Errorf("Dial with a wrong secret: %v; want ErrBadProof", err)
	}
	// The listener logs before it closes, and the dialer saw the close.
	if got := logs.String(); !strings.Contains(got, ErrBadProof.Error()) || !strings.Contains(got, "127.0.0.1:") {
		t.Errorf("listener log does not name the refused peer and the reason:\n%s", got)
	}
	connect(t, ln, s)
}

// TestHandshakeBadProof runs each side of the handshake against a fake peer
// that does not know the secret: both sides say ErrBadProof.
func TestHandshakeBadProof(t *testing.T) {
	s := secret(t)
	wrong := secret(t)
	t.Run("listener", func(t *testing.T) {
		// A dialer that proves another secret.
		err := againstFakeDialer(t, s, func(c net.Conn) {
			hello := make([]byte, 5+nonceSize)
			if _, err := io.ReadFull(c, hello); err != nil {
				return
			}
			nc := bytes.Repeat([]byte{1}, nonceSize)
			c.Write(append(append(append([]byte{}, magic...), nc...), proof(wrong, "dialer", hello[5:], nc)...))
		})
		if !errors.Is(err, ErrBadProof) {
			t.Errorf("listenerHandshake = %v, want ErrBadProof", err)
		}
	})
	answers := []struct {
		name   string
		answer func(ns, nc, dialerProof []byte) []byte
	}{
		{"wrong secret", func(ns, nc, _ []byte) []byte { return proof(wrong, "listener", ns, nc) }},
		// Reflecting the dialer's own proof must not work: the labels differ.
		{"reflection", func(_, _, dp []byte) []byte { return dp }},
		{"zeros", func(_, _, _ []byte) []byte { return make([]byte, sha256.Size) }},
		{"dialer label", func(ns, nc, _ []byte) []byte { return proof(s, "dialer", ns, nc) }},
		{"swapped nonces", func(ns, nc, _ []byte) []byte { return proof(s, "listener", nc, ns) }},
	}
	for _, a := range answers {
		t.Run("dialer/"+a.name, func(t *testing.T) {
			err := againstFakeListener(t, s, func(c net.Conn) {
				ns := bytes.Repeat([]byte{2}, nonceSize)
				c.Write(append(append([]byte{}, magic...), ns...))
				msg := make([]byte, dialerMsgSize)
				if _, err := io.ReadFull(c, msg); err != nil {
					return
				}
				c.Write(a.answer(ns, msg[5:5+nonceSize], msg[5+nonceSize:]))
			})
			if !errors.Is(err, ErrBadProof) {
				t.Errorf("dialerHandshake = %v, want ErrBadProof", err)
			}
		})
	}
	t.Run("dialer/good", func(t *testing.T) {
		// The fake listener above is right when it knows the secret.
		err := againstFakeListener(t, s, func(c net.Conn) {
			ns := bytes.Repeat([]byte{3}, nonceSize)
			c.Write(append(append([]byte{}, magic...), ns...))
			msg := make([]byte, dialerMsgSize)
			if _, err := io.ReadFull(c, msg); err != nil {
				return
			}
			c.Write(proof(s, "listener", ns, msg[5:5+nonceSize]))
		})
		if err != nil {
			t.Errorf("dialerHandshake against a correct peer: %v", err)
		}
	})
}

// againstFakeDialer runs listenerHandshake over a pipe whose other end is
// played by fake, and returns its result.
func againstFakeDialer(t *testing.T, s []byte, fake func(net.Conn)) error {
	t.Helper()
	return handshakeAgainst(t, func(c net.Conn) error {
		_, err := listenerHandshake(c, s, patience)
		return err
	}, fake)
}

// againstFakeListener runs dialerHandshake against fake.
func againstFakeListener(t *testing.T, s []byte, fake func(net.Conn)) error {
	t.Helper()
	return handshakeAgainst(t, func(c net.Conn) error {
		_, err := dialerHandshake(c, s, patience)
		return err
	}, fake)
}

func handshakeAgainst(t *testing.T, side func(net.Conn) error, fake func(net.Conn)) error {
	t.Helper()
	a, b := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fake(b)
		// Drain whatever the side under test still writes, until it is done.
		io.Copy(io.Discard, b)
	}()
	err := side(a)
	a.Close()
	b.Close()
	<-done
	return err
}

// recordingProxy forwards connections to target and records what the
// first client sends, so that a test can replay it.
type recordingProxy struct {
	ln     net.Listener
	mu     sync.Mutex
	client bytes.Buffer
}

func newRecordingProxy(t *testing.T, target string) *recordingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &recordingProxy{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", target)
		if err != nil {
			in.Close()
			return
		}
		go func() {
			io.Copy(out, io.TeeReader(in, p))
			out.Close()
		}()
		io.Copy(in, out)
		in.Close()
	}()
	return p
}

func (p *recordingProxy) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.client.Write(b)
}

func (p *recordingProxy) sent() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]byte(nil), p.client.Bytes()...)
}

// captureDialerMessage records step 2 of a real, successful handshake
// with ln.
func captureDialerMessage(t *testing.T, ln *Listener, s []byte) []byte {
	t.Helper()
	p := newRecordingProxy(t, ln.Addr().String())
	ctx := timeout(t)
	go func() {
		if c, err := ln.Accept(ctx); err == nil {
			c.Close()
		}
	}()
	c, err := Dial(ctx, p.ln.Addr().String(), s, Options{})
	if err != nil {
		t.Fatalf("Dial through the recording proxy: %v", err)
	}
	c.Close()
	// Dial returned after sending step 2, so the proxy has recorded it.
	msg := p.sent()
	if len(msg) < dialerMsgSize || !bytes.Equal(msg[:5], magic) {
		t.Fatalf("recorded %d bytes %q, want a %d-byte dialer message", len(msg), msg, dialerMsgSize)
	}
	return msg[:dialerMsgSize]
}

// TestHostilePeers: peers that do not complete the handshake are refused
// and logged, without disturbing a good dialer that comes in meanwhile.
func TestHostilePeers(t *testing.T) {
	s := secret(t)
	var logs logBuffer
	// Short enough to see the silent peer dropped, long enough for the good
	// dialers on a loaded machine.
	ln := listen(t, s, Options{Logger: logger(&logs), HandshakeTimeout: 2 * time.Second})
	replay := captureDialerMessage(t, ln, s)
	tests := []struct {
		name   string
		send   []byte // after reading the listener's hello
		reason string // in the listener's log
		level  string // of the log line: a warning for any attempt at all
	}{
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + strings.Repeat("garbage ", 20)), "not a prsh peer", "WARN"},
		{"right magic, bad proof", append(append([]byte{}, magic...), make([]byte, nonceSize+sha256.Size)...), ErrBadProof.Error(), "WARN"},
		{"short then hang up", append(append([]byte{}, magic...), "abc"...), "unexpected EOF", "WARN"},
		// A peer of the unsealed wire, version 1, is refused at once.
		{"old version", append([]byte("PRSH\x01"), make([]byte, nonceSize+sha256.Size)...), "not a prsh peer", "WARN"},
		{"silent", nil, "timeout", "WARN"},
		// The listener's nonce is fresh, so yesterday's proof is worthless.
		{"replay", replay, ErrBadProof.Error(), "WARN"},
		// A probe, or a daemon that gave up dialing: logged, not warned of.
		{"hang up at once", nil, "EOF", "DEBUG"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			raw.SetDeadline(time.Now().Add(patience))
			hello := make([]byte, 5+nonceSize)
			if _, err := io.ReadFull(raw, hello); err != nil || !bytes.Equal(hello[:5], magic) {
				t.Fatalf("listener hello %q, %v", hello, err)
			}
			if tt.name == "replay" && bytes.Equal(hello[5:], replay[5:5+nonceSize]) {
				t.Fatal("the listener reused a nonce")
			}
			if tt.send != nil {
				if _, err := raw.Write(tt.send); err != nil {
					t.Fatal(err)
				}
			}
			if strings.Contains(tt.name, "hang up") {
				raw.(*net.TCPConn).CloseWrite()
			}
			// A good dialer gets in while the hostile one is being dealt with.
			connect(t, ln, s)
			// The hostile one gets no proof, only the end of the connection
			// (EOF, or a reset when the listener left bytes unread).
			n, err := io.Copy(io.Discard, raw)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the listener never dropped the connection")
			}
			if n != 0 {
				t.Errorf("the listener answered with %d bytes, want none", n)
			}
			local := raw.LocalAddr().String()
			waitFor(t, func() bool { return strings.Contains(logs.String(), local) },
				"the listener to log %s", local)
			line := lineWith(logs.String(), local)
			if !strings.Contains(line, tt.reason) || !strings.Contains(line, "["+tt.level+"]") {
				t.Errorf("log line for %s does not say %q at level %s:\n%s", local, tt.reason, tt.level, line)
			}
		})
	}
}

// TestSilentPeerDelaysNobody: a peer that connects and says nothing holds
// up no one, even while its handshake deadline is still far off.
func TestSilentPeerDelaysNobody(t *testing.T) {
	s := secret(t)
	ln := listen(t, s, Options{HandshakeTimeout: patience})
	for range 5 {
		raw, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
	}
	for range 3 {
		connect(t, ln, s)
	}
}

// TestHandshakesAreBounded: with every handshake slot held by silent
// peers, the next peer is not served until a slot frees; then it is.
func TestHandshakesAreBounded(t *testing.T) {
	s := secret(t)
	ln := listen(t, s, Options{HandshakeTimeout: patience, MaxHandshakes: 2})
	hello := func(raw net.Conn, within time.Duration) error {
		raw.SetReadDeadline(time.Now().Add(within))
		_, err := io.ReadFull(raw, make([]byte, len(magic)+nonceSize))
		return err
	}
	var silent []net.Conn
	for range 3 {
		raw, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		silent = append(silent, raw)
	}
	for _, raw := range silent[:2] {
		if err := hello(raw, patience); err != nil {
			t.Fatalf("a peer within the bound got no hello: %v", err)
		}
	}
	if err := hello(silent[2], 300*time.Millisecond); err == nil {
		t.Fatal("a third handshake started while two were under way, bound 2")
	}
	silent[0].Close() // its handshake fails at once and frees a slot
	if err := hello(silent[2], patience); err != nil {
		t.Fatalf("the waiting peer got no hello once a slot freed: %v", err)
	}
}

// TestHostileDialerConcurrently: many hostile and good peers at once; every
// good one gets in, no hostile one does.
func TestHostileDialerConcurrently(t *testing.T) {
	s := secret(t)
	ln := listen(t, s, Options{HandshakeTimeout: 5 * time.Second})
	ctx := timeout(t)
	const good = 8
	var wg sync.WaitGroup
	errs := make(chan error, 4*good)
	for i := range good {
		wg.Add(3)
		go func() {
			defer wg.Done()
			c, err := Dial(ctx, URI(ln.Addr()), s, Options{})
			if err != nil {
				errs <- fmt.Errorf("good dialer %d: %v", i, err)
				return
			}
			c.Close()
		}()
		go func() {
			defer wg.Done()
			c, err := Dial(ctx, URI(ln.Addr()), secret(t), Options{})
			if err == nil {
				c.Close()
				errs <- fmt.Errorf("dialer %d with a wrong secret got in", i)
			}
		}()
		go func() {
			defer wg.Done()
			raw, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				errs <- err
				return
			}
			defer raw.Close()
			raw.SetDeadline(time.Now().Add(patience))
			if i%2 == 0 {
				raw.Write(bytes.Repeat([]byte{byte(i)}, 200))
			}
			if n, _ := io.Copy(io.Discard, raw); n > 5+nonceSize {
				errs <- fmt.Errorf("raw peer %d got %d bytes, more than the hello", i, n)
			}
		}()
	}
	accepted := 0
	for accepted < good {
		c, err := ln.Accept(ctx)
		if err != nil {
			t.Fatalf("Accept after %d of %d good dialers: %v", accepted, good, err)
		}
		c.Close()
		accepted++
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestListenerClose: Accept ends with net.ErrClosed once the listener is
// closed, and Close may be called twice.
func TestListenerClose(t *testing.T) {
	ln := listen(t, secret(t), Options{})
	ln.Close()
	if _, err := ln.Accept(timeout(t)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept on a closed listener: %v, want net.ErrClosed", err)
	}
	ln.Close()
	// Closing from several goroutines at once must not panic.
	ln = listen(t, secret(t), Options{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ln.Close()
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := listen(t, secret(t), Options{}).Accept(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Accept with a cancelled context: %v", err)
	}
}

// TestDialNotAListener: a server that is not a prsh daemon is refused.
func TestDialNotAListener(t *testing.T) {
	tests := []struct {
		name  string
		serve func(net.Conn)
	}{
		{"http", func(c net.Conn) { c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n" + strings.Repeat("x", 64))) }},
		{"hangs up", func(c net.Conn) {}},
		{"silent", func(c net.Conn) { io.Copy(io.Discard, c) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := fakePeer(t, tt.serve)
			c, err := Dial(timeout(t), addr, secret(t), Options{HandshakeTimeout: 300 * time.Millisecond})
			if err == nil {
				c.Close()
				t.Fatal("Dial succeeded against a server that is no prsh daemon")
			}
		})
	}
}

// TestDialCancelled: cancelling Dial's context ends a handshake with a
// peer that accepted and then went quiet, long before the handshake's own
// deadline.
func TestDialCancelled(t *testing.T) {
	addr := fakePeer(t, func(c net.Conn) { io.Copy(io.Discard, c) })
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		c   *Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := Dial(ctx, addr, secret(t), Options{HandshakeTimeout: time.Hour})
		done <- result{c, err}
	}()
	time.Sleep(50 * time.Millisecond) // let it reach the handshake; not required
	cancel()
	select {
	case r := <-done:
		if r.err == nil {
			r.c.Close()
			t.Fatal("Dial succeeded against a silent peer")
		}
		if !errors.Is(r.err, context.Canceled) {
			t.Errorf("Dial = %v, want context.Canceled", r.err)
		}
	case <-time.After(patience):
		t.Fatal("a cancelled Dial stayed in the handshake")
	}
}

// fakePeer serves one connection with serve, then closes it; the listener
// closes when the test ends.
func fakePeer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		serve(c)
	}()
	return ln.Addr().String()
}

func waitFor(t *testing.T, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for "+format, args...)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func lineWith(text, s string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// frame builds the bytes of one frame by hand: length, kind, payload.
func frame(length uint32, kind byte, payload string) []byte {
	b := []byte{byte(length >> 24), byte(length >> 16), byte(length >> 8), byte(length), kind}
	return append(b, payload...)
}

// TestFrameRoundTrip: what WriteFrame and AppendFrame write, ReadFrame and
// a FrameReader read back, frame after frame, then io.EOF.
func TestFrameRoundTrip(t *testing.T) {
	frames := []struct {
		kind    byte
		payload []byte
	}{
		{1, nil},
		{0, []byte{0}},
		{255, []byte("hello")},
		{9, bytes.Repeat([]byte{0xAB}, 100_000)},
		{2, []byte("after a big one")},
		{3, bytes.Repeat([]byte("x"), MaxFrame-1)}, // exactly the limit
	}
	var written, appended bytes.Buffer
	var buf []byte
	for _, f := range frames {
		if err := WriteFrame(&written, f.kind, f.payload); err != nil {
			t.Fatalf("WriteFrame(%d, %d bytes): %v", f.kind, len(f.payload), err)
		}
		// AppendFrame may split the payload in parts.
		half := len(f.payload) / 2
		buf = AppendFrame(buf[:0], f.kind, f.payload[:half], f.payload[half:])
		appended.Write(buf)
	}
	if !bytes.Equal(written.Bytes(), appended.Bytes()) {
		t.Fatal("AppendFrame and WriteFrame disagree")
	}
	readers := []struct {
		name string
		next func(r io.Reader) func() (byte, []byte, error)
	}{
		{"ReadFrame", func(r io.Reader) func() (byte, []byte, error) {
			return func() (byte, []byte, error) { return ReadFrame(r, MaxFrame) }
		}},
		{"FrameReader", func(r io.Reader) func() (byte, []byte, error) { return NewFrameReader(r, MaxFrame).Next }},
	}
	for _, rd := range readers {
		t.Run(rd.name, func(t *testing.T) {
			// One byte at a time for the small frames would be slow for the
			// big one; a plain reader still splits reads at its own pace.
			next := rd.next(bytes.NewReader(written.Bytes()))
			for i, f := range frames {
				kind, payload, err := next()
				if err != nil || kind != f.kind || !bytes.Equal(payload, f.payload) {
					t.Fatalf("frame %d: kind %d, %d bytes, %v; want kind %d, %d bytes", i, kind, len(payload), err, f.kind, len(f.payload))
				}
			}
			if _, _, err := next(); err != io.EOF {
				t.Fatalf("after the last frame: %v, want io.EOF", err)
			}
		})
	}
}

// TestFrameReaderSmallReads: frames arrive whole even when the stream
// hands them over a byte at a time.
func TestFrameReaderSmallReads(t *testing.T) {
	var b bytes.Buffer
	for i := range 20 {
		WriteFrame(&b, byte(i), bytes.Repeat([]byte{byte(i)}, i*7))
	}
	fr := NewFrameReader(oneByteReader{&b}, 1000)
	for i := range 20 {
		kind, payload, err := fr.Next()
		if err != nil || kind != byte(i) || !bytes.Equal(payload, bytes.Repeat([]byte{byte(i)}, i*7)) {
			t.Fatalf("frame %d: kind %d %q, %v", i, kind, payload, err)
		}
	}
	if _, _, err := fr.Next(); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
}

type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

// TestBadFrames: a reader refuses what a peer must not send, and says
// io.ErrUnexpectedEOF for a frame cut short and io.EOF only between frames.
func TestBadFrames(t *testing.T) {
	const limit = 16
	tests := []struct {
		name  string
		input []byte
		want  error // nil: any error
	}{
		{"empty stream", nil, io.EOF},
		{"length 0", frame(0, 0, ""), nil},
		{"over the limit", frame(limit+1, 1, strings.Repeat("x", limit)), nil},
		{"huge length", frame(0xFFFFFFFF, 1, "x"), nil},
		{"header cut short", []byte{0, 0}, io.ErrUnexpectedEOF},
		{"no body", frame(5, 1, "")[:4], io.ErrUnexpectedEOF},
		{"body cut short", frame(5, 1, "ab"), io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, fr := range []*FrameReader{NewFrameReader(bytes.NewReader(tt.input), limit), {r: bytes.NewReader(tt.input), limit: limit}} {
				kind, payload, err := fr.Next()
				switch {
				case err == nil:
					t.Fatalf("read kind %d %q from %q, want an error", kind, payload, tt.input)
				case tt.want != nil && err != tt.want:
					t.Fatalf("error %v, want %v", err, tt.want)
				case tt.want == nil && (err == io.EOF || err == io.ErrUnexpectedEOF):
					t.Fatalf("error %v, want a refusal", err)
				}
				if cap(fr.buf) > limit {
					t.Errorf("reader allocated %d bytes, more than the %d-byte limit", cap(fr.buf), limit)
				}
			}
			if _, _, err := ReadFrame(bytes.NewReader(tt.input), limit); err == nil {
				t.Errorf("ReadFrame accepted %q", tt.input)
			}
		})
	}
	// A frame of exactly the limit is fine.
	if _, p, err := ReadFrame(bytes.NewReader(frame(limit, 1, strings.Repeat("y", limit-1))), limit); err != nil || len(p) != limit-1 {
		t.Errorf("frame of exactly the limit: %d bytes, %v", len(p), err)
	}
}

// TestWriteFrameLimit: WriteFrame refuses to write what no reader with
// the default limit would take, and writes nothing then.
func TestWriteFrameLimit(t *testing.T) {
	var w countingWriter
	if err := WriteFrame(&w, 1, make([]byte, MaxFrame)); err == nil {
		t.Error("WriteFrame accepted a frame over MaxFrame")
	}
	if w.n != 0 {
		t.Errorf("WriteFrame wrote %d bytes of a refused frame", w.n)
	}
	if err := WriteFrame(&w, 1, make([]byte, MaxFrame-1)); err != nil {
		t.Errorf("WriteFrame refused a frame of exactly MaxFrame: %v", err)
	}
	if w.writes != 1 {
		t.Errorf("WriteFrame issued %d writes, want 1 (frames must not tear)", w.writes)
	}
}

type countingWriter struct{ n, writes int }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += len(p)
	c.writes++
	return len(p), nil
}

// FuzzReadFrame: whatever a peer sends, reading frames never panics and
// never allocates beyond the limit; ReadFrame and a FrameReader agree.
func FuzzReadFrame(f *testing.F) {
	f.Add(frame(1, 7, ""))
	f.Add(append(frame(4, 1, "abc"), frame(2, 2, "z")...))
	f.Add(frame(0, 0, ""))
	f.Add(frame(1<<31, 1, "x"))
	f.Add(frame(9, 1, "ab"))
	const limit = 64
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := NewFrameReader(bytes.NewReader(data), limit)
		kind0, payload0, err0 := ReadFrame(bytes.NewReader(data), limit)
		for i := 0; ; i++ {
			kind, payload, err := fr.Next()
			if cap(fr.buf) > limit {
				t.Fatalf("allocated %d bytes for a %d-byte limit", cap(fr.buf), limit)
			}
			if i == 0 && ((err == nil) != (err0 == nil) || kind != kind0 || !bytes.Equal(payload, payload0)) {
				t.Fatalf("FrameReader read (%d, %q, %v), ReadFrame (%d, %q, %v)", kind, payload, err, kind0, payload0, err0)
			}
			if err != nil {
				return
			}
			if len(payload)+1 > limit {
				t.Fatalf("payload of %d bytes over the %d-byte limit", len(payload), limit)
			}
		}
	})
}

// FuzzHandshake: whatever a fake peer sends, neither side of the handshake
// panics or accepts it. A valid proof would need the secret, or the
// HMAC of a nonce that is drawn afresh for every run.
func FuzzHandshake(f *testing.F) {
	ns := bytes.Repeat([]byte{5}, nonceSize)
	f.Add([]byte{})
	f.Add(magic)
	f.Add(append(append(append([]byte{}, magic...), ns...), make([]byte, sha256.Size)...))
	f.Add(append(append([]byte("PRSH\x01"), ns...), make([]byte, sha256.Size)...))
	f.Add([]byte("SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n"))
	s := bytes.Repeat([]byte{0x42}, SecretSize)
	f.Fuzz(func(t *testing.T, data []byte) {
		// data is what a dialer sends after the listener's hello…
		err := againstFakeDialer(t, s, func(c net.Conn) {
			hello := make([]byte, 5+nonceSize)
			if _, err := io.ReadFull(c, hello); err != nil {
				return
			}
			c.Write(data)
			c.Close() // the end of what it has to say
		})
		if err == nil {
			t.Fatalf("listener accepted %q", data)
		}
		// …and what a listener sends, hello and answer included.
		err = againstFakeListener(t, s, func(c net.Conn) {
			go io.Copy(io.Discard, c)
			c.Write(data)
			c.Close() // the end of what it has to say
		})
		if err == nil {
			t.Fatalf("dialer accepted %q", data)
		}
	})
}

// TestListenerOutOfDescriptors: a listener whose process has no
// descriptor left for a new connection says so on Accept, rather than
// leave its peers waiting for a callback it cannot take.
func TestListenerOutOfDescriptors(t *testing.T) {
	ln := listen(t, secret(t), Options{})
	fdtest.Exhaust(t, 1) // for the dialer's socket
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := ln.Accept(timeout(t)); !errors.Is(err, syscall.EMFILE) {
		t.Errorf("Accept with no descriptor left: %v, want EMFILE", err)
	}
}
