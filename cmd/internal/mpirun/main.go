// Package mpirun is the command line of mpirun and of the names Open
// MPI's users type for a DVM (prte, prun, pterm): one set of flags, one
// cli.App, one code path. mpirun launches a parallel job: it spawns one
// orted per node along a δ-ary tree over ssh, the daemons exchange their
// addresses, and the application is started on every node. mpirun is
// daemon 0 of the job: it runs the same event loop as every orted, plus
// the terminal, the signals and the exit status.
package mpirun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"prsh/daemon"
	"prsh/internal/profile"
	"prsh/ranks/guard/early"
	"prsh/stage"
)

// statusUsage is the exit status for bad flags or input.
const statusUsage = 2

// Open MPI's names for a DVM's commands, each the mpirun flag it stands
// for: Main(Prte) is mpirun --dvm-start, and so on.
const (
	Mpirun = ""
	Prte   = "dvm-start"
	Prun   = "dvm"
	Pterm  = "dvm-stop"
)

// Main runs mpirun with command's flag (Prte, Prun, Pterm) before the
// command line's own options, and exits.
func Main(command string) {
	start := time.Now()
	// --version only: -v is --verbose, as in Open MPI.
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version"}
	app := &cli.App{
		Name:      "mpirun",
		Usage:     "run a parallel job on the nodes of a cluster",
		UsageText: "mpirun [options] COMMAND [ARGS...]",
		Version:   version(),
		// A template without fields: the text is written by hand.
		CustomAppHelpTemplate: helpText,
		Suggest:               true,
		HideHelpCommand:       true,
		// -x 'MSG=hello, world' and -x CUDA_VISIBLE_DEVICES=0,1 are one
		// value each; -H splits its own lists, knowing brackets.
		DisableSliceFlagSeparator: true,
		Flags:                     namedOnce(flags()),
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageError{explainFlagError(err, c.App.Flags)}
		},
		Action: func(c *cli.Context) error { return run(c, start) },
	}
	err := app.Run(joinPairs(withCommandFlag(os.Args, command), app.Flags))
	early.Drop() // a guard started at init (cmd/mpirun) that no job took
	var exit exitStatus
	switch {
	case errors.As(err, &exit):
		os.Exit(int(exit))
	case err != nil:
		fmt.Fprintf(os.Stderr, "mpirun: %v\n", err)
		os.Exit(statusUsage)
	}
}

// withCommandFlag puts command's flag first among args' options.
func withCommandFlag(args []string, command string) []string {
	if command == Mpirun || len(args) == 0 {
		return args
	}
	return slices.Concat(args[:1], []string{"--" + command}, args[1:])
}

// lastResort makes sure a second interrupt ends mpirun even if its event
// loop cannot act on it, blocked writing to a stdout or stderr that nobody
// reads: once the loop had its chance, mpirun exits as the signal asks.
// Nothing is left behind: the daemons lose their lifeline and end their
// ranks.
func lastResort() {
	interrupts := make(chan os.Signal, 2)
	signal.Notify(interrupts, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	<-interrupts
	sig := <-interrupts
	time.Sleep(lastResortGrace)
	os.Exit(128 + int(sig.(syscall.Signal)))
}

// lastResortGrace is what the event loop gets to end the job after a
// second interrupt before mpirun exits regardless.
const lastResortGrace = 5 * time.Second

// version names the build: the module version, else the commit it was
// built from.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && (v == "" || v == "(devel)") {
			v = "commit " + s.Value[:min(12, len(s.Value))]
		}
	}
	return v + " (prsh: Open MPI-style mpirun in Go; not Open MPI)"
}

type usageError struct{ error }

func (u usageError) Error() string { return u.error.Error() + " (see mpirun --help)" }

type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func run(c *cli.Context, start time.Time) error {
	if err := dvmFlagsTogether(c); err != nil {
		return usageError{err}
	}
	if c.IsSet("dvm") || c.IsSet("dvm-stop") {
		return dvmClient(c)
	}
	if c.Bool("daemonize") {
		return daemonize(c)
	}
	cfg, err := configure(c)
	var unstageable stage.PlanError
	if errors.As(err, &unstageable) {
		fmt.Fprintf(os.Stderr, "mpirun: %v\n", err)
		return exitStatus(unstageable.Status)
	}
	if err != nil {
		return err
	}
	cfg.Start = start
	forwarded, err := forwardedSignals(c.String("forward-signals"))
	if err != nil {
		return usageError{err}
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, append(forwarded, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGTSTP, syscall.SIGCONT)...)
	defer signal.Stop(sigs)
	cfg.Signals = sigs
	go lastResort()
	profile.LimitMemory()
	stopProfile := profile.Start("mpirun")
	status, err := daemon.Run(context.Background(), cfg)
	stopProfile()
	if err != nil {
		fmt.Fprintf(os.Stderr, "mpirun: %v\n", err)
	}
	return exitStatus(status)
}
