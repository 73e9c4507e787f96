package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchDVM: a tiny run prints the fork limit and a row for a fresh
// mpirun, the DVM and each peer, of /bin/true and of each MPI's
// barrier, the ratios of the goals, and writes the table; the DVM is
// stopped with nothing left (a row's failure would say so).
func TestBenchDVM(t *testing.T) {
	buildLaunchers(t)
	if !buildOrtedPMIx(t) {
		t.Skip("no PMIx library (apt-get install libpmix-dev): Open MPI's barrier cannot run under ours")
	}
	table := filepath.Join(t.TempDir(), "dvm.md")
	code, out, errOut := runMain(t, "dvm", "--nodes", "2", "--jobs", "3", "--throughput", "8", "--at-once", "4",
		"--fresh-jobs", "1", "--peers", "--uts", "--table", table)
	if code != 0 {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "forks, execs and reaps") {
		t.Errorf("no line of the fork limit:\n%s", out)
	}
	for _, want := range []string{"| prsh, fresh | true | 1, 1 |", "| prsh, DVM | true | 3, 8 |", "| hydra, fresh | true |", "| ompi, fresh | true |",
		"| prsh, fresh | barrier-mpich |", "| prsh, DVM | barrier-mpich | 3, 8 |", "| hydra, fresh | barrier-mpich |",
		"| prsh, DVM | barrier-ompi | 3, 8 |", "| ompi, fresh | barrier-ompi |", "true: a DVM job is "} {
		if !strings.Contains(out, want) {
			t.Errorf("no row %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "pdsh") || strings.Contains(out, "| hydra, fresh | barrier-ompi") || strings.Contains(out, "failed |") ||
		strings.Contains(out, "prsh, DVM, ") {
		t.Errorf("a row of a launcher that cannot run the program, or a failure:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if cells := strings.Split(l, "|"); strings.HasPrefix(l, "| prsh, DVM |") && (len(cells) != 14 || strings.TrimSpace(cells[10]) == "") {
			t.Errorf("a DVM row without one client's copies a second (--cc): %q", l)
		}
	}
	if b, err := os.ReadFile(table); err != nil || string(b) != out {
		t.Errorf("the table file holds %q (%v), the output %q", b, err, out)
	}
}

// buildOrtedPMIx builds orted-pmix beside the orted on PATH, as make bin
// does where the PMIx library is installed; false where it is not.
func buildOrtedPMIx(t *testing.T) bool {
	t.Helper()
	if exec.Command("pkg-config", "--exists", "pmix").Run() != nil {
		return false
	}
	orted, err := exec.LookPath("orted")
	if err != nil {
		t.Fatal(err)
	}
	buildProductAs(t, "-tags", "pmix", "-o", orted+"-pmix", "./cmd/orted")
	return true
}

// TestPercentile: the nearest rank, from the smallest to the largest.
func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	for p, want := range map[float64]float64{20: 1, 50: 3, 99: 5, 100: 5} {
		if got := percentile(xs, p); got != want {
			t.Errorf("percentile %v: %v, want %v", p, got, want)
		}
	}
}
