package pmi

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
)

// errNoSocket: the table has no socket with those ends (the client has
// already gone, or is in another network namespace).
var errNoSocket = errors.New("the connecting socket is not in /proc/net/tcp")

// tcpOwner gives the user of this network namespace's IPv4 TCP socket at
// local connected to remote, from /proc/net/tcp: the kernel's record of
// who created it, which a client cannot forge.
func tcpOwner(local, remote net.Addr) (int, error) {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return socketOwner(f, local, remote)
}

// socketOwner finds the socket with ends local and remote in a table in
// the format of /proc/net/tcp and returns its uid column.
func socketOwner(table io.Reader, local, remote net.Addr) (int, error) {
	l, err := procAddr(local)
	if err != nil {
		return 0, err
	}
	r, err := procAddr(remote)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(table)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid ...
		f := strings.Fields(sc.Text())
		if len(f) >= 8 && f[1] == l && f[2] == r {
			return strconv.Atoi(f[7])
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errNoSocket
}

// procAddr writes an IPv4 address as /proc/net/tcp does: the address as
// the host's 32-bit integer and the port, both in hexadecimal.
func procAddr(a net.Addr) (string, error) {
	tcp, ok := a.(*net.TCPAddr)
	ip4 := net.IP(nil)
	if ok {
		ip4 = tcp.IP.To4()
	}
	if ip4 == nil {
		return "", fmt.Errorf("%v is not an IPv4 TCP address", a)
	}
	return fmt.Sprintf("%08X:%04X", binary.NativeEndian.Uint32(ip4), tcp.Port), nil
}
