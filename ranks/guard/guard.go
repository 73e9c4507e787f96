// Package guard is a rank's guard: the process that starts the rank and
// keeps anything it started from outliving the job (a subreaper that
// kills everything under it at the job's end or its daemon's death), the
// daemon's handle on it, and the node-local containment beside it: the
// job's cgroup, and scratch directories that the next daemon sweeps
// when a daemon was killed outright. cmd/prsh-guard is its binary.
package guard

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"prsh/errmgr"
	"prsh/errmgr/status"
	"prsh/internal/timeouts"
	"prsh/job/binding"
)

// GuardArg as argv[1] makes orted, or prsh-guard, a rank's guard. It
// ends in the version of the guard's interface (its argv, descriptors
// and environment), raised by any change to them, so that a prsh-guard
// of another prsh left beside orted refuses to guard (GuardArgPrefix)
// instead of misreading what it is given.
const GuardArg = GuardArgPrefix + "-v3"

// GuardArgPrefix begins the GuardArg of every version, and is the whole
// of it before versions.
const GuardArgPrefix = "__rank-guard"

// A rank runs under a guard: a small process that starts the rank in a
// process group of its own (numbered after the guard), reports how the
// rank ended, and makes sure that nothing the rank started outlives the
// job. The guard is the child subreaper of everything under it, so a
// process that leaves the rank's group or session (setsid, a double
// fork, a daemon) still comes back to the guard when its parent dies,
// and cannot reach init. The guard leaves the rank's group once the rank
// runs, so that the daemon's signals to the group reach the rank and
// what it started, never the guard. The guard kills everything under it
// when its daemon closes its end pipe (the job's end: the daemon kills
// the ranks) or when the daemon dies (the pipe closes with it). It
// exits once nothing is left under it.
//
// Why a process per rank, and why its own binary. The guarantees need a
// process that outlives the daemon: a daemon killed outright must still
// take with it what its ranks started (the job cgroup would, but no one
// is left to kill it), and a daemon stopped or stuck in the kernel acts
// on nothing. The daemon itself as child subreaper, with a parent-death
// signal on the ranks, keeps neither: the parent-death signal is not
// inherited by what a rank forks, so escapees go to init when the daemon
// dies, and nothing watches a stopped daemon. One guard per node that
// starts every rank would keep them, but must be handed each rank's
// pipes and PMI socket over a socket, and saves nothing where a node runs
// one rank. So the guard stays one per rank, in a binary of its own
// (cmd/prsh-guard: static, without the PMIx libraries) that starts in
// under half the CPU of a second start of orted; orted guards with itself
// (GuardArg) where that binary is not beside it.

// The guard's descriptors: 3 is its report: the rank's pid once it runs,
// then how it ended, as the raw wait status (the guard cannot die of the
// rank's signal itself: the Go runtime turns a re-raised SIGSEGV into a
// crash of its own), both in decimal; 4 is the end pipe; the rank's own
// extra descriptors follow.
const (
	guardStatusFD = 3
	guardEndFD    = 4
	guardFirstFD  = 5
)

// Guard is a rank's guard as its daemon holds it.
type Guard struct {
	Cmd     *exec.Cmd
	report  *os.File // how the rank ended, once it has
	end     *os.File // closing it ends everything under the guard
	theirs  []*os.File
	endOnce sync.Once
	waited  bool
	rank    atomic.Int64 // the rank's pid, once the guard has said it
	// OutsideCgroup is why the guard could not start in its cgroup, if
	// it was placed in one and started outside it.
	OutsideCgroup error
}

// GuardCommand wraps a rank's command in a guard. The rank's ExtraFiles
// (its PMI socket) pass through the guard, which hands them to the rank
// from descriptor 3 on, where the rank would see them without a guard.
func GuardCommand(rank *exec.Cmd, stoppedLimit time.Duration) (*Guard, error) {
	if stoppedLimit < time.Millisecond {
		return nil, fmt.Errorf("the guard's bound on a stopped daemon must be at least 1ms, not %v", stoppedLimit)
	}
	self, err := guardBinary()
	if err != nil {
		return nil, fmt.Errorf("cannot find orted to guard the rank: %w", err)
	}
	g := &Guard{}
	reportW, err := g.pipe(&g.report, false)
	if err != nil {
		return nil, err
	}
	endR, err := g.pipe(&g.end, true)
	if err != nil {
		g.Close()
		return nil, err
	}
	args := append([]string{self, GuardArg, strconv.Itoa(len(rank.ExtraFiles)),
		strconv.FormatInt(stoppedLimit.Milliseconds(), 10), rank.Path}, rank.Args...)
	files := append([]*os.File{reportW, endR}, rank.ExtraFiles...)
	g.Cmd = &exec.Cmd{Path: self, Args: args, Dir: rank.Dir, Env: rank.Env, ExtraFiles: files}
	g.Cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	return g, nil
}

