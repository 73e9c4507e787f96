package transport

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// Flush waits, at most for wait, until the peer's kernel has acknowledged
// every byte written on the connection so far. A process that exits while
// its socket still holds unsent bytes loses them if the socket also holds
// unread ones (a window update, a ping): closing it then sends a reset,
// and the peer sees the streams end early, as if cleanly.
func (c *Conn) Flush(wait time.Duration) {
	tcp, ok := c.link.Conn.(*net.TCPConn)
	if !ok {
		return
	}
	raw, err := tcp.SyscallConn()
	if err != nil {
		return
	}
	deadline := time.Now().Add(wait)
	pause := 100 * time.Microsecond // the peer's kernel acknowledges at once, or after a delayed-ACK timer
	for {
		unacked := 0
		raw.Control(func(fd uintptr) {
			unacked, _ = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ)
		})
		if unacked == 0 || time.Now().After(deadline) {
			return
		}
		select {
		case <-c.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Millisecond)
	}
}
