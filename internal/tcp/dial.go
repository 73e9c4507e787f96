package tcp

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"prsh/internal/stall"
)

// Dial connects as d.DialContext does, within timeout counted as a
// stall.Timer counts it, and not while the kernel holds the connection
// completed: then the dialing goroutine has not run yet to see it (a
// process starved of CPU), which says nothing of the host. d's Control
// is replaced; d should have no Deadline.
func Dial(ctx context.Context, d net.Dialer, network, addr string, timeout time.Duration) (net.Conn, error) {
	var fd atomic.Int64
	fd.Store(-1)
	d.Control = func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(f uintptr) { fd.Store(int64(f)) })
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	bound := stall.Unless(timeout, func() bool { return established(int(fd.Load())) }, cancel)
	conn, err := d.DialContext(ctx, network, addr)
	if !bound.Stop() && err != nil {
		return nil, fmt.Errorf("dial %s %s: %w", network, addr, os.ErrDeadlineExceeded)
	}
	return conn, err
}

// tcpEstablished is TCP_ESTABLISHED of linux/tcp_states.h.
const tcpEstablished = 1

// established says fd is a TCP socket whose connection is complete.
func established(fd int) bool {
	if fd < 0 {
		return false
	}
	info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
	return err == nil && info.State == tcpEstablished
}

// Bound breaks c's reads and writes once timeout has passed in which this
// process ran (internal/stall) and no byte from the peer waited unread,
// and returns what lifts it: a deadline that a stall of this side cannot
// make the peer miss. A starved machine stalls both ends of a connection;
// the peer is not late for what this side did not read.
func Bound(c net.Conn, timeout time.Duration) (lift func()) {
	var mu sync.Mutex
	lifted := false
	t := stall.Unless(timeout, func() bool { return Unread(c) > 0 }, func() {
		mu.Lock()
		defer mu.Unlock()
		if !lifted {
			c.SetDeadline(time.Unix(1, 0))
		}
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		lifted = true
		if !t.Stop() {
			c.SetDeadline(time.Time{})
		}
	}
}
