// Package profile tunes and observes the daemon processes: a soft memory
// limit, and CPU profiles for performance work (build with
// `make bin CPUPROFILE=1`, set PRSH_CPUPROFILE=DIR, and each process
// writes DIR/NAME.PID.pprof when it exits normally).
//
// CPU profiles are in a build tag of their own because runtime/pprof in a
// binary costs every run: it keeps the runtime sampling allocations for a
// memory profile (the linker turns that off when nothing can read one),
// and it is 140 KB more of binary to map.
package profile

import (
	"os"
	"runtime/debug"
)

// profileVar names the directory for CPU profiles.
const profileVar = "PRSH_CPUPROFILE"

// softMemoryLimit is where the collector starts working harder. The
// daemons' live memory is small and bounded by flow control; the limit
// keeps garbage from piling up when a busy node starves the collector of
// CPU. GOMEMLIMIT, when set, wins.
const softMemoryLimit = 64 << 20

// LimitMemory sets the soft memory limit of a daemon process.
func LimitMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(softMemoryLimit)
	}
}
