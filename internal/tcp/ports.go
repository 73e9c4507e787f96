package tcp

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
)

// Ports is a range of TCP ports to listen on (mpirun --port-range), for
// clusters whose firewalls open only those; the zero value is any port
// the kernel picks.
type Ports struct{ Lo, Hi int }

// ParsePorts reads "LO-HI" or Hydra's "LO:HI"; "" is any port.
func ParsePorts(s string) (Ports, error) {
	if s == "" {
		return Ports{}, nil
	}
	lo, hi, ok := strings.Cut(s, "-")
	if !ok {
		lo, hi, ok = strings.Cut(s, ":")
	}
	a, err1 := strconv.Atoi(lo)
	b, err2 := strconv.Atoi(hi)
	if !ok || err1 != nil || err2 != nil || a < 1 || b < a || b > 65535 {
		return Ports{}, fmt.Errorf("port range %q: want LO-HI, 1 ≤ LO ≤ HI ≤ 65535", s)
	}
	return Ports{a, b}, nil
}

// String writes the range as ParsePorts reads it; "" for any port.
func (p Ports) String() string {
	if p == (Ports{}) {
		return ""
	}
	return fmt.Sprintf("%d-%d", p.Lo, p.Hi)
}

// ListenIn listens on ip at the first port of ports that is free, or at
// any port for the zero range.
func ListenIn(network, ip string, ports Ports) (net.Listener, error) {
	if ports == (Ports{}) {
		return Listen(network, net.JoinHostPort(ip, "0"))
	}
	for port := ports.Lo; port <= ports.Hi; port++ {
		ln, err := Listen(network, net.JoinHostPort(ip, strconv.Itoa(port)))
		if !errors.Is(err, syscall.EADDRINUSE) {
			return ln, err
		}
	}
	return nil, fmt.Errorf("no free port in %s on %s", ports, ip)
}
