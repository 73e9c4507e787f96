package testbed

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/user"
	"strconv"
)

// nodeName returns the name of node i (1-based) of n, zero-padded to at
// least three digits so that names sort like their numbers.
func nodeName(i, n int) string {
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
// its own (claimBlocks), so that clusters running at the same time (tests
// in parallel) never share an address: a fault that cuts a node's links by
// address must not cut another cluster's.
const (
	addrsPerB2 = 250
	addrsPerB1 = addrsPerB2 * 256
	lastBlock  = 254
)

// nodeAddr returns the loopback address of node i (1-based) in a cluster
// whose blocks start at first.
func nodeAddr(first, i int) (netip.Addr, error) {
	k := i - 1
	b1 := first + k/addrsPerB1
	if k < 0 || b1 > lastBlock {
		return netip.Addr{}, fmt.Errorf("testbed: node %d: out of loopback addresses", i)
	}
	b2 := (k % addrsPerB1) / addrsPerB2
	b3 := k%addrsPerB2 + 1
	return netip.AddrFrom4([4]byte{127, byte(b1), byte(b2), byte(b3)}), nil
}

// claimPort is where a block's claim is bound: on 127.B1.255.254, never a
// node's address (B3 stops at 250), and above the ephemeral port range.
const claimPort = 65534

// claimBlocks finds the first run of free blocks that holds nodes
// addresses and claims each by binding its claim address (bindOnly), which
// holds it against every other cluster, in any process, until the caller
// closes the claims when the cluster stops.
func claimBlocks(nodes int) (first int, claims []io.Closer, err error) {
	need := (nodes + addrsPerB1 - 1) / addrsPerB1
	for first = 1; first+need-1 <= lastBlock; first++ {
		claims = claims[:0]
		for b := first; b < first+need; b++ {
			fd, err := claim(b)
			if err != nil {
				break
			}
			claims = append(claims, fd)
		}
		if len(claims) == need {
			return first, claims, nil
		}
		for _, c := range claims {
			c.Close()
		}
	}
	return 0, nil, fmt.Errorf("testbed: no free loopback block for %d nodes (other clusters hold them)", nodes)
}

func claim(block int) (io.Closer, error) {
	fd, err := bindOnly([4]byte{127, byte(block), 255, 254}, claimPort)
	if err != nil {
		return nil, err
	}
	return fd, nil
}

// currentUser is the login name that nodes accept and ssh_config names.
func currentUser() (string, error) {
	u, err := user.Current()
	if err == nil && u.Username != "" {
		return u.Username, nil
	}
	if name := os.Getenv("USER"); name != "" {
		return name, nil
	}
	return "", fmt.Errorf("testbed: cannot tell the current user: %w", err)
}

// loginEnv is what a login on a node would set: the testbed's own PATH,
// HOME, USER, LOGNAME and SHELL, with sane fallbacks when they are unset.
func loginEnv(user string) []string {
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

// homeDir is where node processes start, like sshd's chdir to $HOME.
func homeDir() string {
	if h := os.Getenv("HOME"); h != "" {
		if st, err := os.Stat(h); err == nil && st.IsDir() {
			return h
		}
	}
	return "/"
}
