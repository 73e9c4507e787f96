package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"prsh/testbed"
)

// forwarded are the signals run passes on to CMD instead of acting on them,
// so that a test can signal the launcher through the testbed.
var forwarded = []os.Signal{
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTSTP, syscall.SIGCONT,
}

func runCommand(std stdio) *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "start a cluster, run CMD against it, check nothing is left running",
		ArgsUsage: "-- CMD [ARGS...]",
		Flags: append(clusterFlags(),
			&cli.DurationFlag{Name: "leftover-grace", Value: 5 * time.Second,
				Usage: "how long processes may take to exit after CMD before they count as left running"},
		),
		Action: func(c *cli.Context) error { return runAction(c, std) },
	}
}

func runAction(c *cli.Context, std stdio) error {
	args := c.Args().Slice()
	if len(args) == 0 {
		return errors.New("run: no command (usage: testbed run [flags] -- CMD [ARGS...])")
	}
	// Catch signals before anything else, so none kills the testbed;
	// those arriving before CMD starts are delivered once it has.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	cfg, err := configFromFlags(c, std.err)
	if err != nil {
		return err
	}
	cl, err := testbed.Start(cfg)
	if err != nil {
		return err
	}
	defer cl.Close()
	status := statusf(c, std.err) // the cluster itself logs "nodes up"

	env := append(append(os.Environ(), cl.Env()...), pathEnv())
	code := execute(args, env, std, sigs)
	status("testbed: %s exited with status %d", args[0], code)
	if left := cl.WaitNoLeftovers(c.Duration("leftover-grace")); len(left) > 0 {
		reportLeftovers(std.err, left)
		cl.KillLeftovers()
		return exitCode(exitFailure)
	}
	if code != 0 {
		return exitCode(code)
	}
	return nil
}

// statusf logs the testbed's own progress, only with -v.
func statusf(c *cli.Context, w io.Writer) func(string, ...any) {
	if !c.Bool("verbose") {
		return func(string, ...any) {}
	}
	return func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
}

func reportLeftovers(w io.Writer, left []testbed.Proc) {
	for _, p := range left {
		where := "on " + p.Node
		if p.Node == "" {
			where = "locally"
		}
		fmt.Fprintf(w, "testbed: left running %s: pid %d: %s\n", where, p.PID, p.Cmdline)
	}
}

// execute runs CMD to completion, forwarding sigs to it, and returns its
// status the way a shell would report it.
func execute(args, env []string, std stdio, sigs <-chan os.Signal) int {
	path, err := testbed.LookPath(args[0], testbed.EnvValue(env, "PATH"))
	if err != nil {
		fmt.Fprintf(std.err, "testbed: %v\n", err)
		return exitNotFound
	}
	cmd := &exec.Cmd{
		Path: path, Args: args, Env: env,
		Stdin: std.in, Stdout: std.out, Stderr: std.err,
		// Only matters for writers that are not files (in-process use):
		// do not wait forever for CMD's stray children to close them.
		WaitDelay: time.Second,
		// Own process group: a signal sent to the testbed's group
		// reaches CMD once, through forwarding, not twice.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	return runForeground(cmd, std, sigs, func(s os.Signal) { cmd.Process.Signal(s) })
}

// runForeground starts cmd, in its own process group, as the terminal's
// foreground (so that the terminal stays usable), passes sigs on with
// signal until it ends, and returns its status the way a shell would.
func runForeground(cmd *exec.Cmd, std stdio, sigs <-chan os.Signal, signal func(os.Signal)) int {
	if tty := foregroundTTY(std.in); tty != nil {
		cmd.SysProcAttr.Foreground = true
		cmd.SysProcAttr.Ctty = int(tty.Fd())
		defer reclaimTTY(tty)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(std.err, "testbed: %v\n", err)
		return exitNoExec
	}
	done := make(chan struct{})
	forwarding := make(chan struct{})
	go func() {
		defer close(forwarding)
		for {
			select {
			case s := <-sigs:
				signal(s)
			case <-done:
				return
			}
		}
	}()
	cmd.Wait() // its status is all that matters
	close(done)
	<-forwarding
	return shellStatus(cmd.ProcessState)
}

func shellStatus(st *os.ProcessState) int {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}