// GuardBinary is the name of the guard's own binary, which the daemon
// looks for beside its own.
const GuardBinary = "prsh-guard"

// guardBinary is the guard's binary beside the caller's when there is
// one (cmd/prsh-guard: it starts in less than half the CPU of orted,
// which links the PMIx libraries), else the caller's own, which guards
// with GuardArg as well.
var guardBinary = sync.OnceValues(func() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	beside := filepath.Join(filepath.Dir(self), GuardBinary)
	if st, err := os.Stat(beside); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
		return beside, nil
	}
	return self, nil
})

// pipe makes a pipe, keeps the daemon's end in *ours (the write end when
// write) and returns the guard's.
func (g *Guard) pipe(ours **os.File, write bool) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	theirs := w
	*ours = r
	if write {
		theirs, *ours = r, w
	}
	g.theirs = append(g.theirs, theirs)
	return theirs, nil
}

// guardCPUsEnv carries the CPUs (a kernel cpu list) the guard binds
// itself to before it starts the rank, which inherits the binding; the
// rank never sees it.
const guardCPUsEnv = "PRSH_GUARD_CPUS"

// BindTo has the rank bound to cpus (none: unbound); call before Start.
func (g *Guard) BindTo(cpus []int) {
	if len(cpus) > 0 {
		g.Cmd.Env = append(g.Cmd.Env, guardCPUsEnv+"="+binding.List(cpus))
	}
}

// bindSelf binds the guard's thread to the CPUs the daemon chose, so that
// the rank it starts runs there from its first instruction. Affinity is
// per thread: the guard stays on this one, which forks the rank.
func bindSelf() error {
	list, ok := os.LookupEnv(guardCPUsEnv)
	if !ok {
		return nil
	}
	runtime.LockOSThread()
	os.Unsetenv(guardCPUsEnv)
	ids, err := binding.ParseList(list)
	if err != nil {
		return err
	}
	var set unix.CPUSet
	for _, id := range ids {
		set.Set(id)
	}
	return unix.SchedSetaffinity(0, &set)
}

// Start starts the guard and lets go of its ends of the pipes. A guard
// that the kernel will not start in the cgroup it was placed in starts
// outside it, and OutsideCgroup says why.
func (g *Guard) Start() error {
	err := g.Cmd.Start()
	if err != nil && g.Cmd.SysProcAttr.UseCgroupFD {
		again := unplaced(g.Cmd)
		if again.Start() == nil {
			g.Cmd, g.OutsideCgroup, err = again, err, nil
		}
	}
	g.closeTheirs()
	if err != nil {
		g.Close()
	}
	return err
}

func (g *Guard) closeTheirs() {
	for _, f := range g.theirs {
		f.Close()
	}
	g.theirs = nil
}

// Close releases a guard that never started.
func (g *Guard) Close() {
	g.closeTheirs()
	g.report.Close()
	g.End()
}

// End tells the guard to kill everything under it and exit.
func (g *Guard) End() {
	g.endOnce.Do(func() {
		if g.end != nil {
			g.end.Close()
		}
	})
}

// Wait returns how the rank ended: from the guard's report as soon as it
// comes, or the guard's own status if it ended without one (killed). The
// guard itself may live on while the rank's leftovers die: Reap waits
// for it.
func (g *Guard) Wait() syscall.WaitStatus {
	defer g.report.Close()
	var pid int64
	var raw uint32
	if _, err := fmt.Fscan(g.report, &pid); err == nil {
		g.rank.Store(pid)
	}
	if _, err := fmt.Fscan(g.report, &raw); err == nil {
		return syscall.WaitStatus(raw)
	}
	g.Reap()
	return g.Cmd.ProcessState.Sys().(syscall.WaitStatus)
}

// Reap waits for the guard process to exit. Call it from the goroutine
// that called Wait.
func (g *Guard) Reap() {
	if !g.waited {
		g.waited = true
		g.Cmd.Wait()
	}
}

// RunGuard is the guard's main: args are the number of descriptors to
// pass on, the rank's path and argv. It never returns.
func RunGuard(args []string) {
	// A guard waits: one P spares the runtime's hand-offs between threads
	// at each wake-up, and setting it stops the runtime's periodic check
	// of the CPU limit; both cost CPU for the rank's whole life.
	runtime.GOMAXPROCS(1)
	parent := os.Getppid()
	rank, stoppedLimit := rankCommand(args)
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	// The guard's pipes are its alone: no rank may hold them open.
	syscall.CloseOnExec(guardStatusFD)
	syscall.CloseOnExec(guardEndFD)
	if err := bindSelf(); err != nil {
		fmt.Fprintf(os.Stderr, "orted: cannot bind %s to its CPUs: %v\n", rank.Args[0], err)
		os.Exit(errmgr.StatusFailed)
	}
	lowerOOMScore := raiseOOMScore()
	err := rank.Start()
	lowerOOMScore()
	if err != nil {
		fmt.Fprintf(os.Stderr, "orted: cannot run %s: %v\n", rank.Args[0], status.UnwrapExec(err))
		os.Exit(status.ExecStatus(err))
	}
	for _, f := range rank.ExtraFiles {
		f.Close()
	}
	ignoreSignals()
	report := os.NewFile(guardStatusFD, "status")
	fmt.Fprintf(report, "%d\n", rank.Process.Pid)
	group := os.Getpid()
	leaveGroup(parent)
	go reapAll(rank.Process.Pid, report)
	ended := make(chan struct{})
	go awaitEnd(ended)
	if os.Getppid() != parent { // the daemon died before we were watching
		killAll(group)
	}
	watch(parent, group, ended, stoppedLimit)
}

