package main

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestOneNodeCases: /bin/true runs under all three launchers, each
// barrier build under ours and its own MPI's launcher, with the world's
// size it checks; a build that is missing has no case.
func TestOneNodeCases(t *testing.T) {
	cases := oneNodeCases("/x/mpirun", map[string]string{progMPICH: "/b/mpich"}, 8)
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
	if len(tree) == 0 || tree[0] != os.Getpid() {
		t.Fatalf("tree %v does not start with this process", tree)
	}
	if pssOf(os.Getpid()) <= 0 {
		t.Errorf("no PSS for this process")
	}
	if pssOf(1<<30) != 0 {
		t.Errorf("a PSS for a process that is not there")
	}
}
