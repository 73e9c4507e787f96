// Package guard is a node's guard: the one process that starts every
// rank of the job on its node and keeps anything they started from
// outliving the job (a subreaper that kills everything under it at the
// job's end or its daemon's death), the daemon's handle on it, and the
// node-local containment beside it: the job's cgroup, and scratch
// directories that the next daemon sweeps when a daemon was killed
// outright. cmd/prsh-guard is its binary.
//
// # The daemon's socket
//
// The daemon starts the guard once per node, ahead of its first start of
// ranks (mpirun, for a job on its host alone, in its first init: package
// early), as `prsh-guard GuardArg STOPPED-MS`, with its end of a unix
// SOCK_SEQPACKET socket pair as descriptor 3, and keeps it for its own
// life: a DVM's daemon, for every job it runs. Each message is cut into
// datagrams of at most 32 KiB; a datagram's first byte is 1 when more of
// the message follows and 0 in its last, and the descriptors a message
// passes (SCM_RIGHTS) ride on its first datagram. A message is its kind,
// one byte, then its fields in order, each an unsigned varint (n) or a
// string (s: a varint length, then the bytes); a list is a count, then
// its items. The daemon sends:
//
//	'S' start a rank: job n, job cgroup s ("" none), rank n, path s,
//	    dir s, argv [s], env [s], CPUs [n] (none: unbound), has-stdin n
//	    (0 or 1), extra n; it passes, in order, the rank's stdout, its
//	    stderr, its stdin if it has one (else /dev/null), and the extra
//	    descriptors, which the rank gets from 3 on (its PMI socket).
//	'K' kill a job: job n. Its ranks' process groups, its cgroup and
//	    every process under the guard that is the job's (below) are
//	    killed until none is left; later starts of the job fail. The
//	    guard and the other jobs go on.
//
// and the guard answers each start (several run side by side, so the
// answers may come in another order than the starts), then reports the
// end of each rank that ran, always after its answer:
//
//	'R' running: job n, rank n, pid n (the rank's process group is its pid)
//	'F' not started: job n, rank n, the shell's status n (127, 126...), why s
//	'X' exited: job n, rank n, its raw wait status n
//
// The daemon's end closing (it exited, or was killed) ends every job:
// the guard kills everything under it, removes the jobs' cgroups and
// exits. The daemon signals the ranks' process groups itself.
//
// Which job a process under the guard is of, once it left its rank's
// group and its parent died (it came back to the guard, the subreaper):
// the guard gives each rank JobVar (the job's number), which what it
// starts inherits; a process without it (it cleared its environment) is
// of the job being killed when that job is the guard's only one, and is
// otherwise left for such a moment or the guard's end, never killed
// while it may be a running job's. Where a job has a cgroup, its kill
// takes everything in it, whatever its environment.
package guard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"prsh/ranks/guard/early"
)

// GuardArg as argv[1] makes orted, or prsh-guard, its node's guard;
// GuardArgPrefix begins the GuardArg of every version (early.Arg says
// why a version).
const (
	GuardArg       = early.Arg
	GuardArgPrefix = early.ArgPrefix
)

// The ranks of a node run under its guard: a small process that starts
// each rank in a session and process group of its own (numbered after
// the rank), reports how each rank ended, and makes sure that nothing a
// rank started outlives the job. The guard is the child subreaper of
// everything under it, so a process that leaves its rank's group or
// session (setsid, a double fork, a daemon) still comes back to the
// guard when its parent dies, and cannot reach init. The guard runs in
// a process group of its own, so that the daemon's signals to a rank's
// group never reach it. It kills a job's processes when its daemon asks
// (the job's end), and everything under it when the daemon's end of the
// socket closes (the daemon exited or died) or the daemon stays stopped
// or stuck in the kernel too long (watch).
//
// Why a process beside the daemon, and why its own binary. The
// guarantees need a process that outlives the daemon: a daemon killed
// outright must still take with it what its ranks started (the job
// cgroup would, but no one is left to kill it), and a daemon stopped or
// stuck in the kernel acts on nothing. The daemon itself as child
// subreaper, with a parent-death signal on the ranks, keeps neither: the
// parent-death signal is not inherited by what a rank forks, so escapees
// go to init when the daemon dies, and nothing watches a stopped daemon.
// One guard serves all the node's ranks, handed each rank's pipes and PMI
// socket over its socket, so that a node of 64 ranks runs one guard, not
// 64, and a DVM's daemon one for all its jobs, not one a job (a guard's
// start is most of a small job's cost on a node). It is a binary of its own (cmd/prsh-guard: static, without the
// PMIx libraries); orted guards with itself (GuardArg) where that binary
// is not beside it.