// ignoreSignals makes the guard deaf to the signals that would end it:
// they are for the rank, which acts on them, and a guard killed by one
// could no longer keep its promise. It comes after the rank has started,
// which therefore keeps the default dispositions (an ignored signal stays
// ignored across exec). A signal before that ends the guard, and the
// rank with it, as the daemon then wanted. Notify would cost a round trip
// between two of the runtime's threads for every signal, most of a
// guard's start; Ignore is a sigaction each. SIGCHLD stays (ignoring it
// would reap the children for us), as do the runtime's SIGURG and SIGPROF
// and the faults, which only the kernel raises.
func ignoreSignals() {
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGABRT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM, syscall.SIGTERM,
		syscall.SIGSTKFLT, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGXCPU,
		syscall.SIGXFSZ, syscall.SIGVTALRM, syscall.SIGIO, syscall.SIGPWR, syscall.SIGSYS)
	for sig := sigRTMin; sig <= sigRTMax; sig++ {
		signal.Ignore(syscall.Signal(sig))
	}
}

// The real-time signals, whose default is to end the process. (The
// runtime lets no one ignore 32 and 33, which C libraries keep for
// themselves; it handles them.)
const sigRTMin, sigRTMax = 34, 64

// watch waits for the end: the end pipe closed, the daemon dead, or the
// daemon stopped, or stuck in the kernel, for stoppedLimit (the job's
// guard-stopped bound): a daemon that cannot act cannot end its ranks,
// so the guard kills it and everything under itself. The bound is longer
// than the links' silence bound (timeouts.Validate), so that the daemon's
// parent reports the daemon first, as one that stopped answering. A
// daemon stopped by a debugger is left alone. It never returns.
func watch(parent, group int, ended <-chan struct{}, stoppedLimit time.Duration) {
	tick := time.NewTicker(timeouts.GuardPollMS * time.Millisecond)
	var stoppedSince time.Time
	for {
		select {
		case <-ended:
			killAll(group)
		case now := <-tick.C:
			if !hung(parent) {
				stoppedSince = time.Time{}
			} else if stoppedSince.IsZero() {
				stoppedSince = now
			} else if now.Sub(stoppedSince) >= stoppedLimit && os.Getppid() == parent {
				syscall.Kill(parent, syscall.SIGKILL)
				killAll(group)
			}
		}
	}
}

// rankCommand reads the guard's arguments into the rank's command and
// the bound on its daemon's being stopped.
func rankCommand(args []string) (*exec.Cmd, time.Duration) {
	extra, err := strconv.Atoi(firstOr(args, ""))
	var stoppedMS int64
	if err == nil && len(args) > 1 {
		stoppedMS, err = strconv.ParseInt(args[1], 10, 64)
	}
	if err != nil || extra < 0 || stoppedMS <= 0 || len(args) < 4 {
		fmt.Fprintln(os.Stderr, "orted: guard: usage: COUNT STOPPED-MS PATH ARGV...")
		os.Exit(errmgr.StatusFailed)
	}
	rank := &exec.Cmd{Path: args[2], Args: args[3:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	for i := range extra {
		rank.ExtraFiles = append(rank.ExtraFiles, os.NewFile(uintptr(guardFirstFD+i), "passed"))
	}
	return rank, time.Duration(stoppedMS) * time.Millisecond
}

// leaveGroup moves the guard into its daemon's process group, out of the
// rank's, so that a SIGKILL to the rank's group cannot take the guard
// before it has killed what left the group. If it cannot, the guard
// stays, as a guard did before it was a subreaper.
func leaveGroup(parent int) {
	if pgid, err := unix.Getpgid(parent); err == nil {
		unix.Setpgid(0, pgid)
	}
}

// awaitEnd closes ended when the daemon closes the end pipe, or dies.
func awaitEnd(ended chan<- struct{}) {
	f := os.NewFile(guardEndFD, "end")
	var b [1]byte
	for {
		if _, err := f.Read(b[:]); err != nil {
			close(ended)
			return
		}
	}
}

func firstOr(args []string, or string) string {
	if len(args) == 0 {
		return or
	}
	return args[0]
}
