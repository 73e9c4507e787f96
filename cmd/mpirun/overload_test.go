package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"prsh/testbed"
)

// TestSlowIsNotFailed: a launch on a deliberately overloaded machine at
// the default timeouts runs to the end, silently: its handshakes and
// daemons are late but keep progressing, which is not failure. 48 nodes
// flat from mpirun (48 ssh handshakes at once) share one CPU with 64 busy
// loops and the race detector: the slowest handshakes take 15-17 s
// (mpirun -v's "ssh command started"), over the 10 s connect timeout,
// which bounds the server's silence and not the handshake (a handshake
// that progresses may take 6 of them); with the bound counted from the
// handshake's start, the same launch ended "ssh: handshake timed out
// after 10s" (tried once). The callback timer's
// stretch while other daemons keep coming is not reached here (an orted
// calls back within 10 s of its session's start): the simulator's
// slow-machine script covers it.
func TestSlowIsNotFailed(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the machine")
	}
	c := cluster(t, testbed.Config{Nodes: 48})
	onOneCPU(t)
	hogCPU(t, 64)
	res := mpirun(t, c, "--spawn-degree", "48", "sh", "-c", `echo "$PRSH_TESTBED_NODE"`)
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, "")
	var want []string
	for _, n := range c.Nodes() {
		want = append(want, n.Name)
	}
	wantSet(t, res.stdout, want...)
}

// hogCPU runs n busy loops until the test ends. One shell forks them all
// in a process group of its own: n starts of a process from this (race
// detector) binary would take long on the very machine they load.
func hogCPU(t *testing.T, n int) {
	t.Helper()
	loops := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do (while :; do :; done) & i=$((i+1)); done; wait`, n)
	hog := exec.Command("sh", "-c", loops)
	hog.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := hog.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-hog.Process.Pid, syscall.SIGKILL)
		hog.Wait()
	})
}

// onOneCPU confines this process, every thread of it, and so all it starts
// from now on (mpirun, the nodes' daemons, the hogs) to one CPU until the
// test ends: the overload stays on that CPU, and the tests of other
// packages that go test runs beside this one keep the others.
func onOneCPU(t *testing.T) {
	t.Helper()
	var all, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	last := 0
	for cpu := range 1024 {
		if all.IsSet(cpu) {
			last = cpu
		}
	}
	one.Set(last)
	setAffinity(t, one)
	t.Cleanup(func() { setAffinity(t, all) })
}

// setAffinity gives every thread of this process the CPU set. A thread
// started meanwhile inherits its creator's set; one whose creator was not
// yet set is found on the next pass.
func setAffinity(t *testing.T, set unix.CPUSet) {
	t.Helper()
	for range 100 {
		entries, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatal(err)
		}
		done := true
		for _, e := range entries {
			tid, _ := strconv.Atoi(e.Name())
			var cur unix.CPUSet
			if unix.SchedGetaffinity(tid, &cur) == nil && cur == set {
				continue
			}
			done = false
			unix.SchedSetaffinity(tid, &set) // ESRCH: it has just ended
		}
		if done {
			return
		}
	}
	t.Fatal("this process's threads kept changing their CPU sets")
}
