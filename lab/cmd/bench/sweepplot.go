package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"prsh/daemon/protocol/sim"

	"github.com/urfave/cli/v2"
	"gonum.org/v1/plot/plotter"
)

func sweepPlotCommand() *cli.Command {
	return &cli.Command{
		Name:  "sweep-plot",
		Usage: "draw a sweep of testbed sim (its --csv) as time against nodes, one line per δ",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "csv", Required: true, Usage: "the CSV testbed sim --csv wrote, to read"},
			&cli.StringFlag{Name: "plot", Required: true, Usage: "write the PNG (or another format by extension) to this file"},
		},
		Action: func(c *cli.Context) error {
			rows, err := readSweep(c.String("csv"))
			if err != nil {
				return err
			}
			return writeSweepPlot(c.String("plot"), rows)
		},
	}
}

// sweepRow is one simulated launch of testbed sim's CSV.
type sweepRow struct {
	nodes      int
	degree     string  // as the CSV says it: 8, flat, auto(12)
	mpirunExit float64 // seconds; 0: mpirun had not exited
	completed  bool    // false: stopped by --max-events
}

// readSweep reads the columns of testbed sim's CSV that the plot needs,
// by their header's names.
func readSweep(path string) ([]sweepRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(records) == 0 {
		return nil, fmt.Errorf("%s: empty, want testbed sim's CSV", path)
	}
	col := map[string]int{}
	for _, name := range []string{"nodes", "spawn_degree", "mpirun_exit_s", "completed"} {
		i := slices.Index(records[0], name)
		if i < 0 {
			return nil, fmt.Errorf("%s: no column %s, want testbed sim's CSV", path, name)
		}
		col[name] = i
	}
	var rows []sweepRow
	for _, r := range records[1:] {
		n, err := strconv.Atoi(r[col["nodes"]])
		if err != nil {
			return nil, fmt.Errorf("%s: nodes %q: %w", path, r[col["nodes"]], err)
		}
		row := sweepRow{nodes: n, degree: r[col["spawn_degree"]], completed: r[col["completed"]] == "true"}
		if exit := r[col["mpirun_exit_s"]]; exit != "" {
			if row.mpirunExit, err = strconv.ParseFloat(exit, 64); err != nil {
				return nil, fmt.Errorf("%s: mpirun_exit_s %q: %w", path, exit, err)
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// writeSweepPlot draws mpirun's exit time against the number of nodes,
// one line per spawn degree, as the paper's Figure 2; runs that did not
// complete are left out.
func writeSweepPlot(path string, rows []sweepRow) error {
	var lines []series
	index := map[string]int{}
	for _, rw := range rows {
		if !rw.completed || rw.mpirunExit <= 0 {
			continue
		}
		name := "δ=" + degreeOfLabel(rw.degree)
		i, ok := index[name]
		if !ok {
			i = len(lines)
			index[name] = i
			lines = append(lines, series{name: name, color: i})
		}
		lines[i].points = append(lines[i].points, plotter.XY{X: float64(rw.nodes), Y: rw.mpirunExit})
	}
	// Time on a log scale: a flat launch is a hundred times slower than a tree.
	return savePlot(path, "simulated mpirun /bin/true", lines, true)
}

// degreeOfLabel is the δ asked for, from a row's label: auto(12), the
// degree auto chose at that size, is one line of auto.
func degreeOfLabel(label string) string {
	if strings.HasPrefix(label, "auto(") {
		return sim.DegreeName(sim.Auto)
	}
	return label
}
