package guard

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// Where no cgroup counts OOM kills (cgroup v1, or v2 without the memory
// controller), the kernel's log still names each victim: it records
// "Out of memory: Killed process PID (comm) ..." (or "Memory cgroup out
// of memory: ...") before it sends the SIGKILL, so the record is there
// by the time the victim is reaped. The PID is the one the kernel's own
// pid namespace sees, so a guard in another pid namespace cannot tell.
// The log does not say when the process started: a pid reused after an
// OOM kill still in the log would be taken for that kill's victim, which
// needs the pids to wrap and a SIGKILL from outside the job.

// kmsgRecordMax is more than one record of /dev/kmsg holds: a read into
// a smaller buffer fails.
const kmsgRecordMax = 16 << 10

// initPIDNamespace is the kernel's own pid namespace as
// /proc/self/ns/pid names it (its inode number is fixed).
const initPIDNamespace = "pid:[4026531836]"

// KernelLoggedOOMKill says whether the kernel's log holds an OOM kill of
// the process pid, as the guard sees it. It says no where the log cannot
// be read (dmesg_restrict without CAP_SYSLOG) or the guard runs in a pid
// namespace of its own.
func KernelLoggedOOMKill(pid int) bool {
	if ns, err := os.Readlink("/proc/self/ns/pid"); err != nil || ns != initPIDNamespace {
		return false
	}
	// Not an os.File: Go would wait for more records instead of
	// returning EAGAIN at the end of the log.
	fd, err := syscall.Open("/dev/kmsg", syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	buf := make([]byte, kmsgRecordMax)
	for {
		n, err := syscall.Read(fd, buf)
		switch {
		case errors.Is(err, syscall.EPIPE): // records overwritten as we read: go on with the next
		case errors.Is(err, syscall.EINTR):
		case err != nil || n <= 0:
			return false
		case recordsOOMKill(buf[:n], pid):
			return true
		}
	}
}

// recordsOOMKill says whether a record of /dev/kmsg
// ("prio,seq,usec,flags;message\n", then continuation lines that begin
// with a space) is the OOM killer's kill of pid.
func recordsOOMKill(record []byte, pid int) bool {
	_, message, ok := bytes.Cut(record, []byte(";"))
	if !ok {
		return false
	}
	message, _, _ = bytes.Cut(message, []byte("\n"))
	return bytes.Contains(message, []byte("Killed process "+strconv.Itoa(pid)+" ("))
}
