package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"prsh/testbed"
)

// mpichPrograms compiles the MPI programs of testdata/mpi with MPICH's
// compiler, once. mpicc.mpich by name: with Open MPI installed too, mpicc
// is Open MPI's.
var mpichPrograms = sync.OnceValues(func() (string, error) {
	cc, err := exec.LookPath("mpicc.mpich")
	if err != nil {
		return "", errMissing
	}
	dir := filepath.Join(bin, "mpich")
	return dir, compileC(dir, "testdata/mpi/*.c", cc, []string{"-O2"}, nil)
})

// mpich returns the path of a compiled MPICH test program. Without MPICH
// (.ci/run installs it) the test is skipped; a program that does not
// compile fails it.
func mpich(t *testing.T, name string) string {
	t.Helper()
	return testProgram(t, mpichPrograms, "MPICH is not installed (apt-get install mpich libmpich-dev)", name)
}

// errMissing says a compiler or library the C test programs need is not
// installed.
var errMissing = errors.New("not installed")

// testProgram returns the path of program name from a set compiled by
// programs: skipped (saying why) when what it needs is missing, failed
// when it does not compile.
func testProgram(t testing.TB, programs func() (string, error), why, name string) string {
	t.Helper()
	dir, err := programs()
	if err == errMissing {
		t.Skip(why)
	}
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name)
}

// compileC builds each C source matching pattern into dir with cc: pre,
// then -o and the source, then post (the libraries).
func compileC(dir, pattern, cc string, pre, post []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	sources, _ := filepath.Glob(pattern)
	for _, src := range sources {
		out := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), ".c"))
		args := append(append(slices.Clone(pre), "-o", out, src), post...)
		if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", src, err, b)
		}
	}
	return nil
}

// TestMPICHWorld: an MPICH program sees one world of every rank, by slot
// and by node, on one node and on many: the job map, PMI_process_mapping
// and the fences over the daemon tree really serve it. Before the PMI
// services it ran as N singletons of size 1 and exited 0.
func TestMPICHWorld(t *testing.T) {
	hello := mpich(t, "hello")
	c := cluster(t, testbed.Config{Nodes: 8, Slots: 4})
	cases := []struct {
		name string
		args []string
		np   int
	}{
		{"1 rank", []string{"-np", "1"}, 1},
		{"4 ranks on 1 node", []string{"-H", "node001:4", "-np", "4"}, 4},
		{"32 ranks on 8 nodes by slot", []string{"-np", "32", "--spawn-degree", "2"}, 32},
		{"32 ranks on 8 nodes by node", []string{"-np", "32", "--map-by", "node", "--routed", "binomial"}, 32},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := mpirun(t, c, append(tc.args, hello)...)
			if res.status != 0 || res.stderr != "" {
				t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
			}
			sum := tc.np * (tc.np - 1) / 2
			var want []string
			for r := range tc.np {
				want = append(want, fmt.Sprintf("rank %d of %d sum %d", r, tc.np, sum))
			}
			checkLines(t, res.stdout, want)
		})
	}
}

// TestMPICHPairs: every pair of 12 ranks on 6 nodes exchanges 256 KiB
// both ways, and a thread-multiple init works: the addresses the ranks
// put in the modex are the ones their peers get.
func TestMPICHPairs(t *testing.T) {
	pairs, threads := mpich(t, "pairs"), mpich(t, "threads")
	c := cluster(t, testbed.Config{Nodes: 6, Slots: 2})
	res := mpirun(t, c, "-np", "12", "--spawn-degree", "2", pairs)
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
	}
	var want []string
	for r := range 12 {
		want = append(want, fmt.Sprintf("rank %d of 12: 0 bad words in the job", r))
	}
	checkLines(t, res.stdout, want)

	res = mpirun(t, c, "-np", "6", "--map-by", "node", threads)
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("thread multiple: exit %d, stderr:\n%s", res.status, res.stderr)
	}
	want = nil
	for r := range 6 {
		want = append(want, fmt.Sprintf("rank %d of 6 thread level 1", r))
	}
	checkLines(t, res.stdout, want)
}

// TestMPICHFailures: MPI_Abort ends every rank with the status it gave;
// a rank that leaves without MPI_Finalize ends the job instead of
// leaving the others waiting in a fence. One line of mpirun's names the
// rank and the node; nothing is left running.
func TestMPICHFailures(t *testing.T) {
	abort, nofinalize := mpich(t, "abort"), mpich(t, "nofinalize")
	c := cluster(t, testbed.Config{Nodes: 4})
	res := mpirun(t, c, abort)
	if res.status != 7 {
		t.Errorf("MPI_Abort(7): exit %d, want 7; stderr:\n%s", res.status, res.stderr)
	}
	checkMpirunLine(t, res.stderr, `^mpirun: node003: rank 2 called MPI_Abort with status 7`)

	res = mpirun(t, c, nofinalize)
	if res.status != 255 {
		t.Errorf("exit without finalize: exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkMpirunLine(t, res.stderr, `^mpirun: node002: rank 1 exited with status 0 without finalizing MPI \(PMI\)$`)
}

// checkLines checks that text holds exactly the wanted lines, in any order.
func checkLines(t *testing.T, text string, want []string) {
	t.Helper()
	got := lines(text)
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("output:\n%s\nwant (in any order):\n%s", text, strings.Join(want, "\n"))
	}
}

// checkMpirunLine checks that mpirun itself wrote exactly one line, which
// matches pattern; the ranks may write their own.
func checkMpirunLine(t *testing.T, stderr, pattern string) {
	t.Helper()
	var ours []string
	for _, l := range lines(stderr) {
		if strings.HasPrefix(l, "mpirun:") {
			ours = append(ours, l)
		}
	}
	if len(ours) != 1 || !regexp.MustCompile(pattern).MatchString(ours[0]) {
		t.Errorf("mpirun's lines: %q, want one matching %s; stderr:\n%s", ours, pattern, stderr)
	}
}
