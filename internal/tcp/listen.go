// Package tcp opens the daemons' listening sockets.
package tcp

import (
	"context"
	"net"
)

// Listen listens on a TCP address with plain TCP. Go's listeners use
// multipath TCP by default where the kernel has it: a probe socket, an
// MPTCP socket for the listener, and connections from our plain-TCP
// dialers that fall back through the MPTCP layer; an orted paid about 2 %
// of its launch CPU for it and gained nothing.
func Listen(network, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	return lc.Listen(context.Background(), network, addr)
}