// guardSocketFD is the guard's end of its daemon's socket.
const guardSocketFD = early.SocketFD

// Guard is the node's guard as its daemon holds it. Its sends come from
// one goroutine, its reads (Next) from another.
type Guard struct {
	proc *os.Process

	mu       sync.Mutex    // sock, closed by Wait while sends may still come; held only to read or change it
	sock     *socket       // the daemon's end; nil once closed
	said     firstLine     // the first line the guard wrote on its stderr
	saidDone chan struct{} // closed once its stderr is read to the end
	early    bool          // started at mpirun's init (package early)
	// waited is closed once Wait has reaped the guard, once; status is
	// how it ended.
	reap   sync.Once
	waited chan struct{}
	status syscall.WaitStatus
}

// Start starts the node's guard. stoppedLimit is how long the guard lets
// its daemon stay stopped (the job's guard-stopped bound). The guard
// runs in the daemon's cgroup; each job's ranks in their job's
// (RankStart.Cgroup).
func Start(stoppedLimit time.Duration) (*Guard, error) {
	if stoppedLimit < time.Millisecond {
		return nil, fmt.Errorf("the guard's bound on a stopped daemon must be at least 1ms, not %v", stoppedLimit)
	}
	if p := early.Take(stoppedLimit.Milliseconds()); p != nil {
		g, err := adopt(p)
		if g != nil {
			g.early = true
		}
		return g, err
	}
	self, err := guardBinary()
	if err != nil {
		return nil, fmt.Errorf("cannot find orted to guard the ranks: %w", err)
	}
	p, err := early.Spawn(self, stoppedLimit.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("cannot start the ranks' guard %s: %w", self, err)
	}
	return adopt(p)
}

// adopt holds the guard of process p: its socket, its stderr's first
// line, its end.
func adopt(p *early.Process) (*Guard, error) {
	proc, err := os.FindProcess(p.Pid)
	if err != nil {
		p.Discard()
		return nil, fmt.Errorf("cannot start the ranks' guard: %w", err)
	}
	ours, err := newSocket(p.Socket, "guard socket") // closes it on failure
	if err != nil {
		syscall.Close(p.Stderr)
		p.Kill()
		return nil, fmt.Errorf("cannot start the ranks' guard: %w", err)
	}
	g := &Guard{proc: proc, sock: ours, waited: make(chan struct{}), saidDone: make(chan struct{})}
	stderr := os.NewFile(uintptr(p.Stderr), "guard stderr")
	go func() { // ends with the guard's stderr; Wait waits for it
		io.Copy(&g.said, stderr)
		stderr.Close()
		close(g.saidDone)
	}()
	return g, nil
}

// GuardBinary is the name of the guard's own binary, which the daemon
// looks for beside its own.
const GuardBinary = early.Binary

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

// Early says whether the guard was started at mpirun's init (package
// early) rather than by Start.
func (g *Guard) Early() bool { return g.early }

// Pid is the guard's process id.
func (g *Guard) Pid() int { return g.proc.Pid }

// StartRank asks the guard to start a rank; its answer comes on Next.
// The guard has its own copies of the rank's descriptors once it
// returns.
func (g *Guard) StartRank(s RankStart) error {
	m, files := s.encode()
	return g.send(m, files)
}

