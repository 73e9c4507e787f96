package proc

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"

	"prsh/errmgr"
)

// GuardArg as argv[1] makes orted a rank's guard instead of a daemon.
const GuardArg = "__rank-guard"

// A rank runs under a guard: a small process that leads the rank's process
// group, runs the rank in it, and exits as the rank did. Its only other
// job is to outlive a daemon killed outright (SIGKILL, a crash): the
// kernel then sends the guard its parent-death signal, and the guard kills
// the whole group, so that a rank and everything it started never outlive
// their daemon. Signals the daemon sends to the group reach the rank; the
// guard ignores them.

// The guard reports how the rank ended on its descriptor 3, as the raw
// wait status in decimal, since it cannot die of the rank's signal itself
// (the Go runtime turns a re-raised SIGSEGV into a crash of its own).
const guardStatusFD = 3

// GuardCommand wraps a rank's command in a guard. The rank's ExtraFiles
// (its PMI socket) pass through the guard: the guard gets them after its
// status descriptor and hands them to the rank from descriptor 3 on, so
// the rank sees them where it would without a guard. The caller puts the
// status pipe's write end first in the guard's ExtraFiles.
func GuardCommand(rank *exec.Cmd) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot find orted to guard the rank: %w", err)
	}
	args := append([]string{self, GuardArg, strconv.Itoa(len(rank.ExtraFiles)), rank.Path}, rank.Args...)
	cmd := &exec.Cmd{Path: self, Args: args, Dir: rank.Dir, Env: rank.Env, ExtraFiles: rank.ExtraFiles}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	return cmd, nil
}

// RunGuard is the guard's main: args are the number of descriptors to
// pass on, the rank's path and argv. It never returns.
func RunGuard(args []string) {
	parent := os.Getppid()
	signals := make(chan os.Signal, 16)
	signal.Notify(signals) // every signal: the rank acts on them, not us
	extra, err := strconv.Atoi(firstOr(args, ""))
	if err != nil || extra < 0 || len(args) < 3 {
		fmt.Fprintln(os.Stderr, "orted: guard: usage: COUNT PATH ARGV...")
		os.Exit(errmgr.StatusFailed)
	}
	rank := &exec.Cmd{Path: args[1], Args: args[2:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	for i := range extra {
		rank.ExtraFiles = append(rank.ExtraFiles, os.NewFile(uintptr(guardStatusFD+1+i), "passed"))
	}
	// The status pipe is the guard's alone: no rank may hold it open.
	syscall.CloseOnExec(guardStatusFD)
	if err := rank.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "orted: cannot run %s: %v\n", args[2], UnwrapExec(err))
		os.Exit(ExecStatus(err))
	}
	for _, f := range rank.ExtraFiles {
		f.Close()
	}
	if os.Getppid() != parent { // the daemon died before we were watching
		syscall.Kill(0, syscall.SIGKILL)
	}
	done := make(chan struct{})
	go func() { rank.Wait(); close(done) }()
	for {
		select {
		case <-done:
			exitAs(rank.ProcessState)
		case <-signals:
			if os.Getppid() != parent {
				syscall.Kill(0, syscall.SIGKILL) // the whole group, us included
			}
		}
	}
}

func firstOr(args []string, or string) string {
	if len(args) == 0 {
		return or
	}
	return args[0]
}

// exitAs reports how the rank ended and exits with the shell's view of it.
func exitAs(ps *os.ProcessState) {
	ws := ps.Sys().(syscall.WaitStatus)
	if f := os.NewFile(guardStatusFD, "status"); f != nil {
		fmt.Fprintf(f, "%d\n", uint32(ws))
		f.Close()
	}
	os.Exit(ExitStatus(ws))
}

// GuardedStatus reads the rank's wait status from its guard's report, or
// falls back on the guard's own.
func GuardedStatus(report *os.File, guard *os.ProcessState) syscall.WaitStatus {
	defer report.Close()
	var raw uint32
	if _, err := fmt.Fscan(report, &raw); err == nil {
		return syscall.WaitStatus(raw)
	}
	return guard.Sys().(syscall.WaitStatus)
}
