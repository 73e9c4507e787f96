package main

// What bench slurm runs in an allocation and how it reads and reports
// the results: the launches as a driver script, the script's result
// lines, and the table, CSV and plot series. Nothing here starts a
// process.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// The programs every launcher starts, one rank per node: /bin/true, and
// MPI_Init, MPI_Barrier, MPI_Finalize built with MPICH and with Open MPI.
const (
	progTrue  = "true"
	progMPICH = "barrier-mpich"
	progOMPI  = "barrier-ompi"
)

var slurmPrograms = []string{progTrue, progMPICH, progOMPI}

// slurmCase is one launcher starting one program on every node of an
// allocation.
type slurmCase struct {
	launcher, program string
	mpi               []string // srun's --mpi
	argv              []string
	unavailable       string // why it is not run; "" if it is
}

// slurmCases are the launches of an allocation of n nodes: our mpirun
// (as it starts its daemons by default, and along a tree of degree 2 over
// one srun per edge), Open MPI's mpirun, Hydra's mpiexec and srun alone,
// each with every program its MPI library can run (srun: PMI-2 for MPICH,
// PMIx for Open MPI, as Debian builds them), then Hydra's Go floors.
// programs maps progMPICH and progOMPI to their builds; a missing one
// makes its cases unavailable.
func slurmCases(mpirun string, programs map[string]string, floors []goFloorLauncher, n int) []slurmCase {
	np := strconv.Itoa(n)
	type launcher struct {
		name     string
		argv     []string
		programs []string
		mpi      map[string][]string // srun's --mpi per program
	}
	launchers := []launcher{
		{name: "prsh", argv: []string{mpirun, "-np", np}, programs: slurmPrograms},
		{name: "prsh δ=2", argv: []string{mpirun, "--spawn-degree", "2", "-np", np}, programs: slurmPrograms},
		{name: "ompi", argv: []string{"mpirun.openmpi", "-np", np}, programs: []string{progTrue, progOMPI}},
		{name: "hydra", argv: []string{"mpiexec.mpich", "-n", np}, programs: []string{progTrue, progMPICH}},
		{name: "srun", argv: []string{"srun", "-n", np}, programs: slurmPrograms,
			mpi: map[string][]string{progMPICH: {"--mpi=pmi2"}, progOMPI: {"--mpi=pmix"}}},
	}
	for _, f := range floors {
		launchers = append(launchers, launcher{name: f.name, argv: f.command("-n", np), programs: goFloorPrograms})
	}
	var cases []slurmCase
	for _, prog := range slurmPrograms {
		path, built := programPath(programs, prog)
		for _, l := range launchers {
			if !slices.Contains(l.programs, prog) {
				continue
			}
			c := slurmCase{launcher: l.name, program: prog, mpi: l.mpi[prog]}
			c.argv = append(append(slices.Clone(l.argv), c.mpi...), path)
			if prog != progTrue {
				c.argv = append(c.argv, np) // the world's size it checks
			}
			if !built {
				c.unavailable = prog + " was not built"
			}
			cases = append(cases, c)
		}
	}
	return cases
}

// programPath is where prog is, and whether it was built: programs holds
// the barrier's builds; /bin/true is always there.
func programPath(programs map[string]string, prog string) (string, bool) {
	if prog == progTrue {
		return "/bin/true", true
	}
	path, built := programs[prog]
	return path, built
}

// label names a case in the table and the plot: srun with its --mpi.
func (c slurmCase) label() string {
	return strings.Join(append([]string{c.launcher}, c.mpi...), " ")
}

// The driver's environment: Open MPI finds no network but loopback in the
// cluster's namespace, and refuses root unless told.
var driverEnv = []string{
	"OMPI_MCA_oob_tcp_if_include=lo", "OMPI_MCA_btl_tcp_if_include=lo",
	"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
}

