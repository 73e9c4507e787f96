package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchDVM: a tiny run prints the fork limit and a row for a fresh
// mpirun, the DVM and each peer, and writes the table; the DVM is
// stopped with nothing left (a row's failure would say so).
func TestBenchDVM(t *testing.T) {
	buildLaunchers(t)
	table := filepath.Join(t.TempDir(), "dvm.md")
	code, out, errOut := runMain(t, "dvm", "--nodes", "2", "--jobs", "5", "--throughput", "20", "--at-once", "4",
		"--fresh-jobs", "2", "--peers", "--table", table)
	if code != 0 {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "forks, execs and reaps") {
		t.Errorf("no line of the fork limit:\n%s", out)
	}
	for _, want := range []string{"| prsh, fresh | 2, 2 |", "| prsh, DVM | 5, 20 |", "| hydra, fresh |", "| ompi, fresh |"} {
		if !strings.Contains(out, want) {
			t.Errorf("no row %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "pdsh") || strings.Contains(out, "prsh, DVM: ") {
		t.Errorf("a row of a launcher that runs no MPI job, or the DVM's failure:\n%s", out)
	}
	if b, err := os.ReadFile(table); err != nil || string(b) != out {
		t.Errorf("the table file holds %q (%v), the output %q", b, err, out)
	}
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
