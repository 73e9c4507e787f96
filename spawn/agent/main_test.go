package agent

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"prsh/internal/stall"
)

// TestMain fails the run if goroutines outlive the tests: every goroutine
// of the package must have an owner that ends it. The stall meter's one
// goroutine lives as long as the process, by design.
func TestMain(m *testing.M) {
	stall.Start()
	before := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 && !goroutinesSettle(before) {
		buf := make([]byte, 1<<20)
		fmt.Fprintf(os.Stderr, "goroutines left behind (%d, was %d):\n%s\n",
			runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		code = 1
	}
	os.Exit(code)
}

// goroutinesSettle waits for the goroutine count to fall back to n.
func goroutinesSettle(n int) bool {
	for end := time.Now().Add(hang); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if runtime.NumGoroutine() <= n {
			return true
		}
	}
	return false
}
