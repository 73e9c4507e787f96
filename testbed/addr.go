package testbed

import (
	"fmt"
	"io"
	"os"
	"os/user"

	"prsh/testbed/nodes"
)

// The nodes' names and addresses are in package nodes, which the launch
// agent shares.

// claimPort is where a block's claim is bound: on 127.B1.255.254, never a
// node's address (B3 stops at 250), and above the ephemeral port range.
const claimPort = 65534

// claimBlocks finds the first run of free blocks that holds nodes
// addresses and claims each by binding its claim address (bindOnly), which
// holds it against every other cluster, in any process, until the caller
// closes the claims when the cluster stops.
func claimBlocks(count int) (first int, claims []io.Closer, err error) {
	need := (count + nodes.AddrsPerB1 - 1) / nodes.AddrsPerB1
	for first = 1; first+need-1 <= nodes.LastBlock; first++ {
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
	return 0, nil, fmt.Errorf("testbed: no free loopback block for %d nodes (other clusters hold them)", count)
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
