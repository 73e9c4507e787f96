// Command fenceleft: rank 0 finalises PMI and exits 0 at once, entering
// no fence; every other rank enters a fence over the whole job, which
// must fail (rank 0 never enters it), not hang. Each prints one line,
//
//	rank R: fence failed: <the error>
//
// (or "rank R: fence ok"), finalises and exits 0.
package main

import (
	"fmt"
	"os"

	"prsh/modex/pmi/client"
)

func main() {
	c, err := client.Init()
	if err != nil {
		fmt.Fprintf(os.Stderr, "fenceleft: init: %v\n", err)
		os.Exit(1)
	}
	if c.Rank() != 0 {
		if err := c.Fence(); err != nil {
			fmt.Printf("rank %d: fence failed: %v\n", c.Rank(), err)
		} else {
			fmt.Printf("rank %d: fence ok\n", c.Rank())
		}
	}
	if err := c.Finalize(); err != nil {
		fmt.Fprintf(os.Stderr, "fenceleft: rank %d: finalize: %v\n", c.Rank(), err)
		os.Exit(1)
	}
}
