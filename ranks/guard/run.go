package guard

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"prsh/errmgr"
	"prsh/errmgr/status"
	"prsh/internal/timeouts"
)

// node is the guard's own state.
type node struct {
	sock   *socket
	sendMu sync.Mutex // one message at a time on the socket

	mu      sync.Mutex      // ranks, jobs, killing and the starts under way: a rank reaped before its start noted it waits in early
	ranks   map[int]started // each rank started and not yet reaped, by pid
	jobs    map[int]*job    // each job with a rank started, until its kill is done
	killing bool            // the daemon is gone: everything goes, no more starts
	// wake tells the reaper, waiting for a child, that one was started
	// or that the guard is killing; exits that a child ended.
	wake  chan struct{}
	exits chan os.Signal
	mem   memory   // what the starts left, released once they stop
	oom   oomScore // raised for each start
	// starts bounds the starts under way; starting counts them (under
	// mu), and early holds the ends of children reaped meanwhile, which
	// may be ranks whose starts have yet to note them.
	starts   *starts
	starting int
	early    map[int]syscall.WaitStatus
}

// RunGuard is the guard's main: args are the bound on its daemon's being
// stopped, in ms; its socket is descriptor 3. It never returns.
func RunGuard(args []string) {
	// A guard mostly waits: one P spares the runtime's hand-offs between
	// threads at each wake-up, and setting it stops the runtime's
	// periodic check of the CPU limit. Its binaries set it earlier
	// (internal/oneproc), where it costs less; here it holds for tests.
	runtime.GOMAXPROCS(1)
	parent := os.Getppid()
	stoppedMS, err := strconv.ParseInt(firstOr(args, ""), 10, 64)
	if err != nil || stoppedMS <= 0 {
		fmt.Fprintln(os.Stderr, "orted: guard: usage: STOPPED-MS, with the daemon's socket as descriptor 3")
		os.Exit(errmgr.StatusFailed)
	}
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	syscall.CloseOnExec(guardSocketFD) // the guard's alone: no rank may hold it open
	deafen()
	sock, err := newSocket(guardSocketFD, "daemon socket")
	if err != nil {
		fmt.Fprintf(os.Stderr, "orted: guard: its socket: %v\n", err)
		os.Exit(errmgr.StatusFailed)
	}
	g := &node{sock: sock, ranks: map[int]started{}, jobs: map[int]*job{}, wake: make(chan struct{}, 1), exits: make(chan os.Signal, 1),
		starts: newStarts(), early: map[int]syscall.WaitStatus{}}
	signal.Notify(g.exits, syscall.SIGCHLD) // before the first start: no end goes unnoticed
	go g.reapAll()
	go g.watch(parent, time.Duration(stoppedMS)*time.Millisecond)
	g.serve()
}

// deafen keeps the signals that would end or stop the guard from doing
// so: they are for the ranks, and a guard ended by one could no longer
// keep its promise. They are caught and dropped, not ignored: an ignored
// signal would stay ignored in the ranks across exec, a caught one goes
// back to its default there. SIGCHLD wakes the reaper (reapAll); the
// runtime's SIGURG and SIGPROF stay, as do the faults, which only the
// kernel raises.
func deafen() {
	sigs := []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGABRT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM, syscall.SIGTERM,
		syscall.SIGSTKFLT, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGXCPU,
		syscall.SIGXFSZ, syscall.SIGVTALRM, syscall.SIGIO, syscall.SIGPWR, syscall.SIGSYS}
	for sig := sigRTMin; sig <= sigRTMax; sig++ {
		sigs = append(sigs, syscall.Signal(sig))
	}
	signal.Notify(make(chan os.Signal, 1), sigs...) // never read: a full channel drops the signal
}

// The real-time signals, whose default is to end the process. (The
// runtime keeps 32 and 33, which C libraries use, for itself.)
const sigRTMin, sigRTMax = 34, 64

// serve carries out the daemon's messages until the job ends.
func (g *node) serve() {
	var own unix.CPUSet
	unix.SchedGetaffinity(0, &own) // every thread's: each inherits it, and startOn restores it
	for {
		body, files, err := g.sock.receive()
		switch {
		case err != nil || len(body) == 0: // the daemon ended or died
			closeFiles(files)
			g.killAll()
		case body[0] == kindKill:
			closeFiles(files)
			r := &reader{b: body[1:]}
			if id := r.int(); r.err == nil {
				g.killJob(id)
			}
		case body[0] == kindStart:
			g.handle(body[1:], files, &own)
		}
	}
}

// handle carries out a start: its job is found at once, in the order of
// the daemon's messages (a kill that follows it sees it under way), and
// the rank is started beside the starts under way (parallelStarts).
func (g *node) handle(body []byte, files []*os.File, own *unix.CPUSet) {
	s, err := decodeStart(body, files)
	if err != nil {
		g.report(Report{Kind: Failed, Job: s.Job, Rank: s.Rank, Status: errmgr.StatusFailed, Err: err.Error()})
		closeFiles(files)
		return
	}
	j, err := g.beginStart(s)
	if err != nil {
		g.failed(s, err)
		closeFiles(files)
		return
	}
	g.starts.begin()
	go func() {
		defer g.starts.end()
		g.start(s, j, own)
		closeFiles(files) // the rank has its copies
	}()
}

