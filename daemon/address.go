package daemon

import (
	"net"
	"os"
	"strings"
)

// NodeIP picks the address an orted listens on and dials from: the server
// address of the ssh session that started it (the address its parent
// reached it on), else the address this host would use to reach its
// parent, else any.
func NodeIP(parentAddr string) string {
	if f := strings.Fields(os.Getenv("SSH_CONNECTION")); len(f) == 4 {
		return f[2]
	}
	return IPToward(strings.TrimPrefix(parentAddr, "tcp://"))
}

// IPToward returns the local address the kernel would use to reach
// hostport, without sending anything; "" when it cannot tell.
func IPToward(hostport string) string {
	c, err := net.Dial("udp", hostport)
	if err != nil {
		return ""
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String()
}
