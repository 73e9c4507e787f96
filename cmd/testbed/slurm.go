package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"prsh/testbed/slurm"
)

func slurmCommand(std stdio) *cli.Command {
	return &cli.Command{
		Name:      "slurm",
		Usage:     "start a Slurm cluster (munged, slurmctld, a slurmd per node) in private namespaces, run CMD in it or serve until Ctrl-C (root only)",
		ArgsUsage: "[-- CMD [ARGS...]]",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "nodes", Aliases: []string{"n"}, Value: 4, Usage: "compute nodes (node1 …)"},
			&cli.IntFlag{Name: "cpus", Value: 1, Usage: "CPUs per node"},
			&cli.StringFlag{Name: "dir", Usage: "slurm.conf, logs, spool, the nodes' /tmp (default: a temporary dir)"},
			&cli.StringSliceFlag{Name: "shared", Usage: "directories under /tmp the nodes see as the host does (the current directory always is)"},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "log start-up and shutdown on stderr"},
		},
		Action: func(c *cli.Context) error { return slurmAction(c, std) },
	}
}

func slurmAction(c *cli.Context, std stdio) error {
	// Catch signals first: those arriving during start-up stop the
	// cluster or reach CMD once it runs.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	status := statusf(c, std.err)
	begin := time.Now()
	cl, err := slurm.Start(slurm.Config{Nodes: c.Int("nodes"), CPUs: c.Int("cpus"), Dir: c.String("dir"), Shared: c.StringSlice("shared")})
	if err != nil {
		return err
	}
	status("testbed: slurm: %d nodes idle after %v, files in %s", c.Int("nodes"), time.Since(begin).Round(time.Millisecond), cl.Dir())
	code := 0
	if c.Args().Len() > 0 {
		code = runInSlurm(cl, c.Args().Slice(), std, sigs)
		status("testbed: slurm: %s exited with status %d", c.Args().First(), code)
	} else {
		serveSlurm(cl, std, sigs)
	}
	begin = time.Now()
	if err := cl.Close(); err != nil {
		fmt.Fprintf(std.err, "testbed: %v\n", err)
		return exitCode(exitFailure)
	}
	status("testbed: slurm: stopped in %v", time.Since(begin).Round(time.Millisecond))
	if code != 0 {
		return exitCode(code)
	}
	return nil
}

// runInSlurm runs CMD on the cluster's controller, forwarding signals to
// its process group (nsenter passes none on), and returns its status the
// way a shell would.
func runInSlurm(cl *slurm.Cluster, args []string, std stdio, sigs <-chan os.Signal) int {
	cmd := cl.Command(context.Background(), args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = std.in, std.out, std.err
	cmd.WaitDelay = time.Second // writers that are not files (in-process use)
	return runForeground(cmd, std, sigs, func(s os.Signal) { syscall.Kill(-cmd.Process.Pid, s.(syscall.Signal)) })
}

// serveSlurm prints how to use the cluster and waits for a signal that
// asks to stop.
func serveSlurm(cl *slurm.Cluster, std stdio, sigs <-chan os.Signal) {
	fmt.Fprintf(std.err, "testbed: slurm: nodes %v up, files in %s\n", cl.Nodes(), cl.Dir())
	fmt.Fprintf(std.err, "testbed: slurm: its commands run inside its namespaces, e.g. (as root):\n")
	fmt.Fprintf(std.err, "testbed:   nsenter -t %d -n -m -u -p env %s salloc -N %d srun hostname\n",
		cl.InitPID(), cl.Env()[0], len(cl.Nodes()))
	fmt.Fprintf(std.err, "testbed: slurm: stop with Ctrl-C\n")
	for s := range sigs {
		if s == syscall.SIGINT || s == syscall.SIGTERM || s == syscall.SIGHUP {
			return
		}
	}
}
