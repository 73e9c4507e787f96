package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"prsh/testbed"
)

// TestGoClient: a Go program that uses every call of the Go PMI client
// (modex/pmi/client/example: put, fence, get, allgather, iallgather and
// ifence with wait, ring, finalize, abort) under the real mpirun and
// orteds: the collectives run over the daemon tree, whatever the
// placement and the tree, and each rank prints what it checked.
func TestGoClient(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "goclient")
	args := []string{"build", "-o", prog}
	if raceEnabled { // the client's own races fail the test too (GORACE log_path)
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, "prsh/modex/pmi/client/example")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	c := cluster(t, testbed.Config{Nodes: 4, Slots: 2})
	for _, args := range [][]string{
		{"-np", "8", "--spawn-degree", "2"},
		{"-np", "7", "--map-by", "node", "--routed", "binomial"},
		{"-np", "5", "--routed", "direct"},
		{"-np", "1"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			res := mpirun(t, c, append(args, prog)...)
			if res.status != 0 || res.stderr != "" {
				t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
			}
			var np int
			fmt.Sscan(args[1], &np)
			var want []string
			for r := range np {
				want = append(want, fmt.Sprintf("rank %d of %d: kvs ok, allgather ok, iallgather ok, ifence ok, "+
					"ring %d of %d left v%d right v%d, finalize ok", r, np, r, np, (r+np-1)%np, (r+1)%np))
			}
			checkLines(t, res.stdout, want)
		})
	}
	t.Run("abort", func(t *testing.T) {
		res := mpirun(t, c, "-np", "6", "--map-by", "node", prog, "abort")
		t.Logf("stderr:\n%s", res.stderr)
		if res.status != 3 {
			t.Errorf("exit %d, want 3; stderr:\n%s", res.status, res.stderr)
		}
		if !regexp.MustCompile(`(?m)^mpirun: node00\d: rank 5 called MPI_Abort with status 3`).MatchString(res.stderr) {
			t.Errorf("no abort line for rank 5 in stderr:\n%s", res.stderr)
		}
		if res.stdout != "" {
			t.Errorf("stdout after an abort:\n%s", res.stdout)
		}
	})
}
