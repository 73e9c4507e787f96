// Package fdtest brings a test process to its open-files limit, for the
// tests of what happens there.
package fdtest

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// Exhaust lowers the process's open-files limit a little above what is
// open and fills its descriptor table but for spare descriptors, until
// the test ends (or the returned function is called, once).
func Exhaust(t testing.TB, spare int) (restore func()) {
	t.Helper()
	var saved syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &saved); err != nil {
		t.Fatal(err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: uint64(len(fds) + 64), Max: saved.Max}); err != nil {
		t.Fatal(err)
	}
	var fillers []*os.File
	restore = func() {
		for _, f := range fillers {
			f.Close()
		}
		fillers = nil
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &saved)
	}
	t.Cleanup(restore)
	for {
		f, err := os.Open(os.DevNull)
		if errors.Is(err, syscall.EMFILE) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		fillers = append(fillers, f)
	}
	for range spare {
		fillers[len(fillers)-1].Close()
		fillers = fillers[:len(fillers)-1]
	}
	return restore
}
