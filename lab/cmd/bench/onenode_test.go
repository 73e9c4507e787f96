package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOneNodeCases: /bin/true runs under all three launchers, each
// barrier build under ours and its own MPI's launcher, with the world's
// size it checks; a build that is missing has no case.
func TestOneNodeCases(t *testing.T) {
	cases := oneNodeCases("/x/mpirun", map[string]string{progMPICH: "/b/mpich"}, nil, 8)
	var got []string
	for _, c := range cases {
		got = append(got, c.program+" "+c.launcher+": "+strings.Join(c.argv, " "))
	}
	want := []string{
		"true prsh: /x/mpirun -H localhost:8 -np 8 /bin/true",
		"true hydra: mpiexec.hydra -n 8 /bin/true",
		"true ompi: mpirun.openmpi --oversubscribe -np 8 /bin/true",
		"barrier-mpich prsh: /x/mpirun -H localhost:8 -np 8 /b/mpich 8",
		"barrier-mpich hydra: mpiexec.hydra -n 8 /b/mpich 8",
	}
	if !slices.Equal(got, want) {
		t.Errorf("cases:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestProcessTreePSS: the tree of this test holds the test itself, with
// a PSS; a process that is gone has none.
func TestProcessTreePSS(t *testing.T) {
	tree := processTree(os.Getpid())
	if len(tree) == 0 || tree[0].pid != os.Getpid() {
		t.Fatalf("tree %v does not start with this process", tree)
	}
	if pssOf(os.Getpid()) <= 0 {
		t.Errorf("no PSS for this process")
	}
	if pssOf(1<<30) != 0 {
		t.Errorf("a PSS for a process that is not there")
	}
	if !sharesMemory(os.Getpid(), os.Getpid()) || sharesMemory(os.Getpid(), os.Getppid()) {
		t.Errorf("kcmp: this process shares memory with itself and not with its parent")
	}
}

// TestBenchOneNodeOnNodes: with --nodes 2, a tiny run puts N ranks on
// each testbed node under every launcher through testbed-agent: a row
// for each of /bin/true and the barriers, "2 × 1", none failed.
func TestBenchOneNodeOnNodes(t *testing.T) {
	buildLaunchers(t)
	if !buildOrtedPMIx(t) {
		t.Skip("no PMIx library (apt-get install libpmix-dev): Open MPI's barrier cannot run under ours")
	}
	table := filepath.Join(t.TempDir(), "onenode.md")
	code, out, errOut := runMain(t, "onenode", "--nodes", "2", "--ranks", "1", "--runs", "1", "--uts", "--table", table)
	if code != 0 {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"| 2 × 1 | true | prsh |", "| 2 × 1 | true | hydra |", "| 2 × 1 | true | ompi |",
		"| 2 × 1 | barrier-mpich | prsh |", "| 2 × 1 | barrier-mpich | hydra |",
		"| 2 × 1 | barrier-ompi | prsh |", "| 2 × 1 | barrier-ompi | ompi |"} {
		if !strings.Contains(out, want) {
			t.Errorf("no row %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[2:] {
		if !strings.HasSuffix(line, "|  |") {
			t.Errorf("a failed row: %s", line)
		}
	}
}
