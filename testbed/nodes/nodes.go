// Package nodes is the testbed's naming of its virtual nodes, their
// loopback addresses and what a login on one of them sets. It imports no
// ssh or runtime code, so that the launch agent (testbed/agent), which
// starts once per emulated session, stays small.
package nodes

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// Name returns the name of node i (1-based) of n, zero-padded to at least
// three digits so that names sort like their numbers.
func Name(i, n int) string {
	w := len(strconv.Itoa(n))
	if w < 3 {
		w = 3
	}
	return fmt.Sprintf("node%0*d", w, i)
}

// Address layout: node i gets 127.B1.B2.B3 with B3 in 1…250, B2 in 0…255
// and B1 from the cluster's first block up, so no address ends in .0 or
// .255 and none is 127.0.0.1. Linux routes all of 127/8 to lo, so these
// need no setup, and each node can be told apart by its IP alone
// (SSH_CONNECTION, ss, tcpdump).
//
// A block is the 64,000 addresses of one B1. Each cluster claims blocks of
// its own, so that clusters running at the same time (tests in parallel)
// never share an address: a fault that cuts a node's links by address must
// not cut another cluster's.
const (
	addrsPerB2 = 250
	AddrsPerB1 = addrsPerB2 * 256
	LastBlock  = 254
)

// Addr returns the loopback address of node i (1-based) in a cluster whose
// blocks start at first.
func Addr(first, i int) (netip.Addr, error) {
	k := i - 1
	b1 := first + k/AddrsPerB1
	if k < 0 || b1 > LastBlock {
		return netip.Addr{}, fmt.Errorf("testbed: node %d: out of loopback addresses", i)
	}
	b2 := (k % AddrsPerB1) / addrsPerB2
	b3 := k%addrsPerB2 + 1
	return netip.AddrFrom4([4]byte{127, byte(b1), byte(b2), byte(b3)}), nil
}

// Index finds the node a launcher names, by name (node007) or by address,
// in a cluster of n nodes whose blocks start at first; 0 if it is none.
func Index(host string, first, n int) int {
	if num, ok := strings.CutPrefix(host, "node"); ok {
		i, err := strconv.Atoi(num)
		if err == nil && i >= 1 && i <= n && Name(i, n) == host {
			return i
		}
		return 0
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.Is4() {
		return 0
	}
	b := ip.As4()
	if b[0] != 127 || int(b[1]) < first || b[3] < 1 || b[3] > addrsPerB2 {
		return 0
	}
	i := (int(b[1])-first)*AddrsPerB1 + int(b[2])*addrsPerB2 + int(b[3])
	if i > n {
		return 0
	}
	return i
}

// LoginEnv is what a login on a node would set: the testbed's own PATH,
// HOME, USER, LOGNAME and SHELL, with sane fallbacks when they are unset.
func LoginEnv(user string) []string {
	get := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	return []string{
		"PATH=" + get("PATH", "/usr/local/bin:/usr/bin:/bin"),
		"HOME=" + get("HOME", "/"),
		"USER=" + get("USER", user),
		"LOGNAME=" + get("LOGNAME", user),
		"SHELL=" + get("SHELL", "/bin/sh"),
	}
}

// HomeDir is where node processes start, like sshd's chdir to $HOME.
func HomeDir() string {
	if h := os.Getenv("HOME"); h != "" {
		if st, err := os.Stat(h); err == nil && st.IsDir() {
			return h
		}
	}
	return "/"
}

// Environment variables the testbed puts into every process it starts.
const (
	EnvRun  = "PRSH_TESTBED_RUN"  // the cluster's random run id
	EnvNode = "PRSH_TESTBED_NODE" // the node the process runs on
)
