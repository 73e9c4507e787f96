// Package early starts the process of a node's guard (ranks/guard), with
// nothing but the syscall package, so that mpirun can start its node's
// guard in its first package init, before the runtime has initialized
// ssh, logging and flags: a job on mpirun's host alone (`mpirun -np 64
// ./app`) then pays the guard's start (a Go process's: 6 ms of CPU and 200
// page faults on the project's VM) beside mpirun's own start and planning instead of after
// them. guard.Start adopts that guard (Take), or starts one (Spawn).
// mpirun imports prsh/ranks/guard/early/formpirun for the start at init,
// and drops an unused one (Drop) once its plan gives its node no rank, and
// at its exit. An orted gains nothing from it: it starts its guard at its
// Welcome, and the wire-up after it already hides that start (measured on
// the testbed, with and without ssh latency).
package early

import (
	"sync"
	"syscall"
)

// Arg as argv[1] makes orted, or prsh-guard, its node's guard. It ends in
// the version of the guard's interface (its argv, descriptors and
// messages), raised by any change to them, so that a prsh-guard of
// another prsh left beside orted refuses to guard (ArgPrefix) instead of
// misreading what it is given.
const Arg = ArgPrefix + "-v5"

// ArgPrefix begins the Arg of every version, and is the whole of it
// before versions.
const ArgPrefix = "__rank-guard"

// Binary is the name of the guard's own binary, which a daemon looks for
// beside its own.
const Binary = "prsh-guard"

// DefaultStoppedMS is the guard's default bound on its daemon's being
// stopped (timeouts.Defaults' GuardStoppedMS, which a test keeps equal):
// the bound of a guard started at init, before the flags are read.
const DefaultStoppedMS = 30_000

// SocketFD is the guard's end of its daemon's socket.
const SocketFD = 3

// Process is a guard's process as its daemon holds it at its start.
type Process struct {
	Pid       int
	Socket    int   // the daemon's end of the guard's socket pair (close-on-exec)
	Stderr    int   // the read end of the guard's stderr (close-on-exec)
	StoppedMS int64 // the bound given in its argv
}

// Spawn starts path as a node's guard with bound stoppedMS on its daemon's
// being stopped: in a process group of its own, in /, its stdin and
// stdout /dev/null, its stderr a pipe, its end of a SOCK_SEQPACKET
// socket pair as SocketFD.
func Spawn(path string, stoppedMS int64) (*Process, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fds[1])
	var errPipe [2]int
	if err := syscall.Pipe2(errPipe[:], syscall.O_CLOEXEC); err != nil {
		syscall.Close(fds[0])
		return nil, err
	}
	defer syscall.Close(errPipe[1])
	null, err := syscall.Open("/dev/null", syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		syscall.Close(fds[0])
		syscall.Close(errPipe[0])
		return nil, err
	}
	defer syscall.Close(null)
	argv := []string{path, Arg, itoa(stoppedMS)}
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Dir:   "/",
		Env:   syscall.Environ(),
		Files: []uintptr{uintptr(null), uintptr(null), uintptr(errPipe[1]), uintptr(fds[1])},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		syscall.Close(fds[0])
		syscall.Close(errPipe[0])
		return nil, err
	}
	return &Process{Pid: pid, Socket: fds[0], Stderr: errPipe[0], StoppedMS: stoppedMS}, nil
}

// Discard closes the daemon's ends of a guard that was never given a
// rank, so has nothing under it, and kills it.
func (p *Process) Discard() {
	syscall.Close(p.Socket)
	syscall.Close(p.Stderr)
	p.Kill()
}

// Kill kills the guard's process and reaps it.
func (p *Process) Kill() {
	syscall.Kill(p.Pid, syscall.SIGKILL)
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(p.Pid, &ws, 0, nil); err != syscall.EINTR {
			return
		}
	}
}

var (
	mu      sync.Mutex
	started *Process // at init, until taken or dropped
)

// StartForLocalJob starts the guard beside this program's binary when
// its command line and environment (mpirun's) say that the job runs on
// this host alone (localJob); the guard is kept for Take. Where they
// cannot tell, or the binary is not there, it starts nothing: the
// daemon's own start comes later, as without it.
func StartForLocalJob() {
	getenv := func(k string) string { v, _ := syscall.Getenv(k); return v }
	if localJob(commandLine(), getenv, nodename) {
		startBesideSelf()
	}
}

// startBesideSelf starts the guard beside this program's binary, to be
// taken.
func startBesideSelf() {
	path, ok := besideSelf()
	if !ok {
		return
	}
	p, err := Spawn(path, DefaultStoppedMS)
	if err != nil {
		return
	}
	mu.Lock()
	started = p
	mu.Unlock()
}

// besideSelf is the guard's binary beside this program's, if it is there
// and executable.
func besideSelf() (string, bool) {
	buf := make([]byte, 4096)
	n, err := syscall.Readlink("/proc/self/exe", buf)
	if err != nil || n == len(buf) {
		return "", false
	}
	self := string(buf[:n])
	path := self[:lastSlash(self)+1] + Binary
	var st syscall.Stat_t
	if syscall.Stat(path, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || syscall.Access(path, 1) != nil {
		return "", false
	}
	return path, true
}

// Take hands over the guard started at init if its bound is stoppedMS;
// one with another bound is killed. Nil when there is none.
func Take(stoppedMS int64) *Process {
	mu.Lock()
	p := started
	started = nil
	mu.Unlock()
	if p != nil && p.StoppedMS != stoppedMS {
		p.Discard()
		return nil
	}
	return p
}

// Drop kills and reaps the guard started at init unless it was taken: it
// has never been given a rank.
func Drop() {
	mu.Lock()
	p := started
	started = nil
	mu.Unlock()
	if p != nil {
		p.Discard()
	}
}
