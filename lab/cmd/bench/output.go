package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
	"gonum.org/v1/plot/plotter"

	"prsh/daemon/protocol"
	"prsh/daemon/protocol/sim"
	"prsh/testbed"
)

// printBenchHeader: besides the wall and CPU of the whole launch, our
// rows say when (median, from mpirun's start) every daemon had called
// back (phase 1), every daemon had every address (phase 2) and every
// rank had started: where the time of a launch goes.
func printBenchHeader(w io.Writer) {
	fmt.Fprintf(w, "%-12s %6s %8s %9s %9s %9s %9s %9s %8s %7s %7s %7s %6s\n",
		"launcher", "nodes", "δ", "median", "min", "max", "cpu", "model", "measured", "phase1", "phase2", "started", "load")
	fmt.Fprintf(w, "%-12s %6s %8s %9s %9s %9s %9s %9s %8s %7s %7s %7s %6s\n",
		"", "", "", "s", "s", "s", "s", "s", "/model", "s", "s", "s", "")
}

func printBenchRow(w io.Writer, p benchPoint) {
	if p.failure != "" {
		fmt.Fprintf(w, "%-12s %6d %8s   cannot run: %s\n", p.launcher, p.nodes, p.degreeLabel(), p.failure)
		return
	}
	fmt.Fprintf(w, "%-12s %6d %8s %9.3f %9.3f %9.3f %9.2f %9s %8s %7s %7s %7s %6.1f\n", p.launcher, p.nodes, p.degreeLabel(),
		median(p.walls), slices.Min(p.walls), slices.Max(p.walls), median(p.cpus), orDash(p.model, 3), orDash(p.ratio(), 2),
		orDash(p.milestone(0), 3), orDash(p.milestone(1), 3), orDash(p.milestone(2), 3), p.load)
}

// degreeLabel is the point's δ, with auto's choice.
func (p benchPoint) degreeLabel() string {
	if !isOurs(p.launcher) {
		return sim.DegreeName(p.degree)
	}
	return sim.DegreeLabel(p.degree, p.chosen)
}

// ratio is measured / model, 0 without a model.
func (p benchPoint) ratio() float64 {
	if p.model <= 0 || len(p.walls) == 0 {
		return 0
	}
	return median(p.walls) / p.model
}

// isOurs tells our mpirun and its variants (prsh:NAME) from the peers.
func isOurs(launcher string) bool { return launcher == "prsh" || strings.HasPrefix(launcher, "prsh:") }

func orDash(x float64, prec int) string {
	if x <= 0 {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

func writeBenchOutputs(c *cli.Context, points []benchPoint) error {
	if path := c.String("csv"); path != "" {
		if err := testbed.WriteCSV(path, benchRecords(points)); err != nil {
			return err
		}
	}
	if path := c.String("plot"); path != "" {
		return savePlot(path, benchTitle(c), benchSeries(points), true)
	}
	return nil
}

func benchRecords(points []benchPoint) [][]string {
	records := [][]string{{"launcher", "nodes", "spawn_degree", "runs", "wall_median_s", "wall_min_s", "wall_max_s",
		"cpu_median_s", "model_s", "measured_over_model", "load_average", "failure",
		"phase1_median_s", "phase2_median_s", "started_median_s", "exited_median_s"}}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }
	orEmpty := func(x float64) string {
		if x <= 0 {
			return ""
		}
		return f(x)
	}
	for _, p := range points {
		r := []string{p.launcher, strconv.Itoa(p.nodes), p.degreeLabel(), strconv.Itoa(len(p.walls)), "", "", "", "",
			orEmpty(p.model), orEmpty(p.ratio()), strconv.FormatFloat(p.load, 'f', 1, 64), p.failure}
		for k := range protocol.NumMilestones {
			r = append(r, orEmpty(p.milestone(k)))
		}
		if len(p.walls) > 0 {
			r[4], r[5], r[6], r[7] = f(median(p.walls)), f(slices.Min(p.walls)), f(slices.Max(p.walls)), f(median(p.cpus))
		}
		records = append(records, r)
	}
	return records
}

func benchTitle(c *cli.Context) string {
	how := fmt.Sprintf("testbed-agent, latency %v, spawn cost %v", c.Duration("ssh-latency"), c.Duration("spawn-cost"))
	if c.Bool("native") {
		how = fmt.Sprintf("native ssh, latency %v", c.Duration("ssh-latency"))
	}
	return "/bin/true, median of " + strconv.Itoa(c.Int("runs")) + ": " + how
}

// benchSeries is a line per launcher and δ, measured, and for each of our
// δ a dashed line of its model in the same colour.
func benchSeries(points []benchPoint) []series {
	var lines []series
	index := map[string]int{}
	add := func(name string, x, y float64, dashed bool) {
		if y <= 0 {
			return
		}
		i, ok := index[name]
		if !ok {
			i = len(lines)
			index[name] = i
			lines = append(lines, series{name: name, dashed: dashed, color: len(lines)})
		}
		lines[i].points = append(lines[i].points, plotter.XY{X: x, Y: y})
	}
	for _, p := range points {
		name := p.launcher
		if isOurs(p.launcher) {
			name += " δ=" + sim.DegreeName(p.degree)
		}
		if len(p.walls) > 0 {
			add(name, float64(p.nodes), median(p.walls), false)
		}
	}
	for _, p := range points {
		if p.launcher == "prsh" { // the variants share its model
			add("model δ="+sim.DegreeName(p.degree), float64(p.nodes), p.model, true)
		}
	}
	for i := range lines { // a model in its δ's colour
		if m, ok := strings.CutPrefix(lines[i].name, "model "); ok {
			if j, ok := index["prsh "+m]; ok {
				lines[i].color = lines[j].color
			}
		}
	}
	return lines
}
