package main

import (
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"prsh/testbed/slurm"
)

// TestSlurmCases: every launcher runs /bin/true, and each MPI build only
// under the launchers whose PMI it speaks, srun with the matching --mpi;
// a program that was not built is not run.
func TestSlurmCases(t *testing.T) {
	cases := slurmCases("/bin/mpirun", map[string]string{progMPICH: "/d/barrier-mpich"}, nil, 8)
	var got []string
	for _, c := range cases {
		got = append(got, c.program+": "+c.label()+": "+strings.Join(c.argv, " ")+": "+c.unavailable)
	}
	want := []string{
		"true: prsh: /bin/mpirun -np 8 /bin/true: ",
		"true: prsh δ=2: /bin/mpirun --spawn-degree 2 -np 8 /bin/true: ",
		"true: ompi: mpirun.openmpi -np 8 /bin/true: ",
		"true: hydra: mpiexec.mpich -n 8 /bin/true: ",
		"true: srun: srun -n 8 /bin/true: ",
		"barrier-mpich: prsh: /bin/mpirun -np 8 /d/barrier-mpich 8: ",
		"barrier-mpich: prsh δ=2: /bin/mpirun --spawn-degree 2 -np 8 /d/barrier-mpich 8: ",
		"barrier-mpich: hydra: mpiexec.mpich -n 8 /d/barrier-mpich 8: ",
		"barrier-mpich: srun --mpi=pmi2: srun -n 8 --mpi=pmi2 /d/barrier-mpich 8: ",
		"barrier-ompi: prsh: /bin/mpirun -np 8  8: barrier-ompi was not built",
		"barrier-ompi: prsh δ=2: /bin/mpirun --spawn-degree 2 -np 8  8: barrier-ompi was not built",
		"barrier-ompi: ompi: mpirun.openmpi -np 8  8: barrier-ompi was not built",
		"barrier-ompi: srun --mpi=pmix: srun -n 8 --mpi=pmix  8: barrier-ompi was not built",
	}
	if !slices.Equal(got, want) {
		t.Errorf("cases:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDriverScript: the script runs every available case once per
// repetition, the order rotated by one each time, and reports each run
// on a line parseResultLine reads: run with stand-ins for the launchers
// (true and false), it reports their status.
func TestDriverScript(t *testing.T) {
	dir := t.TempDir()
	cases := []slurmCase{
		{launcher: "a", argv: []string{"true", "it's"}},
		{launcher: "b", argv: []string{"false"}},
		{launcher: "c", argv: []string{"true"}, unavailable: "missing"},
		{launcher: "d", argv: []string{"sh", "-c", "echo oops >&2; exit 7"}},
	}
	script := driverScript(cases, 2, time.Minute, dir)
	var order []string
	for _, line := range strings.Split(script, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "run" {
			order = append(order, f[1]+"."+f[2])
		}
	}
	if want := []string{"0.0", "1.0", "3.0", "1.1", "3.1", "0.1"}; !slices.Equal(order, want) {
		t.Errorf("runs (case.rep) %v, want %v", order, want)
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Stdin = strings.NewReader("\n\n\n\n\n\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("driver: %v\n%s", err, out)
	}
	var status []int
	for _, line := range strings.Split(string(out), "\n") {
		r, ok, err := parseResultLine(line)
		if err != nil || !ok && line != "" {
			t.Errorf("%q: ok %v, err %v", line, ok, err)
		}
		if ok && (r.wall <= 0 || r.wall > 60) {
			t.Errorf("%q: wall %v s", line, r.wall)
		}
		if ok {
			status = append(status, r.status)
		}
	}
	if want := []int{0, 1, 7, 1, 7, 0}; !slices.Equal(status, want) {
		t.Errorf("statuses %v, want %v", status, want)
	}
	if text, err := os.ReadFile(filepath.Join(dir, "3.1")); err != nil || string(text) != "oops\n" {
		t.Errorf("stderr of case 3, repetition 1: %q, %v", text, err)
	}
}

func TestParseResultLine(t *testing.T) {
	r, ok, err := parseResultLine("bench-result 3 2 1 1500000000")
	if !ok || err != nil || r != (runResult{caseIndex: 3, rep: 2, status: 1, wall: 1.5}) {
		t.Errorf("got %+v, %v, %v", r, ok, err)
	}
	if _, ok, err := parseResultLine("srun: error: node3: task 2: Exited"); ok || err != nil {
		t.Errorf("another line: ok %v, err %v; want neither", ok, err)
	}
	for _, bad := range []string{"bench-result 3 2 1", "bench-result 3 2 x 15", "bench-result -1 0 0 5"} {
		if _, ok, err := parseResultLine(bad); !ok || err == nil {
			t.Errorf("%q: ok %v, err %v; want an error", bad, ok, err)
		}
	}
}

// TestMarkdownTable: a row per launcher and program, a column per size;
// medians with their spread, failures counted with a footnote per cause,
// and a case not run says why.
func TestMarkdownTable(t *testing.T) {
	cases := []slurmCase{
		{launcher: "prsh", program: progTrue},
		{launcher: "srun", program: progMPICH, mpi: []string{"--mpi=pmi2"}},
		{launcher: "hydra", program: progMPICH, unavailable: "mpiexec.mpich is not installed"},
	}
	at8 := summarize(cases, 8, []runResult{
		{caseIndex: 0, wall: 0.5}, {caseIndex: 0, rep: 1, wall: 0.7}, {caseIndex: 0, rep: 2, wall: 0.6},
		{caseIndex: 1, wall: 1.25}, {caseIndex: 1, rep: 1, status: 1, failure: "exit 1: boom"},
	})
	at32 := summarize(cases, 32, []runResult{
		{caseIndex: 0, wall: 2}, {caseIndex: 1, status: 124, failure: "no end after --timeout 3m0s"},
	})
	got := markdownTable(append(at32, at8...))
	want := `| program | launcher | 8 nodes | 32 nodes |
|---|---|---|---|
| true | prsh | 0.60 (0.50–0.70) | 2.00 (2.00–2.00) |
| barrier-mpich | srun --mpi=pmi2 | 1.25 (1.25–1.25) 1/2 failed [1] | 1/1 failed [2] |
| barrier-mpich | hydra | not run [3] | not run [3] |

[1] exit 1: boom

[2] no end after --timeout 3m0s

[3] mpiexec.mpich is not installed
`
	if got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
	records := slurmRecords(at8)
	if len(records) != 4 || strings.Join(records[1], ",") != "prsh,true,8,3,0,0.6000,0.5000,0.7000,0.5000 0.7000 0.6000," ||
		strings.Join(records[2], ",") != "srun --mpi=pmi2,barrier-mpich,8,2,1,1.2500,1.2500,1.2500,1.2500,exit 1: boom" {
		t.Errorf("CSV records: %q", records)
	}
	lines := slurmSeries(append(at8, at32...))
	if len(lines) != 2 || lines[0].name != "prsh, true" || len(lines[0].points) != 2 || lines[1].dashes == nil || lines[1].color == lines[0].color {
		t.Errorf("plot series: %+v", lines)
	}
}

// TestBenchSlurm: on a Slurm of 2 nodes, one repetition prints a table
// with a row per launcher and program, our mpirun's /bin/true measured,
// and writes the CSV and the PNG.
func TestBenchSlurm(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a Slurm cluster needs root (private namespaces)")
	}
	if err := slurm.Available(); err != nil {
		t.Skipf("no Slurm on this machine: %v", err)
	}
	buildLaunchers(t)
	dir := t.TempDir()
	csvPath, pngPath := filepath.Join(dir, "s.csv"), filepath.Join(dir, "s.png")
	code, out, errOut := runMain(t, "slurm", "--nodes", "2", "--runs", "1", "--timeout", "1m", "--csv", csvPath, "--plot", pngPath)
	if code != 0 {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !regexp.MustCompile(`(?m)^\| true \| prsh \| \d+\.\d\d \(`).MatchString(out) {
		t.Errorf("no time of our mpirun with /bin/true:\n%s", out)
	}
	records, err := csv.NewReader(strings.NewReader(readFile(t, csvPath))).ReadAll()
	if err != nil || len(records) != 14 {
		t.Errorf("CSV: %d records, %v; want a header and 13 rows", len(records), err)
	}
	if !strings.HasPrefix(readFile(t, pngPath), "\x89PNG") {
		t.Errorf("%s is not a PNG", pngPath)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
