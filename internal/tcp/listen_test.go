package tcp

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// TestListenIsPlainTCP: the listening socket is plain TCP, not multipath
// TCP, even where the kernel offers it (Go's default would be MPTCP).
func TestListenIsPlainTCP(t *testing.T) {
	ln, err := Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	raw, err := ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var proto int
	var serr error
	if err := raw.Control(func(fd uintptr) {
		proto, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PROTOCOL)
	}); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	if proto != unix.IPPROTO_TCP {
		t.Errorf("listening socket's protocol = %d, want %d (TCP)", proto, unix.IPPROTO_TCP)
	}
}
