// Package status is the process side of errmgr: how a process's end
// reads to the user and to the shell. (errmgr itself is pure; this needs
// the system's wait statuses and errors.)
package status

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"prsh/errmgr"
)

// UnwrapExec keeps the cause of a failed lookup, without the wrappers
// that would repeat the program's name.
func UnwrapExec(err error) error {
	var e *exec.Error
	if errors.As(err, &e) {
		err = e.Err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return err
}

// ExecStatus is what a shell would exit with: 127 not found, 126 not
// executable.
func ExecStatus(err error) int {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, os.ErrNotExist):
		return 127
	case errors.Is(err, os.ErrPermission):
		return 126
	}
	return errmgr.StatusFailed
}

// ExitStatus is the shell's view: the exit code, or 128+N for signal N.
func ExitStatus(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// Describe says how a process ended, for the one line the user reads.
func Describe(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return fmt.Sprintf("was killed by signal %d (SIG%s)", int(ws.Signal()), SignalName(ws.Signal()))
	}
	return fmt.Sprintf("exited with status %d", ws.ExitStatus())
}

// DescribeOOMKill says how a process ended that the kernel's OOM killer
// killed: its signal, named after the cause, which the user acts on.
func DescribeOOMKill(ws syscall.WaitStatus) string {
	return fmt.Sprintf("was killed by the kernel's OOM killer (out of memory; signal %d)", int(ws.Signal()))
}

// SignalName is a signal's name without the SIG prefix: "KILL".
func SignalName(s syscall.Signal) string {
	return strings.TrimPrefix(unix.SignalName(s), "SIG")
}
