// Command example uses every call of package prsh/modex/pmi/client, the
// Go PMI client, and prints one line per rank that a test can check.
// Build it and start it with prsh's mpirun:
//
//	go build -o example prsh/modex/pmi/client/example
//	mpirun -np 4 ./example
//
// Each rank R of N, with neighbours L = R-1 and Rt = R+1 (wrapping round),
// prints:
//
//	rank R of N: kvs ok, allgather ok, iallgather ok, ifence ok, ring R of N left vL right vRt, finalize ok
//
// With the argument "abort", the last rank calls Abort(3, ...) after the
// ring while the others wait in a fence; mpirun then kills the job and
// exits with status 3, and nobody prints the line. A failed check is
// printed on stderr as "example: rank R: STEP: ERROR", exit status 1.
// Without mpirun it says so and exits with status 2.
package main

import (
	"errors"
	"fmt"
	"os"
	"reflect"

	"prsh/modex/pmi/client"
)

func main() {
	c, err := client.Init()
	if errors.Is(err, client.ErrNotLaunched) {
		fmt.Fprintln(os.Stderr, "example: not started by mpirun (PMI_FD is not set)")
		os.Exit(2)
	}
	rank := -1
	check := func(step string, err error) {
		if err != nil {
			fmt.Fprintf(os.Stderr, "example: rank %d: %s: %v\n", rank, step, err)
			os.Exit(1)
		}
	}
	check("init", err)
	rank = c.Rank()
	n := c.Size()
	left, right := (rank+n-1)%n, (rank+1)%n

	// Put, Fence, Get: publish a "business card", read the right
	// neighbour's after the fence; a missing key is ErrNotFound at once.
	check("put", c.Put(fmt.Sprint("card-", rank), card(rank)))
	check("fence", c.Fence())
	v, err := c.Get(fmt.Sprint("card-", right))
	check("get", err)
	check("get", expect(v, card(right)))
	if _, err := c.Get("no-such-key"); !errors.Is(err, client.ErrNotFound) {
		check("get of a missing key", fmt.Errorf("%v, want ErrNotFound", err))
	}

	// Allgather: every rank's value, in rank order, in one reply. Values
	// may hold any byte.
	all, err := c.Allgather(value(rank, "blocking"))
	check("allgather", err)
	check("allgather", expect(all, values(n, "blocking")))

	// Iallgather: start it, do work that needs nobody else, then Wait.
	req, err := c.Iallgather(value(rank, "non-blocking"))
	check("iallgather", err)
	sink += work()
	all, err = req.Wait()
	check("iallgather wait", err)
	check("iallgather", expect(all, values(n, "non-blocking")))

	// Ifence: commit a put in the background, then read a neighbour's.
	check("put", c.Put(fmt.Sprint("late-", rank), card(rank)))
	fence, err := c.Ifence()
	check("ifence", err)
	sink += work()
	_, err = fence.Wait()
	check("ifence wait", err)
	v, err = c.Get(fmt.Sprint("late-", left))
	check("get after ifence", err)
	check("get after ifence", expect(v, card(left)))

	// Ring, as the C PMIX_Ring(value, &rank, &ranks, left, right) does it.
	ring, err := c.Ring(1, fmt.Sprint("v", rank), fmt.Sprint("v", rank))
	check("ring", err)
	check("ring", expect(ring, client.Ring{Count: rank, Left: fmt.Sprint("v", left), Right: fmt.Sprint("v", right)}))

	if len(os.Args) > 1 && os.Args[1] == "abort" {
		if rank == n-1 {
			check("abort", c.Abort(3, "the example aborts"))
			os.Exit(3) // Abort returned: the launcher did not kill us
		}
		check("fence after the abort", c.Fence()) // never completes: the job is killed
		check("fence after the abort", errors.New("completed"))
	}

	check("finalize", c.Finalize())
	fmt.Printf("rank %d of %d: kvs ok, allgather ok, iallgather ok, ifence ok, ring %d of %d left %s right %s, finalize ok\n",
		rank, n, ring.Count, n, ring.Left, ring.Right)
}

func card(r int) string { return fmt.Sprintf("tcp://10.0.0.%d:%d", r%250, 5000+r) }

// value holds the bytes a naive framing would trip on.
func value(r int, round string) string { return fmt.Sprintf("%s;%d=\x00\n;;", round, r) }

func values(n int, round string) []string {
	vs := make([]string, n)
	for r := range vs {
		vs[r] = value(r, round)
	}
	return vs
}

func expect(got, want any) error {
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("got %#v, want %#v", got, want)
	}
	return nil
}

// sink keeps work's result alive.
var sink int

// work stands for start-up work that needs no other rank (registering
// memory, reading input): a few milliseconds of arithmetic.
func work() int {
	sum := 0
	for i := range 3000000 {
		sum += i % 7
	}
	return sum
}
