package tcp

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// Unread is how many bytes a TCP socket holds that were received and not
// yet read (0 where that cannot be told: a pipe, a channel through a jump
// host). A peer whose bytes wait there has spoken, even if a loaded
// reader has not got to them yet.
func Unread(conn net.Conn) int {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return 0
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	raw.Control(func(fd uintptr) {
		n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ)
	})
	return n
}
