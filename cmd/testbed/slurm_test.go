package main

import (
	"slices"
	"strings"
	"testing"

	"prsh/testbed/slurm"
)

func skipWithoutSlurm(t *testing.T) {
	t.Helper()
	if err := slurm.Available(); err != nil {
		t.Skipf("%v", err)
	}
}

func TestSlurmRunsCommand(t *testing.T) {
	skipWithoutSlurm(t)
	code, out, errOut := runMain(t, "slurm", "--nodes", "3", "--cpus", "2", "--", "salloc", "-N", "3", "srun", "hostname")
	if code != 0 {
		t.Fatalf("status %d, stderr:\n%s", code, errOut)
	}
	lines := strings.Fields(out)
	slices.Sort(lines)
	if want := []string{"node1", "node2", "node3"}; !slices.Equal(lines, want) {
		t.Errorf("printed %q, want %q", lines, want)
	}
}

func TestSlurmExitStatus(t *testing.T) {
	skipWithoutSlurm(t)
	if code, _, errOut := runMain(t, "slurm", "--nodes", "1", "--", "sh", "-c", "exit 3"); code != 3 {
		t.Errorf("status %d, want 3; stderr:\n%s", code, errOut)
	}
}

// A step left running when CMD exits is reported and killed: status 125.
func TestSlurmLeftover(t *testing.T) {
	skipWithoutSlurm(t)
	// --dir: the cluster keeps its logs after leftovers; let the test remove them.
	code, _, errOut := runMain(t, "slurm", "--nodes", "2", "--dir", t.TempDir(), "--", "sh", "-c", "srun -N2 sleep 100 >/dev/null 2>&1 & sleep 1")
	if code != exitFailure || !strings.Contains(errOut, "left running") || !strings.Contains(errOut, "sleep 100") {
		t.Errorf("status %d, want %d with the sleeps reported; stderr:\n%s", code, exitFailure, errOut)
	}
}
