package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"prsh/testbed"
)

func TestMain(m *testing.M) {
	testbed.MaybeRunUTSHelper()
	os.Exit(m.Run())
}

// runMain runs the CLI in-process and returns its status and output.
func runMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(append([]string{"bench"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// buildProduct builds the product's commands into dir, in the product's
// module (the lab's go.sum holds only what the lab itself imports).
func buildProduct(t *testing.T, dir string, pkgs ...string) {
	t.Helper()
	buildProductAs(t, append([]string{"-o", dir + "/"}, pkgs...)...)
}

// buildProductAs runs go build with args in the product's module.
func buildProductAs(t *testing.T, args ...string) {
	t.Helper()
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "prsh").Output()
	if err != nil {
		t.Fatalf("go list -m prsh: %v", err)
	}
	cmd := exec.Command("go", append([]string{"build"}, args...)...)
	cmd.Dir = strings.TrimSpace(string(root))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
}

// TestSweepPlot: a sweep of testbed sim, written as CSV, is drawn as a
// PNG; a file that is not such a CSV is refused.
func TestSweepPlot(t *testing.T) {
	dir := t.TempDir()
	buildProduct(t, dir, "./cmd/testbed")
	csvPath, png := filepath.Join(dir, "sweep.csv"), filepath.Join(dir, "sweep.png")
	sim := exec.Command(filepath.Join(dir, "testbed"), "sim", "--nodes", "20,40", "--spawn-degree", "2,flat,auto", "--csv", csvPath)
	if out, err := sim.CombinedOutput(); err != nil {
		t.Fatalf("testbed sim: %v\n%s", err, out)
	}
	if code, out, errOut := runMain(t, "sweep-plot", "--csv", csvPath, "--plot", png); code != 0 {
		t.Fatalf("sweep-plot: status %d, stdout %q, stderr %q", code, out, errOut)
	}
	if b, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("sweep plot: not a PNG (%v)", err)
	}
	rows, err := readSweep(csvPath)
	if err != nil || len(rows) != 6 || rows[5].nodes != 40 || degreeOfLabel(rows[5].degree) != "auto" || !rows[5].completed || rows[5].mpirunExit <= 0 {
		t.Errorf("the sweep's rows: %+v, %v; want 6, the last of auto at 40 nodes, completed", rows, err)
	}
	if code, _, errOut := runMain(t, "sweep-plot", "--csv", png, "--plot", filepath.Join(dir, "x.png")); code != exitFailure {
		t.Errorf("sweep-plot of a PNG: status %d, stderr %q; want %d", code, errOut, exitFailure)
	}
}
