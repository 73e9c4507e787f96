package guard

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"prsh/errmgr/status"
)

// reapAll reaps every child of the guard: the rank, whose end it reports,
// and whatever the guard inherited as a subreaper. Once no child is left
// nothing is left under the guard, and the guard exits as the rank did.
func reapAll(rank int, report *os.File) {
	var rankStatus syscall.WaitStatus
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case err == syscall.EINTR:
		case err != nil: // ECHILD
			if killing.Load() {
				leaveCgroup()
			}
			os.Exit(status.ExitStatus(rankStatus))
		case pid == rank:
			rankStatus = ws
			fmt.Fprintf(report, "%d\n", uint32(ws))
			report.Close()
		}
	}
}

// killAll kills everything under the guard: the rank's group, then each
// child, until reapAll finds none left and exits. A killed child's own
// children come to the guard in turn, so the whole tree goes, whatever
// group or session its processes moved to. It never returns.
func killAll(group int) {
	killing.Store(true)
	for {
		syscall.Kill(-group, syscall.SIGKILL) // no one else can own the group: its number is our pid
		for _, pid := range children(os.Getpid()) {
			killChild(pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killing is set once the guard kills everything under it: the job is
// over, and no guard will start in the job's cgroup any more.
var killing atomic.Bool

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

// children lists the children of process pid, from every one of its
// threads (an orphan comes back to one of them).
func children(pid int) []int {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if child, err := strconv.Atoi(f); err == nil {
				out = append(out, child)
			}
		}
	}
	return out
}

// statFields are the fields of /proc/pid/stat after the command name
// (which may hold spaces but ends at the last parenthesis): state first.
//
// It reads with plain system calls: a guard asks once a second for the
// whole life of its rank, and os.ReadFile's registration of the file with
// the poller (which /proc refuses) doubles the calls each time.
func statFields(pid int) []string {
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer syscall.Close(fd)
	var buf [1024]byte // a stat line is at most a few hundred bytes
	n, err := syscall.Read(fd, buf[:])
	if err != nil || n <= 0 {
		return nil
	}
	s := string(buf[:n])
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

// hung says whether pid cannot act: stopped by a signal (state T; a stop
// under a tracer is t) or in an uninterruptible sleep (D). The caller
// decides for how long is too long.
func hung(pid int) bool {
	f := statFields(pid)
	return len(f) > 0 && (f[0] == "T" || f[0] == "D")
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
