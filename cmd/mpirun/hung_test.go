package main

import (
	"syscall"
	"testing"
	"time"

	"prsh/testbed"
)

// TestOrtedStopped: an orted stopped with SIGSTOP while its ranks run
// cannot act; its parent notices within the keep-alive bound and the job
// ends with one line saying that node003's orted stopped answering. Its
// ranks' guards notice that it stays stopped and kill it and its ranks
// (with what they left behind), so nothing is left on any node.
func TestOrtedStopped(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 7})
	marks := t.TempDir()
	cmd, stderr, _ := started(t, c, 7, "--spawn-degree", "2", "--stdin", "none", "-x", "M="+marks, "sh", "-c",
		escapees[0].start+waitMark+`touch "$MARKS/$PRSH_RANK"; exec sleep 300`)
	syscall.Kill(ortedOf(t, c, "node003"), syscall.SIGSTOP)
	if status := waitExit(t, cmd); status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", status, stderr)
	}
	checkOneLine(t, stderr.String(), `^mpirun: node003: orted stopped answering \(nothing heard from it for 20s\)$`)
	// The guards act 30 s after the stop, which is after mpirun exits.
	if left := c.WaitNoLeftovers(time.Minute); len(left) > 0 {
		c.KillLeftovers()
		t.Fatalf("left running after an orted was stopped: %+v", left)
	}
}
