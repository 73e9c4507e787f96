package guard

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// reapAll reaps every child of the guard: the ranks, whose ends it
// reports, and whatever the guard inherited as a subreaper. A child is
// reaped under the lock, so that a rank not yet reaped (in ranks) keeps
// its pid, and its process group's number, from reuse. Once the guard
// kills and no child is left, nothing is left under it, and it exits.
// It waits for SIGCHLD, not in waitid: a goroutine blocked in a system
// call would hold the guard's one P (see socket).
func (g *node) reapAll() {
	for {
		pid, err := exitedChild()
		switch {
		case err == syscall.EINTR:
		case err == nil && pid > 0:
			g.reap(pid)
		case err != nil && g.isKilling(): // ECHILD: nothing under the guard
			g.removeCgroups()
			os.Exit(0)
		default: // no child ended, or none runs
			select {
			case <-g.exits:
			case <-g.wake:
			}
		}
	}
}

func (g *node) reap(pid int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var ws syscall.WaitStatus
	syscall.Wait4(pid, &ws, 0, nil)
	if r, ok := g.ranks[pid]; ok {
		delete(g.ranks, pid)
		g.report(Report{Kind: Exited, Job: r.job, Rank: r.rank, Wait: ws})
	} else if g.starting > 0 { // perhaps a rank whose start is yet to note it
		g.early[pid] = ws
	}
}

// exitedChild returns the pid of a child that has ended, leaving it to
// be reaped, or 0 if none has (waitid with WNOWAIT and WNOHANG, which
// syscall does not wrap).
func exitedChild() (int, error) {
	var info [16]uint64 // a siginfo_t, aligned as its pointers; si_pid stays 0 if no child ended
	_, _, e := syscall.Syscall6(syscall.SYS_WAITID, unix.P_ALL, 0, uintptr(unsafe.Pointer(&info[0])),
		unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, 0, 0)
	if e != 0 {
		return 0, e
	}
	// si_pid follows si_signo, si_errno and si_code, aligned as a pointer.
	at := 3 * 4
	if unsafe.Sizeof(uintptr(0)) == 8 {
		at = 16
	}
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(&info[0]), at))), nil
}

func (g *node) isKilling() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.killing
}

// killAll kills everything under the guard: each job's cgroup, the
// process group of each rank not yet reaped, then each process that came
// back to the guard (orphaned), until reapAll finds no child left,
// removes the jobs' cgroups and exits. A killed process's own children
// come to the guard in turn, so the whole tree goes, whatever group or
// session its processes moved to. It never returns.
func (g *node) killAll() {
	g.mu.Lock()
	g.killing = true
	g.mu.Unlock()
	g.wakeReaper()
	for {
		g.mu.Lock()
		for _, j := range g.jobs {
			j.killCgroup()
		}
		for pid := range g.ranks {
			syscall.Kill(-pid, syscall.SIGKILL)
		}
		g.mu.Unlock()
		for _, pid := range orphaned() { // each rank went with its group above
			killChild(pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killChild SIGKILLs pid if it is still our child. reapAll may reap it
// at any moment and its number go to a stranger, so the kill goes through
// a pidfd of a process checked to be ours.
func killChild(pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if parentOf(pid) == os.Getpid() {
		unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	}
}

// statFields are the fields of /proc/pid/stat after the command name
// (which may hold spaces but ends at the last parenthesis): state first.
func statFields(pid int) []string {
	b, err := readProc("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil || len(b) == 0 {
		return nil
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

// readProc reads a small file of /proc or of a cgroup with plain system
// calls: a guard asks once a second for the whole life of its rank, and
// os.ReadFile's registration of the file with the poller (which such
// files refuse) doubles the calls each time.
func readProc(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	var buf [1024]byte
	var out []byte
	for {
		n, err := syscall.Read(fd, buf[:])
		if err != nil {
			return out, err
		}
		if n <= 0 {
			return out, nil
		}
		out = append(out, buf[:n]...)
	}
}

// sample is what the guard sees of its daemon at one tick: the state
// of its main thread and, in the kernel (D), how long and how often that
// thread has run (/proc/pid/schedstat).
type sample struct{ state, ran string }

func sampleOf(pid int) sample {
	f := statFields(pid)
	if len(f) == 0 {
		return sample{}
	}
	s := sample{state: f[0]}
	if s.state == "D" {
		b, _ := readProc("/proc/" + strconv.Itoa(pid) + "/schedstat")
		s.ran = string(b)
	}
	return s
}

// hung says whether a daemon sampled as s, and as prev a tick before,
// cannot act: stopped by a signal (T; a stop under a tracer is t), or in
// an uninterruptible sleep (D) that has lasted since prev, its thread
// not having run in between. A busy daemon on a loaded host passes
// through D often (page faults, cgroup locks) and may be seen there tick
// after tick; one stuck in the kernel stays. The caller decides for how
// long is too long.
func (s sample) hung(prev sample) bool {
	switch s.state {
	case "T":
		return true
	case "D":
		return prev.state == "D" && s.ran == prev.ran
	}
	return false
}

// parentOf is pid's parent, or -1 if pid is gone.
func parentOf(pid int) int {
	f := statFields(pid)
	if len(f) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return -1
	}
	return ppid
}