// KillJob asks the guard to kill job's ranks and everything they
// started; their ends are reported as they are reaped.
func (g *Guard) KillJob(job int) error { return g.send(newMessage(kindKill).int(job), nil) }

// KillProcess kills the guard's own process, for a guard that does not
// answer: what it started is then the caller's to kill.
func (g *Guard) KillProcess() { g.proc.Kill() }

// End closes the daemon's side of the socket: the guard kills
// everything under it, reports the ranks' ends and exits.
func (g *Guard) End() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sock != nil {
		g.sock.shutdown()
	}
}

// ErrGone is a message to a guard that has ended, or is ending: its
// socket is closed or broken. Next then fails too, and Ended says how it
// ended once it is reaped.
var ErrGone = errors.New("the ranks' guard has ended")

// send sends outside the lock: a send blocked on a full socket (the
// guard blocked in turn reporting ends to this daemon) held Next from
// reading those reports, and neither side ever moved again.
func (g *Guard) send(m message, files []*os.File) error {
	g.mu.Lock()
	sock := g.sock
	g.mu.Unlock()
	if sock == nil {
		return ErrGone
	}
	err := sock.send(m, files)
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("%w: %w", ErrGone, err)
	}
	return err
}

// Next is the guard's next report; an error once the guard has ended
// (io.EOF) or broke the protocol. Then call Wait.
func (g *Guard) Next() (Report, error) {
	g.mu.Lock()
	sock := g.sock
	g.mu.Unlock()
	if sock == nil {
		return Report{}, io.EOF
	}
	body, files, err := sock.receive()
	closeFiles(files) // the guard passes none
	if err != nil {
		return Report{}, err
	}
	return decodeReport(body)
}

// Wait waits for the guard to exit once Next has failed, and returns
// how it ended.
func (g *Guard) Wait() syscall.WaitStatus {
	g.reap.Do(func() {
		g.mu.Lock()
		if g.sock != nil {
			g.sock.close()
			g.sock = nil
		}
		g.mu.Unlock()
		g.proc.Kill() // it broke the protocol, if it has not exited
		if state, err := g.proc.Wait(); err == nil {
			g.status = state.Sys().(syscall.WaitStatus)
		}
		<-g.saidDone
		close(g.waited)
	})
	return g.status
}

// Ended waits until the guard has been reaped (by the caller of Wait),
// and returns how it ended.
func (g *Guard) Ended() syscall.WaitStatus {
	<-g.waited
	return g.status
}

// AwaitEnd waits for the guard's end, at most limit, and says whether
// it ended; it gives up at the first tick (every quiet) that finds the
// guard unable to act: stopped, or stuck in the kernel since the tick
// before, as the guard itself judges its daemon (sample.hung). A guard
// on a loaded host may take seconds to kill and reap, as its daemon did
// to ask; one that cannot act would hold its daemon until the limit.
func (g *Guard) AwaitEnd(quiet, limit time.Duration) bool {
	tick := time.NewTicker(quiet)
	defer tick.Stop()
	deadline := time.After(limit)
	prev := sampleOf(g.Pid())
	for {
		select {
		case <-g.waited:
			return true
		case <-deadline:
			return false
		case <-tick.C:
			now := sampleOf(g.Pid())
			if now.hung(prev) {
				return false
			}
			prev = now
		}
	}
}

// Said is the first line the guard wrote on its stderr (why it could
// not serve: a guard of another prsh, a crash), once Wait has returned.
func (g *Guard) Said() string { return string(g.said.line) }

// firstLine keeps the first line written to it, up to maxLine bytes.
type firstLine struct {
	line []byte
	full bool
}

const maxLine = 512

func (f *firstLine) Write(p []byte) (int, error) {
	if !f.full {
		line, _, ended := bytes.Cut(p, []byte("\n"))
		f.line = append(f.line, line[:min(len(line), maxLine-len(f.line))]...)
		f.full = ended || len(f.line) == maxLine
	}
	return len(p), nil
}
