package proc

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// pfExiting is the kernel's PF_EXITING task flag: set as a process starts
// to exit, before its descriptors are closed.
const pfExiting = 0x4

// RankExiting says whether the rank under guard pid has begun to exit (or
// is gone). Whoever saw its socket close learned that no earlier than the
// kernel set PF_EXITING, so the answer is exact for such a witness, where
// waiting for the guard to report the exit would race with it.
func RankExiting(guard int) bool {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(guard) + "/task/*/children")
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				return exiting(pid)
			}
		}
	}
	return true // no child: the rank has been reaped, or never started
}

// exiting reads the flags of /proc/pid/stat (the ninth field; the second,
// the command name, may hold spaces but ends at the last parenthesis).
func exiting(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 7 {
		return true
	}
	flags, err := strconv.ParseUint(fields[6], 10, 64)
	return err != nil || fields[0] == "Z" || fields[0] == "X" || flags&pfExiting != 0
}
