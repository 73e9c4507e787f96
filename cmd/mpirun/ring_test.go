package main

import (
	"fmt"
	"testing"

	"prsh/testbed"
)

// TestPMIXRing: PMIX_Ring through Slurm's libpmi2 client, computed as a
// gather up the daemon tree and a scatter down it: every rank gets its
// position and its two neighbours' values, wrapping round, whatever the
// placement and the tree.
func TestPMIXRing(t *testing.T) {
	prog := pmi2(t, "ring")
	c := cluster(t, testbed.Config{Nodes: 5, Slots: 2})
	for _, args := range [][]string{
		{"-np", "9", "--map-by", "node", "--spawn-degree", "2"},
		{"-np", "10", "--routed", "direct"},
		{"-np", "1"},
	} {
		res := mpirun(t, c, append(args, prog)...)
		if res.status != 0 || res.stderr != "" {
			t.Fatalf("%v: exit %d, stderr:\n%s", args, res.status, res.stderr)
		}
		var np int
		fmt.Sscan(args[1], &np)
		var want []string
		for r := range np {
			want = append(want, fmt.Sprintf("rank %d ring %d of %d left v%d right v%d", r, r, np, (r+np-1)%np, (r+1)%np))
		}
		checkLines(t, res.stdout, want)
	}
}
