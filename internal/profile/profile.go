// Package profile tunes and observes the daemon processes: a soft memory
// limit, and CPU profiles for performance work (set PRSH_CPUPROFILE=DIR and
// each process writes DIR/NAME.PID.pprof when it exits normally).
package profile

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
)

// Start begins profiling if PRSH_CPUPROFILE is set; call the returned
// function before exiting.
func Start(name string) (stop func()) {
	dir := os.Getenv("PRSH_CPUPROFILE")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s.%d.pprof", name, os.Getpid())))
	if err != nil {
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

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
