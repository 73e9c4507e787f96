package e2e

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"prsh/testbed"
)

// fenceLeftRuns are the trees the fence-left tests run on, 3 nodes of one
// slot (each rank alone on its node): mpirun's children all, where the
// node of the rank that leaves has no rank in the fence below it, and a
// chain, where it relays the others' parts.
var fenceLeftRuns = [][]string{{"-np", "3"}, {"-np", "3", "--spawn-degree", "1"}}

// TestPMIFenceRankFinalized: rank 0, alone on its node, finalises PMI
// and exits 0 at once while ranks 1 and 2, on other nodes, enter a fence
// over the whole job (the Go PMI-2 client). The fence fails for them,
// naming rank 0, instead of hanging until Ctrl-C; they finalise and the
// job ends 0 with nothing left running. The same for an allgather and a
// ring (the seeds' PMI extensions), which must not answer without rank
// 0's value either.
func TestPMIFenceRankFinalized(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "fenceleft")
	if out, err := exec.Command("go", "build", "-o", prog, "./testdata/fenceleft").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 1})
	for _, op := range []string{"fence", "allgather", "ring"} {
		for _, args := range fenceLeftRuns {
			res := mpirun(t, c, append(args, prog, op)...)
			if res.status != 0 || res.stderr != "" {
				t.Fatalf("%s %v: exit %d, stderr:\n%s", op, args, res.status, res.stderr)
			}
			lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
			want := regexp.MustCompile(`^rank [12]: ` + op + ` failed: .*rank\(s\) 0 finalized or exited without entering it`)
			if len(lines) != 2 || !want.MatchString(lines[0]) || !want.MatchString(lines[1]) {
				t.Errorf("%s %v: stdout:\n%s\nwant ranks 1 and 2 each: %v", op, args, res.stdout, want)
			}
		}
	}
}

// TestPMIxFenceRankFinalized: the same with Open MPI's PMIx: rank 1,
// alone on its node, calls PMIx_Finalize and exits 0 while ranks 0 and 2
// call PMIx_Fence over the whole namespace, which returns PMIX_ERROR
// rather than hang; they finalise and the job ends 0, in silence.
func TestPMIxFenceRankFinalized(t *testing.T) {
	prog := openMPI(t, "fence")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 1, UTS: true})
	for _, args := range fenceLeftRuns {
		res := mpirun(t, c, append(args, prog, "finalize")...)
		if res.status != 0 || res.stderr != "" {
			t.Fatalf("%v: exit %d, stderr:\n%s", args, res.status, res.stderr)
		}
		checkLines(t, res.stdout, []string{"rank 0 left the fence: ERROR", "rank 2 left the fence: ERROR"})
	}
}
