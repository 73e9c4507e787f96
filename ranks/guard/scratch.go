package guard

import (
	"fmt"
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
// guards against a reused pid).
func ScratchDir(prefix string) (string, error) {
	sweepScratch(os.TempDir(), prefix)
	start, ok := startTime(os.Getpid())
	if !ok {
		return "", fmt.Errorf("scratch directory: cannot read this process's start time in /proc")
	}
	return os.MkdirTemp("", prefix+strconv.Itoa(os.Getpid())+"-"+strconv.FormatUint(start, 10)+"-")
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
