// Command bigfence puts a lot into one PMI fence and checks every value
// every rank put: each rank puts KEYS keys (argument 1, default 64) of
// 1000 bytes, fences, gets every rank's keys and prints one line,
//
//	rank R of N: K values ok
//
// or the first wrong value on stderr with exit status 1.
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"prsh/modex/pmi/client"
)

func main() {
	keys := 64
	if len(os.Args) > 1 {
		keys, _ = strconv.Atoi(os.Args[1])
	}
	c, err := client.Init()
	check(-1, "init", err)
	rank, n := c.Rank(), c.Size()
	for k := range keys {
		check(rank, "put", c.Put(key(rank, k), value(rank, k)))
	}
	check(rank, "fence", c.Fence())
	for r := range n {
		for k := range keys {
			v, err := c.Get(key(r, k))
			check(rank, "get", err)
			if v != value(r, k) {
				check(rank, "get", fmt.Errorf("%s: got %.40q…, want %.40q…", key(r, k), v, value(r, k)))
			}
		}
	}
	check(rank, "finalize", c.Finalize())
	fmt.Printf("rank %d of %d: %d values ok\n", rank, n, n*keys)
}

func key(rank, k int) string { return fmt.Sprintf("r%d-k%d", rank, k) }

// value is 1000 bytes that differ for every key.
func value(rank, k int) string {
	head := fmt.Sprintf("rank %d key %d:", rank, k)
	return head + strings.Repeat(string(rune('a'+(rank+k)%26)), 1000-len(head))
}

func check(rank int, step string, err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "bigfence: rank %d: %s: %v\n", rank, step, err)
		os.Exit(1)
	}
}
