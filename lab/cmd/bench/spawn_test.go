package main

import (
	"strings"
	"testing"
)

// TestBenchSpawn: a tiny run times a spawn of 2 children under our
// mpirun and Open MPI's, each row with its run and no failure.
func TestBenchSpawn(t *testing.T) {
	buildLaunchers(t)
	if !buildOrtedPMIx(t) {
		t.Skip("no PMIx library (apt-get install libpmix-dev): Open MPI's MPI_Comm_spawn cannot run under ours")
	}
	code, out, errOut := runMain(t, "spawn", "--nodes", "2", "--children", "2", "--runs", "1", "--uts")
	if code != 0 {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"| 2 | prsh | 1 | ", "| 2 | ompi | 1 | "} {
		if !strings.Contains(out, want) {
			t.Errorf("no row %q (a failed run has no measure):\n%s\nstderr:\n%s", want, out, errOut)
		}
	}
}

func TestSpawnSizes(t *testing.T) {
	if got, err := parseSizes("4, 16,64"); err != nil || len(got) != 3 || got[1] != 16 {
		t.Errorf("parseSizes(\"4, 16,64\") = %v, %v", got, err)
	}
	for _, bad := range []string{"", "4,x", "0", "-2"} {
		if _, err := parseSizes(bad); err == nil {
			t.Errorf("parseSizes(%q): no error", bad)
		}
	}
}
