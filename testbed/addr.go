package testbed

import (
	"fmt"
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
// and B1 from 1 up, so no address ends in .0 or .255 and none is 127.0.0.1.
// Linux routes all of 127/8 to lo, so these need no setup, and each node can
// be told apart by its IP alone (SSH_CONNECTION, ss, tcpdump).
const (
	addrsPerB2 = 250
	addrsPerB1 = addrsPerB2 * 256
)

// nodeAddr returns the loopback address of node i (1-based).
func nodeAddr(i int) (netip.Addr, error) {
	k := i - 1
	b1 := 1 + k/addrsPerB1
	if k < 0 || b1 > 254 {
		return netip.Addr{}, fmt.Errorf("testbed: node %d: out of loopback addresses", i)
	}
	b2 := (k % addrsPerB1) / addrsPerB2
	b3 := k%addrsPerB2 + 1
	return netip.AddrFrom4([4]byte{127, byte(b1), byte(b2), byte(b3)}), nil
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
