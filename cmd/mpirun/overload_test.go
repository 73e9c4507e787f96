package main

import (
	"os/exec"
	"testing"

	"prsh/testbed"
)

// TestSlowIsNotFailed: a launch on a deliberately overloaded machine (CPU
// hogs on every core, race-detector daemons, 48 nodes flat from mpirun)
// at the default timeouts runs to the end: its daemons call back late but
// keep coming, which is progress, not failure. mpirun opens 8 ssh sessions
// at a time: the ssh connect timeout bounds each handshake from the
// moment it starts, and 48 handshakes at once on a starved CPU exceed it
// (that bound is not stretched).
func TestSlowIsNotFailed(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the machine")
	}
	c := cluster(t, testbed.Config{Nodes: 48})
	hogCPU(t, 6)
	res := mpirun(t, c, "--spawn-degree", "48", "--ssh-max-sessions", "8", "sh", "-c", `echo "$PRSH_TESTBED_NODE"`)
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	var want []string
	for _, n := range c.Nodes() {
		want = append(want, n.Name)
	}
	wantSet(t, res.stdout, want...)
}

// hogCPU runs n busy loops until the test ends.
func hogCPU(t *testing.T, n int) {
	t.Helper()
	for range n {
		hog := exec.Command("sh", "-c", "while :; do :; done")
		if err := hog.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			hog.Process.Kill()
			hog.Wait()
		})
	}
}
