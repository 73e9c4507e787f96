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

// TestOrtedStoppedWithoutRanks: an orted that holds no rank (-np 2 on 7
// nodes) has no guard to kill it, so the daemon that started it does,
// through its ssh session, once it has given up on it: a leaf (node004)
// and a relay whose child (node007) loses its parent. Each job ends with
// the one line naming the stopped node, and nothing is left on any node.
// --hold-launch: the ranks run only once every orted has called back.
func TestOrtedStoppedWithoutRanks(t *testing.T) {
	for _, tc := range []struct{ name, node string }{
		{"leaf", "node004"},
		{"relay", "node003"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(t, testbed.Config{Nodes: 7})
			cmd, stderr, _ := started(t, c, 2, "--spawn-degree", "2", "--hold-launch", "--stdin", "none", "-np", "2",
				"sh", "-c", `touch "$MARKS/$PRSH_RANK"; exec sleep 300`)
			syscall.Kill(ortedOf(t, c, tc.node), syscall.SIGSTOP)
			if status := waitExit(t, cmd); status != 255 {
				t.Errorf("exit %d, want 255; stderr:\n%s", status, stderr)
			}
			checkOneLine(t, stderr.String(), `^mpirun: `+tc.node+`: orted stopped answering \(nothing heard from it for 20s\)$`)
			if left := c.WaitNoLeftovers(time.Minute); len(left) > 0 {
				c.KillLeftovers()
				t.Fatalf("left running after an orted without ranks was stopped: %+v", left)
			}
		})
	}
}
