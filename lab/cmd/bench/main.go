// Command bench is the measurement lab's: it measures launches on the
// emulated cluster (package prsh/testbed) and draws the figures of the
// notebooks in lab/notebooks.
//
//	bench launch --nodes 16,64 --degrees 2,8,32,flat --runs 3 [--peers] [flags]
//	bench slurm --nodes 8,32,64 --runs 3 [--csv F] [--table F] [--plot F]
//	bench onenode --ranks 16,64,256 --runs 3 [--table F]
//	bench dvm --nodes 16 --jobs 200 --throughput 1000 --at-once 64 [--peers --uts] [--table F]
//	bench sweep-plot --csv sweep.csv --plot sweep.png
//
// launch measures launches of /bin/true on a cluster, by our mpirun and by
// other launchers, through testbed-agent (the low-CPU launch agent) or
// ssh; see its --help. slurm measures launches inside allocations of a
// real Slurm (testbed/slurm) by our mpirun, Open MPI's, Hydra's and srun.
// sweep-plot draws the CSV of a sweep of testbed sim.
//
// Build it beside mpirun, orted and testbed-agent (make bench: bin/bench),
// where launch finds them.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"prsh/testbed"
	"prsh/testbed/slurm"
)

// exitFailure is the status of a failed measurement or bad usage.
const exitFailure = 1

func main() {
	testbed.MaybeRunUTSHelper() // the cluster's nodes with --uts re-run this binary
	slurm.MaybeRunHelper()      // and the Slurm cluster's init and slurmd's
	os.Exit(Main(os.Args, os.Stdout, os.Stderr))
}

// stdio is where the tables and the launches' logs go.
type stdio struct {
	out, err io.Writer
}

// Main runs the command line args (args[0] is the program name) and
// returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	std := stdio{out: stdout, err: stderr}
	if err := newApp(std).Run(args); err != nil {
		fmt.Fprintf(std.err, "bench: %v\n", err)
		return exitFailure
	}
	return 0
}

func newApp(std stdio) *cli.App {
	return &cli.App{
		Name:            "bench",
		Usage:           "measure launches on an emulated cluster, and draw the figures",
		Writer:          std.out,
		ErrWriter:       std.err,
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {}, // Main prints the error
		Commands:        []*cli.Command{launchCommand(std), slurmCommand(std), oneNodeCommand(std), dvmCommand(std), spawnCommand(std), sweepPlotCommand()},
	}
}
