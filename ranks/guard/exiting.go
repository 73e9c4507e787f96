package guard

import "strconv"

// pfExiting is the kernel's PF_EXITING task flag: set as a process starts
// to exit, before its descriptors are closed.
const pfExiting = 0x4

// RankExiting says whether the rank the guard started as pid has begun
// to exit (or is gone). Whoever saw its socket close learned that no
// earlier than the kernel set PF_EXITING, so the answer is exact for
// such a witness, where waiting for the guard to report the exit would
// race with it.
func (g *Guard) RankExiting(pid int) bool {
	return parentOf(pid) != g.Pid() || exiting(pid)
}

// startTime is when pid started, in clock ticks since boot.
func startTime(pid int) (uint64, bool) {
	f := statFields(pid)
	if len(f) < 20 {
		return 0, false
	}
	t, err := strconv.ParseUint(f[19], 10, 64)
	return t, err == nil
}

// exiting reads the state and flags of /proc/pid/stat.
func exiting(pid int) bool {
	fields := statFields(pid)
	if len(fields) < 7 {
		return true
	}
	flags, err := strconv.ParseUint(fields[6], 10, 64)
	return err != nil || fields[0] == "Z" || fields[0] == "X" || flags&pfExiting != 0
}
