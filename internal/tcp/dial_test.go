package tcp

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestDialTimesOut: a host that never answers the connect (a listener
// whose backlog is full drops the SYN) ends the dial at its timeout, as
// a timeout, and a listener that answers connects.
func TestDialTimesOut(t *testing.T) {
	addr := fullListener(t)
	start := time.Now()
	_, err := Dial(context.Background(), net.Dialer{}, "tcp", addr, 300*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("dial of a full listener: %v, want a timeout", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("gave up after %v, before its timeout", d)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conn, err := Dial(context.Background(), net.Dialer{}, "tcp", ln.Addr().String(), time.Minute)
	if err != nil {
		t.Fatalf("dial of a listener: %v", err)
	}
	conn.Close()
}

// fullListener is a listener with a backlog of one, filled: the kernel
// drops any further SYN.
func fullListener(t *testing.T) string {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sa.(*unix.SockaddrInet4).Port}).String()
	for range 2 { // the backlog holds one; the second waits in the SYN queue
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			break
		}
		t.Cleanup(func() { c.Close() })
	}
	return addr
}

// TestEstablished tells a completed connection from a socket that is not
// one.
func TestEstablished(t *testing.T) {
	ln, conn, _ := connected(t)
	if !established(fdOf(t, conn.(syscall.Conn))) {
		t.Error("a connected socket is not established")
	}
	if established(fdOf(t, ln)) {
		t.Error("a listening socket is established")
	}
	if established(-1) {
		t.Error("no socket is established")
	}
}

func fdOf(t *testing.T, c syscall.Conn) int {
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	raw.Control(func(f uintptr) { fd = int(f) })
	return fd
}

// TestBound: a peer that says nothing is cut off at the bound, and a
// lifted bound leaves the connection as it was.
func TestBound(t *testing.T) {
	_, conn, peer := connected(t)
	lift := Bound(conn, 100*time.Millisecond)
	start := time.Now()
	_, err := conn.Read(make([]byte, 1))
	lift()
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("read from a silent peer: %v after %v, want a timeout after 100ms", err, time.Since(start))
	}
	Bound(conn, time.Hour)()
	go peer.Write([]byte("x"))
	if _, err := conn.Read(make([]byte, 1)); err != nil {
		t.Errorf("read after a lifted bound: %v", err)
	}
}

// connected is a listener and the two ends of a connection to it, closed
// when the test ends.
func connected(t *testing.T) (ln *net.TCPListener, conn, peer net.Conn) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if conn, err = net.Dial("tcp", l.Addr().String()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if peer, err = l.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	return l.(*net.TCPListener), conn, peer
}
