package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"prsh/testbed"
)

// TestPMIXRing: PMIX_Ring through Slurm's libpmi2 client, computed as a
// gather up the daemon tree and a scatter down it: every rank gets its
// position and its two neighbours' values, wrapping round, whatever the
// placement and the tree.
func TestPMIXRing(t *testing.T) {
	if _, err := os.Stat("/usr/include/slurm/pmi2.h"); err != nil {
		t.Skip("Slurm's libpmi2 is not installed (apt-get install libpmi2-0-dev)")
	}
	prog := filepath.Join(t.TempDir(), "ring")
	if out, err := exec.Command("cc", "-o", prog, "testdata/ring/ring.c", "-I/usr/include/slurm", "-lpmi2").CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
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
