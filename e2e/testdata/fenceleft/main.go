// Command fenceleft: rank 0 finalises PMI and exits 0 at once, entering
// no collective; every other rank enters one over the whole job (the
// first argument: fence, the default, allgather or ring), which must fail
// (rank 0 never enters it), neither hang nor answer without rank 0's
// part. Each prints one line,
//
//	rank R: OP failed: <the error>
//
// (or "rank R: OP ok"), finalises and exits 0.
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
	op := "fence"
	if len(os.Args) > 1 {
		op = os.Args[1]
	}
	if c.Rank() != 0 {
		if err := enter(c, op); err != nil {
			fmt.Printf("rank %d: %s failed: %v\n", c.Rank(), op, err)
		} else {
			fmt.Printf("rank %d: %s ok\n", c.Rank(), op)
		}
	}
	if err := c.Finalize(); err != nil {
		fmt.Fprintf(os.Stderr, "fenceleft: rank %d: finalize: %v\n", c.Rank(), err)
		os.Exit(1)
	}
}

func enter(c *client.Client, op string) error {
	var err error
	switch op {
	case "allgather":
		_, err = c.Allgather(fmt.Sprint("value of ", c.Rank()))
	case "ring":
		_, err = c.Ring(1, fmt.Sprint("left of ", c.Rank()), fmt.Sprint("right of ", c.Rank()))
	default:
		err = c.Fence()
	}
	return err
}