// driverScript is the shell script salloc runs in the allocation: every
// available case runs times, the order rotated by one case each
// repetition so that no launcher always follows the same one. Each run's
// stderr goes to errDir/CASE.REP; after it the script prints a result line
// (resultPrefix CASE REP STATUS NANOSECONDS) and waits for a line on its
// stdin: bench's go-ahead once the run's processes are gone.
func driverScript(cases []slurmCase, runs int, timeout time.Duration, errDir string) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# bench slurm's driver: run it as salloc -N NODES --ntasks-per-node=1 sh THIS\n")
	fmt.Fprintf(&b, "export %s\n", strings.Join(driverEnv, " "))
	fmt.Fprintf(&b, `run() {
	c=$1 r=$2
	shift 2
	t0=$(date +%%s%%N)
	timeout -k 10 %d "$@" </dev/null >/dev/null 2>%s/$c.$r
	s=$?
	t1=$(date +%%s%%N)
	echo "%s $c $r $s $((t1 - t0))"
	read ok
}
`, int(timeout.Seconds()), shellQuote(errDir), resultPrefix)
	var available []int
	for i, c := range cases {
		if c.unavailable == "" {
			available = append(available, i)
		}
	}
	for rep := range runs {
		for k := range available {
			i := available[(k+rep)%len(available)]
			fmt.Fprintf(&b, "run %d %d %s\n", i, rep, shellJoin(cases[i].argv))
		}
	}
	return b.String()
}

const resultPrefix = "bench-result"

func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// runResult is one run of a case, from the driver's result line.
type runResult struct {
	caseIndex, rep, status int
	wall                   float64 // seconds
	failure                string  // why the run counts as failed; "" if it does not
}

// parseResultLine reads a driver's result line; ok is false for any other
// line (a launcher's or salloc's).
func parseResultLine(line string) (r runResult, ok bool, err error) {
	f := strings.Fields(line)
	if len(f) == 0 || f[0] != resultPrefix {
		return r, false, nil
	}
	if len(f) != 5 {
		return r, true, fmt.Errorf("driver: %q: want %s CASE REP STATUS NANOSECONDS", line, resultPrefix)
	}
	var n [4]int64
	for i, s := range f[1:] {
		if n[i], err = strconv.ParseInt(s, 10, 64); err != nil || n[i] < 0 {
			return r, true, fmt.Errorf("driver: %q: field %d is no count", line, i+2)
		}
	}
	r = runResult{caseIndex: int(n[0]), rep: int(n[1]), status: int(n[2]), wall: float64(n[3]) / 1e9}
	return r, true, nil
}

// slurmPoint is every run of one case at one size.
type slurmPoint struct {
	slurmCase
	nodes    int
	walls    []float64 // the successful runs', in seconds
	failures []string  // the failed runs', why
}

// summarize gathers the runs of an allocation's cases.
func summarize(cases []slurmCase, nodes int, results []runResult) []slurmPoint {
	points := make([]slurmPoint, len(cases))
	for i, c := range cases {
		points[i] = slurmPoint{slurmCase: c, nodes: nodes}
	}
	for _, r := range results {
		p := &points[r.caseIndex]
		if r.failure != "" {
			p.failures = append(p.failures, r.failure)
		} else {
			p.walls = append(p.walls, r.wall)
		}
	}
	return points
}

// cell is the point's entry in the table: median and spread, the failed
// runs' count with the footnote that says why (note adds it).
func (p slurmPoint) cell(note func(string) int) string {
	if p.unavailable != "" {
		return fmt.Sprintf("not run [%d]", note(p.unavailable))
	}
	var s string
	if len(p.walls) > 0 {
		s = fmt.Sprintf("%.2f (%.2f–%.2f)", median(p.walls), slices.Min(p.walls), slices.Max(p.walls))
	}
	if len(p.failures) > 0 {
		runs := len(p.walls) + len(p.failures)
		s = strings.TrimSpace(fmt.Sprintf("%s %d/%d failed [%d]", s, len(p.failures), runs, note(p.failures[0])))
	}
	return s
}

