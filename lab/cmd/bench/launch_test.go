package main

import (
	"bytes"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// buildLaunchers builds mpirun, orted and testbed-agent into a directory
// put first in PATH, where the bench finds them as it finds them beside
// bin/bench.
func buildLaunchers(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	buildProduct(t, dir, "./cmd/mpirun", "./cmd/orted", "./cmd/testbed-agent")
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestBenchLaunch: a tiny sweep prints a row per point and peer (a peer
// that cannot run says why), and writes the CSV and the PNG.
func TestBenchLaunch(t *testing.T) {
	buildLaunchers(t)
	dir := t.TempDir()
	csvPath, pngPath := filepath.Join(dir, "b.csv"), filepath.Join(dir, "b.png")
	code, out, errOut := runMain(t, "launch", "--nodes", "1,2", "--degrees", "1,flat,auto", "--runs", "1",
		"--peers", "--variant", "again=--log-level warn", "--csv", csvPath, "--plot", pngPath)
	if code != 0 {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "launcher") || !strings.Contains(out, "measured") {
		t.Errorf("no table header:\n%s", out)
	}
	for _, want := range []string{"prsh 2 1", "prsh 2 flat", "prsh:again 2 flat", "hydra 2 flat", "clush 1 flat"} {
		if benchRow(out, want) == "" {
			t.Errorf("no row %q:\n%s", want, out)
		}
	}
	if !hasAutoRow(out, "2") || !strings.Contains(out, "costs (load average") {
		t.Errorf("no row of δ auto at 2 nodes, or no line of the measured costs:\n%s", out)
	}
	// The idle job of 2 nodes: mpirun, each orted and its guard while the ranks sleep.
	for _, want := range []string{"mpirun ", "orted ", "guard ", "(2)"} {
		if !strings.Contains(idleLine(out), want) {
			t.Errorf("no %q in the idle costs' line %q:\n%s", want, idleLine(out), out)
		}
	}
	if row := benchRow(out, "ompi 1 flat"); !strings.Contains(row, "cannot run: ") {
		t.Errorf("Open MPI without --uts does not say why it cannot run: %q", row)
	}
	checkBenchCSV(t, csvPath, 1+2*(3*2+4))
	png, err := os.ReadFile(pngPath)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("no PNG written (%v)", err)
	}
}

func idleLine(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "idle, beside 0 busy loops") {
			return line
		}
	}
	return ""
}

func checkBenchCSV(t *testing.T, path string, rows int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != rows {
		t.Fatalf("%d CSV rows, want %d: %q", len(records), rows, records)
	}
	if got := strings.Join(records[0], ","); got != "launcher,nodes,spawn_degree,runs,wall_median_s,wall_min_s,wall_max_s,cpu_median_s,model_s,measured_over_model,load_average,failure,phase1_median_s,phase2_median_s,started_median_s,exited_median_s" {
		t.Errorf("CSV header %q", got)
	}
	for _, r := range records[1:] {
		if isOurs(r[0]) && (r[4] == "" || r[7] == "" || r[8] == "" || r[12] == "" || r[14] == "" || r[15] == "") {
			t.Errorf("our row without wall, CPU, model or milestones: %q", r)
		}
		if !isOurs(r[0]) && r[12] != "" {
			t.Errorf("a peer's row with our milestones: %q", r)
		}
	}
}

// benchRow is the table's line for "LAUNCHER NODES δ", or "".
func benchRow(out, key string) string {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && strings.Join(f[:3], " ") == key {
			return line
		}
	}
	return ""
}

// hasAutoRow tells whether the table has our row of δ auto at nodes.
func hasAutoRow(out, nodes string) bool {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "prsh" && f[1] == nodes && strings.HasPrefix(f[2], "auto(") {
			return true
		}
	}
	return false
}

// TestFitGrowth: two sizes give the line through them; a host's CPU that
// seems to fall with the job is noise, no growth; --cost-nodes is capped
// at the cluster.
func TestFitGrowth(t *testing.T) {
	at0, slope := fitGrowth([]hostCPU{{16, 13 * time.Millisecond}, {128, 13*time.Millisecond + 896*time.Microsecond}})
	if math.Abs(slope-8e-6) > 1e-12 || math.Abs(at0-(0.013-16*8e-6)) > 1e-12 {
		t.Errorf("fit %g + %g n, want 0.012872 + 8e-06 n", at0, slope)
	}
	if at0, slope = fitGrowth([]hostCPU{{16, 13 * time.Millisecond}, {128, 12 * time.Millisecond}}); slope != 0 || math.Abs(at0-0.0125) > 1e-12 {
		t.Errorf("falling: fit %g + %g n, want the mean and no slope", at0, slope)
	}
	sizes, err := costSizes("128,16", 64)
	if err != nil || !slices.Equal(sizes, []int{16, 64}) {
		t.Errorf("sizes %v, %v", sizes, err)
	}
	if sizes, _ = costSizes("16,128", 16); !slices.Equal(sizes, []int{16}) {
		t.Errorf("one size on 16 nodes: %v", sizes)
	}
	if sizes, _ = costSizes("16,max", 512); !slices.Equal(sizes, []int{16, 512}) {
		t.Errorf("costSizes(16,max) on 512 nodes = %v, want [16 512]", sizes)
	}
}

// TestPickPeers: --peer keeps the peers it names, in its order, and
// refuses a name that is no peer's; without it every peer runs.
func TestPickPeers(t *testing.T) {
	all := peerLaunchers("/agent", false)
	got, err := pickPeers(all, []string{"pdsh", "hydra"})
	if err != nil || len(got) != 2 || got[0].name != "pdsh" || got[1].name != "hydra" {
		t.Errorf("pickPeers(pdsh, hydra) = %v, %v", got, err)
	}
	if got, _ := pickPeers(all, nil); len(got) != len(all) {
		t.Errorf("no --peer: %d peers, want all %d", len(got), len(all))
	}
	if _, err := pickPeers(all, []string{"srun"}); err == nil || err.Error() != `--peer "srun": not one of hydra, ompi, pdsh, clush` {
		t.Errorf("pickPeers(srun) error %v", err)
	}
}
