package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"prsh/daemon/protocol/sim"
	"prsh/testbed"
)

// row is one simulated launch of a sweep.
type row struct {
	nodes, degree int // degree may be flat or auto
	chosen        int // the degree it ran with
	r             sim.Result
	wall          time.Duration
}

// sweep runs every (nodes, δ) pair, smallest first, and prints a table
// as each finishes.
func sweep(c *cli.Context, std stdio, base sim.Model, nodes, degrees []int) error {
	var rows []row
	fmt.Fprintf(std.out, "%8s %8s %10s %10s %10s %10s %10s %12s %8s\n",
		"nodes", "δ", "phase1", "phase2", "launch", "exited", "mpirun", "messages", "wall")
	for _, n := range nodes {
		for _, d := range degrees {
			m := base
			m.Nodes, m.SpawnDegree = n, m.Degree(d, n)
			if budget := c.Int("max-events"); budget > 0 && phase2Messages(n, m.SpawnDegree) > float64(budget) {
				fmt.Fprintf(std.out, "%8d %8s   not run: phase 2 floods ≈ %.1e messages at δ=%d, over --max-events\n",
					n, sim.DegreeLabel(d, m.SpawnDegree), phase2Messages(n, m.SpawnDegree), m.SpawnDegree)
				continue
			}
			start := time.Now()
			r, err := sim.Simulate(m, c.Int("max-events"))
			if err != nil {
				return err
			}
			rw := row{n, d, m.SpawnDegree, r, time.Since(start)}
			rows = append(rows, rw)
			printRow(std.out, rw)
		}
	}
	if slices.ContainsFunc(rows, func(rw row) bool { return rw.r.Phase2 < 0 && !rw.r.OverBudget }) {
		fmt.Fprintln(std.out, "phase2 -: the job ended before every daemon had every address (the launch does not wait for phase 2)")
	}
	return writeOutputs(c, rows)
}

// phase2Messages is about how many messages phase 2 takes: each daemon
// forwards what it learns to the children that reported before, about
// δ²/2 messages per daemon with children, so ≈ n·δ/2 over the cluster;
// n²/2 for a flat launch, where the simulator would spend hours.
func phase2Messages(n, degree int) float64 { return float64(n) * float64(min(degree, n)) / 2 }

func printRow(w io.Writer, rw row) {
	r := rw.r
	if r.OverBudget {
		fmt.Fprintf(w, "%8d %8s   stopped after %d events (--max-events), at %s of virtual time\n",
			rw.nodes, sim.DegreeLabel(rw.degree, rw.chosen), r.Events, seconds(max(r.Phase1, r.Phase2, r.Started)))
		return
	}
	fmt.Fprintf(w, "%8d %8s %10s %10s %10s %10s %10s %12d %7.1fs\n",
		rw.nodes, sim.DegreeLabel(rw.degree, rw.chosen), seconds(r.Phase1), seconds(r.Phase2), seconds(r.Started),
		seconds(r.Exited), seconds(r.MpirunExit), r.Messages, rw.wall.Seconds())
}

func writeOutputs(c *cli.Context, rows []row) error {
	if path := c.String("csv"); path != "" {
		return writeCSV(path, rows)
	}
	return nil
}

func writeCSV(path string, rows []row) error {
	records := [][]string{{"nodes", "spawn_degree", "phase1_s", "phase2_s", "launch_s", "exited_s", "mpirun_exit_s",
		"last_exit_s", "status", "messages", "bytes", "events", "completed", "wall_s"}}
	sec := func(us int64) string {
		if us < 0 {
			return ""
		}
		return strconv.FormatFloat(float64(us)/1e6, 'f', 6, 64)
	}
	for _, rw := range rows {
		r := rw.r
		records = append(records, []string{strconv.Itoa(rw.nodes), sim.DegreeLabel(rw.degree, rw.chosen), sec(r.Phase1), sec(r.Phase2),
			sec(r.Started), sec(r.Exited), sec(r.MpirunExit), sec(r.LastExit), strconv.Itoa(r.Status),
			strconv.FormatInt(r.Messages, 10), strconv.FormatInt(r.Bytes, 10), strconv.Itoa(r.Events),
			strconv.FormatBool(!r.OverBudget), strconv.FormatFloat(rw.wall.Seconds(), 'f', 2, 64)})
	}
	return testbed.WriteCSV(path, records)
}
