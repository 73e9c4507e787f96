// Package stalltest stops a test's own binary, run again as a child, for a
// while, as a starved machine stops a process: a child that holds a timer
// or both ends of a link shows what they make of time they slept through.
package stalltest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// childEnv marks the child: the test it runs takes the child's part.
const childEnv = "PRSH_STALL_CHILD"

// Child says whether this process is the child of Stop.
func Child() bool { return os.Getenv(childEnv) != "" }

// Stop runs the test named test again as a child, waits for its first
// line, which must be ready, stops it for stopFor, continues it, and
// returns the lines it wrote after ready. A child that fails fails t.
func Stop(t *testing.T, test, ready string, stopFor time.Duration) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != ready {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %q, want %q", lines.Text(), ready)
	}
	cmd.Process.Signal(syscall.SIGSTOP)
	waitStopped(t, cmd.Process.Pid)
	time.Sleep(stopFor)
	cmd.Process.Signal(syscall.SIGCONT)
	var said []string
	for lines.Scan() {
		said = append(said, lines.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("child: %v; it said: %q", err, said)
	}
	return said
}

// waitStopped waits until every thread of pid is stopped: a SIGSTOP takes
// effect as each thread next enters the kernel, later on a loaded
// machine, and the stop must last stopFor from then (a child that ran
// 12 ms past the signal once measured 2738 ms of a 3 s stop).
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if allStopped(pid) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d not stopped 10 s after SIGSTOP", pid)
		}
	}
}

// allStopped says whether every thread of pid is in state T (stopped).
func allStopped(pid int) bool {
	stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if len(stats) == 0 {
		return false
	}
	for _, path := range stats {
		stat, err := os.ReadFile(path)
		i := bytes.LastIndexByte(stat, ')')
		if err != nil || i < 0 || i+2 >= len(stat) || stat[i+2] != 'T' {
			return false
		}
	}
	return true
}
