package guard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ScratchDir makes a private directory in $TMPDIR for this process,
// named prefix-PID-START-RANDOM after it (START: when it started, in
// clock ticks since boot), and first removes every directory of the same
// prefix whose process is gone. A daemon killed outright cannot remove
// its own scratch directory; the next daemon of the same kind on the
// node does, while the name tells it from a live one's (the start time
// guards against a reused pid). The error names what the directory is
// for (what) and where it could not be made: a full disk is the usual
// cause, and the user's to fix.
func ScratchDir(prefix, what string) (string, error) {
	sweepScratch(os.TempDir(), prefix)
	start, ok := startTime(os.Getpid())
	if !ok {
		return "", fmt.Errorf("cannot make %s: cannot read this process's start time in /proc", what)
	}
	dir, err := os.MkdirTemp("", prefix+strconv.Itoa(os.Getpid())+"-"+strconv.FormatUint(start, 10)+"-")
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if err != nil {
		return "", fmt.Errorf("cannot make %s in %s: %w", what, os.TempDir(), err)
	}
	return dir, nil
}

// sweepScratch removes dir's prefix-PID-START-* directories, owned by
// this user, whose process PID no longer runs since START.
func sweepScratch(dir, prefix string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, start, ok := scratchOwner(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		if now, alive := startTime(pid); alive && now == start {
			continue
		}
		path := filepath.Join(dir, e.Name())
		var st syscall.Stat_t
		if syscall.Lstat(path, &st) == nil && int(st.Uid) == os.Getuid() {
			os.RemoveAll(path)
		}
	}
}

// scratchOwner parses prefix-PID-START-RANDOM.
func scratchOwner(name, prefix string) (pid int, start uint64, ok bool) {
	rest, found := strings.CutPrefix(name, prefix)
	f := strings.SplitN(rest, "-", 3)
	if !found || len(f) != 3 {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	return pid, start, err1 == nil && err2 == nil && pid > 0
}
