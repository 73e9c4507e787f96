//go:build cpuprofile

package profile

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// Start begins profiling if PRSH_CPUPROFILE is set; call the returned
// function before exiting.
func Start(name string) (stop func()) {
	dir := os.Getenv(profileVar)
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