// beginStart notes a start under way for start s's job.
func (g *node) beginStart(s RankStart) (*job, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	j, err := g.jobFor(s)
	if err == nil {
		j.starting++
		g.starting++
	}
	return j, err
}

// start starts a rank in a session (and so a process group) of its own,
// in its job's cgroup, on its CPUs, at a raised oom_score_adj, and says whether it runs. A
// session per rank, as Hydra's proxy makes: with the kernel's autogroup
// scheduling each session is one group whose share of the CPUs is
// that of a single process, so 64 ranks in mpirun's session together got
// what one process of another session gets (an MPICH barrier of 64
// ranks on a loaded 2-core host: 7-8 s, against 4 s under Hydra).
func (g *node) start(s RankStart, j *job, own *unix.CPUSet) {
	cmd := &exec.Cmd{Path: s.Path, Args: s.Args, Env: append(s.Env, JobVar+"="+strconv.Itoa(s.Job)), Dir: s.Dir, Stdout: s.Stdout, Stderr: s.Stderr,
		ExtraFiles: s.Files, SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if s.Stdin != nil {
		cmd.Stdin = s.Stdin
	}
	cmd, err := g.startIn(j, cmd, func(cmd *exec.Cmd) error { return startOn(cmd, s.CPUs, own, &g.oom) })
	g.mu.Lock()
	defer g.mu.Unlock()
	j.starting--
	g.starting--
	defer g.forgetEarly()
	if err != nil {
		g.failed(s, err)
		return
	}
	pid := cmd.Process.Pid
	cmd.Process.Release() // its pidfd: the reaper waits for the rank, by pid
	g.report(Report{Kind: Running, Job: s.Job, Rank: s.Rank, Pid: pid})
	if ws, reaped := g.early[pid]; reaped {
		delete(g.early, pid)
		g.report(Report{Kind: Exited, Job: s.Job, Rank: s.Rank, Wait: ws})
	} else {
		g.ranks[pid] = started{job: s.Job, rank: s.Rank}
	}
	g.mem.noteStart()
	g.wakeReaper()
}

// failed reports that start s failed.
func (g *node) failed(s RankStart, err error) {
	g.report(Report{Kind: Failed, Job: s.Job, Rank: s.Rank, Status: status.ExecStatus(err),
		Err: fmt.Sprintf("cannot run %s: %v", s.Args[0], status.UnwrapExec(err))})
}

// forgetEarly drops the ends of children reaped during starts once no
// start is under way: they were not ranks. Called under the lock.
func (g *node) forgetEarly() {
	if g.starting == 0 {
		clear(g.early)
	}
}

// startOn starts cmd bound to cpus (own when none), then binds the
// thread back to own. Affinity is per thread and the rank inherits its
// forker's, so the thread is locked for the start alone, and set even
// for an unbound rank (a thread the runtime made during a bound start
// inherited that rank's CPUs): a goroutine locked for the guard's life
// would hand the one P between two threads each time it waits.
func startOn(cmd *exec.Cmd, cpus []int, own *unix.CPUSet, oom *oomScore) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	set := *own
	if len(cpus) > 0 {
		set.Zero()
		for _, id := range cpus {
			set.Set(id)
		}
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil && len(cpus) > 0 {
		return fmt.Errorf("cannot bind to its CPUs: %w", err)
	}
	defer unix.SchedSetaffinity(0, own)
	lowerOOMScore := oom.raise()
	defer lowerOOMScore()
	return cmd.Start()
}

// report sends the daemon a report; a daemon gone hears nothing.
func (g *node) report(r Report) {
	g.sendMu.Lock()
	defer g.sendMu.Unlock()
	g.sock.send(r.encode(), nil)
}

func (g *node) wakeReaper() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// watch kills everything when the daemon stays stopped, or stuck in the
// kernel, for stoppedLimit (the job's guard-stopped bound): a daemon
// that cannot act cannot end its ranks, so the guard kills it and
// everything under itself. The bound is longer than the links' silence
// bound (timeouts.Validate), so that the daemon's parent reports the
// daemon first, as one that stopped answering. A daemon stopped by a
// debugger is left alone, and so is one whose ranks are all stopped: the
// job is suspended (Ctrl-Z stops the ranks, then mpirun, which may be
// this daemon), not out of control. Its ticks also release the memory a
// burst of starts left (memory.look).
func (g *node) watch(parent int, stoppedLimit time.Duration) {
	tick := time.NewTicker(timeouts.GuardPollMS * time.Millisecond)
	var stoppedSince time.Time
	var last sample
	for now := range tick.C {
		g.mem.look()
		g.starts.look()
		s := sampleOf(parent)
		hung := s.hung(last)
		last = s
		if !hung || g.ranksStopped() {
			stoppedSince = time.Time{}
		} else if stoppedSince.IsZero() {
			stoppedSince = now
		} else if now.Sub(stoppedSince) >= stoppedLimit && os.Getppid() == parent {
			syscall.Kill(parent, syscall.SIGKILL)
			g.killAll()
		}
	}
}

// ranksStopped says whether the guard has ranks running and every one
// of them is stopped (state T).
func (g *node) ranksStopped() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for pid := range g.ranks {
		if f := statFields(pid); len(f) == 0 || f[0] != "T" {
			return false
		}
	}
	return len(g.ranks) > 0
}

func firstOr(args []string, or string) string {
	if len(args) == 0 {
		return or
	}
	return args[0]
}
