// Command testbed runs an emulated ssh cluster on this machine.
//
//	testbed run --nodes N [flags] -- CMD ARGS...
//	testbed up  --nodes N --dir DIR [flags]
//	testbed sim [flags]
//	testbed slurm --nodes N [--cpus C] [-- CMD ARGS...]
//
// run starts the cluster, runs CMD against it (MPIRUN_HOSTFILE,
// MPIRUN_SSH_CONFIG and PRSH_TESTBED_RUN in its environment, the testbed's
// own directory first in PATH so that mpirun and orted built beside it are
// found, on the nodes as well), forwards signals to it, and after it exits
// checks that no process started through the testbed is left running.
//
// Exit status of run: CMD's own status, 128+N if CMD died of signal N,
// 125 if processes were left running (they are listed on stderr and
// killed) or the testbed itself failed, 126/127 if CMD could not be
// executed or found.
//
// up serves the cluster until SIGINT, SIGTERM or SIGHUP, for use by hand:
//
//	ssh -F DIR/ssh_config node001 hostname
//
// slurm starts a real Slurm cluster (root only; package testbed/slurm)
// and runs CMD on its controller, as on a login node, or serves it until
// SIGINT, SIGTERM or SIGHUP; then it stops the cluster and checks that
// nothing is left running (status 125 otherwise):
//
//	testbed slurm --nodes 4 --cpus 2 -- salloc -N 4 srun hostname
//
// sim runs the daemons' protocol machine on a virtual clock and prints
// the milestones, or a sweep's table and CSV. Measuring launches on the
// cluster (bench launch) and drawing the figures is the lab's work:
// lab/, a module of its own.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"prsh/iof"
	"prsh/testbed"
	"prsh/testbed/slurm"
)

// Exit statuses of the testbed's own making.
const (
	exitFailure  = 125 // leftovers, bad usage, cluster failed to start
	exitNoExec   = 126 // CMD found but could not be started
	exitNotFound = 127 // CMD not found
)

func main() {
	testbed.MaybeRunUTSHelper()
	slurm.MaybeRunHelper()
	os.Exit(Main(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

// exitCode is returned by actions to choose the process's exit status
// without calling os.Exit, so that Main can be tested in-process.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// stdio is what CMD inherits. in is handed to CMD as is: pass os.Stdin so
// that CMD gets the descriptor itself (and the terminal, if any).
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// Main runs the command line args (args[0] is the program name) and
// returns the exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	std := stdio{in: stdin, out: stdout, err: iof.NewSerial(stderr)} // the cluster logs from many goroutines
	err := newApp(std).Run(args)
	var ec exitCode
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ec):
		return int(ec)
	default:
		fmt.Fprintf(std.err, "testbed: %v\n", err)
		return exitFailure
	}
}

func newApp(std stdio) *cli.App {
	return &cli.App{
		Name:            "testbed",
		Usage:           "emulate a cluster of ssh nodes on this machine",
		Reader:          std.in,
		Writer:          std.out,
		ErrWriter:       std.err,
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {}, // Main picks the status
		Commands:        []*cli.Command{runCommand(std), upCommand(std), simCommand(std), slurmCommand(std)},
	}
}