// markdownTable has a row per launcher and program, a column per size:
// the median wall seconds and (min–max) of the successful runs, failures
// counted, with footnotes that say why (the first failure of each cell).
func markdownTable(points []slurmPoint) string {
	var sizes []int
	type rowKey struct{ program, label string }
	var rows []rowKey
	cells := map[rowKey]map[int]slurmPoint{}
	for _, p := range points {
		k := rowKey{p.program, p.label()}
		if cells[k] == nil {
			rows = append(rows, k)
			cells[k] = map[int]slurmPoint{}
		}
		cells[k][p.nodes] = p
		if !slices.Contains(sizes, p.nodes) {
			sizes = append(sizes, p.nodes)
		}
	}
	slices.Sort(sizes)
	var notes []string
	note := func(why string) int {
		if i := slices.Index(notes, why); i >= 0 {
			return i + 1
		}
		notes = append(notes, why)
		return len(notes)
	}
	var b strings.Builder
	b.WriteString("| program | launcher |")
	for _, n := range sizes {
		fmt.Fprintf(&b, " %d nodes |", n)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(sizes)) + "\n")
	for _, k := range rows {
		fmt.Fprintf(&b, "| %s | %s |", k.program, k.label)
		for _, n := range sizes {
			p, ok := cells[k][n]
			if !ok {
				b.WriteString(" |")
				continue
			}
			fmt.Fprintf(&b, " %s |", p.cell(note))
		}
		b.WriteString("\n")
	}
	for i, why := range notes {
		fmt.Fprintf(&b, "\n[%d] %s\n", i+1, why)
	}
	return b.String()
}

// slurmRecords are the CSV rows, one per case and size, with every
// successful run's wall seconds.
func slurmRecords(points []slurmPoint) [][]string {
	records := [][]string{{"launcher", "program", "nodes", "runs", "failed",
		"wall_median_s", "wall_min_s", "wall_max_s", "walls_s", "failure"}}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }
	for _, p := range points {
		r := []string{p.label(), p.program, strconv.Itoa(p.nodes), strconv.Itoa(len(p.walls) + len(p.failures)),
			strconv.Itoa(len(p.failures)), "", "", "", "", p.unavailable}
		if len(p.walls) > 0 {
			var walls []string
			for _, w := range p.walls {
				walls = append(walls, f(w))
			}
			r[5], r[6], r[7], r[8] = f(median(p.walls)), f(slices.Min(p.walls)), f(slices.Max(p.walls)), strings.Join(walls, " ")
		}
		if len(p.failures) > 0 {
			r[9] = p.failures[0]
		}
		records = append(records, r)
	}
	return records
}

// programDashes draw each program's lines alike: /bin/true solid, the
// MPICH barrier dashed, the Open MPI one dotted.
var programDashes = map[string][]vg.Length{
	progMPICH: {vg.Points(6), vg.Points(3)},
	progOMPI:  {vg.Points(1.5), vg.Points(2.5)},
}

// slurmSeries is a line per launcher and program of the medians of
// successful runs, a colour per launcher and a dash per program.
func slurmSeries(points []slurmPoint) []series {
	var lines []series
	index := map[string]int{}
	var launchers []string
	for _, p := range points {
		if len(p.walls) == 0 {
			continue
		}
		name := p.label() + ", " + p.program
		i, ok := index[name]
		if !ok {
			if !slices.Contains(launchers, p.launcher) {
				launchers = append(launchers, p.launcher)
			}
			i = len(lines)
			index[name] = i
			lines = append(lines, series{name: name, color: slices.Index(launchers, p.launcher), dashes: programDashes[p.program]})
		}
		lines[i].points = append(lines[i].points, plotter.XY{X: float64(p.nodes), Y: median(p.walls)})
	}
	return lines
}
