package main

import (
	"os"
	"os/signal"
	"syscall"
	"unsafe"
)

// foregroundTTY returns in as a terminal if it is one and the testbed's
// process group is its foreground group, i.e. run was started from an
// interactive shell. CMD, which runs in its own process group, must then be
// made the foreground group: it would otherwise be stopped by SIGTTIN when
// it reads the terminal (mpirun forwards stdin to rank 0), and Ctrl-C would
// reach only the testbed. Ctrl-C and Ctrl-Z then go straight to CMD.
// Known limitation: the testbed does not notice CMD stopping, so after
// Ctrl-Z the shell keeps waiting; resume CMD with kill -CONT from elsewhere.
func foregroundTTY(in any) *os.File {
	f, ok := in.(*os.File)
	if !ok || f == nil {
		return nil
	}
	pgrp, err := tcgetpgrp(f.Fd())
	if err != nil || pgrp != syscall.Getpgrp() {
		return nil
	}
	return f
}

// reclaimTTY makes the testbed's group the terminal's foreground again, so
// that a non-interactive parent (a script) does not find itself in the
// background. SIGTTOU is ignored for that, as tcsetpgrp from a background
// group raises it; the testbed is about to exit, so it stays ignored.
func reclaimTTY(tty *os.File) {
	signal.Ignore(syscall.SIGTTOU)
	pgrp := int32(syscall.Getpgrp())
	syscall.Syscall(syscall.SYS_IOCTL, tty.Fd(), syscall.TIOCSPGRP, uintptr(unsafe.Pointer(&pgrp)))
}

func tcgetpgrp(fd uintptr) (int, error) {
	var pgrp int32
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pgrp)))
	if errno != 0 {
		return 0, errno
	}
	return int(pgrp), nil
}
