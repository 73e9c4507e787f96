// Package fdlimit words a process's running out of file descriptors so
// that the user knows which limit to raise. Go raises a process's soft
// open-files limit to its hard one at start, so the limit that bites is
// the hard one, which `ulimit -n` in the shell that started the process
// (or the ssh server's, or Slurm's) sets for it and its children.
package fdlimit

import (
	"errors"
	"fmt"
	"syscall"
)

// Explain adds to an error caused by a full descriptor table which limit
// was reached and what to do; who is this process as the user knows it
// ("mpirun", "the orted on node002"). Other errors are returned as they
// are.
func Explain(err error, who string) error {
	switch {
	case errors.Is(err, syscall.EMFILE):
		return &limitError{err, "the open-files limit of " + who + processLimit()}
	case errors.Is(err, syscall.ENFILE):
		return &limitError{err, "the system's open-files limit is reached (raise fs.file-max)"}
	}
	return err
}

// processLimit says what this process's limit is, after its name.
func processLimit() string {
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil {
		return " is reached: raise it (ulimit -n)"
	}
	return fmt.Sprintf(" is reached (ulimit -n %d): raise it", lim.Cur)
}

type limitError struct {
	err  error
	what string
}

func (e *limitError) Error() string { return e.err.Error() + "; " + e.what }
func (e *limitError) Unwrap() error { return e.err }
