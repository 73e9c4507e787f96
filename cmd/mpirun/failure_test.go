package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"prsh/testbed"
)

// TestUnreachableNodes: each broken node ends the job quickly with one line
// naming the node and the cause, status 255, and nothing left running.
func TestUnreachableNodes(t *testing.T) {
	cases := []struct {
		name  string
		fault testbed.Fault
		line  string
	}{
		{"refuses ssh", testbed.Fault{Refuse: true}, `^mpirun: node005: ssh: .*connection refused`},
		{"hangs in the ssh handshake", testbed.Fault{Hang: true}, `^mpirun: node005: ssh: .*(timed out|timeout)`},
		{"wrong host key", testbed.Fault{WrongHostKey: true}, `^mpirun: node005: ssh: host key mismatch .*SHA256:`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(t, testbed.Config{Nodes: 7, Faults: map[string]testbed.Fault{"node005": tc.fault}})
			for _, degree := range []string{"2", "32"} {
				res := mpirun(t, c, "--spawn-degree", degree, "--ssh-connect-timeout", "2s", "sleep", "60")
				if res.status != 255 {
					t.Errorf("δ=%s: exit %d, want 255; stderr:\n%s", degree, res.status, res.stderr)
				}
				checkOneLine(t, res.stderr, tc.line)
			}
		})
	}
}

func TestHostDoesNotResolve(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	res := mpirun(t, c, "-H", "node001,no-such-host.invalid", "/bin/true")
	if res.status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: no-such-host.invalid: .*no such host`)
}

func TestOrtedMissing(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	res := mpirun(t, c, "--orted", "/nonexistent/orted", "/bin/true")
	if res.status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: node00[1-3]: orted exited before calling back: exit status 127: .*/nonexistent/orted.*not found`)
}

// TestOrtedNeverCallsBack: a daemon that starts but never connects is named
// after --callback-timeout, and its session is closed.
func TestOrtedNeverCallsBack(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	fake := filepath.Join(t.TempDir(), "orted")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexec cat >/dev/null\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := mpirun(t, c, "--orted", fake, "--callback-timeout", "1s", "/bin/true")
	if res.status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: node00[12]: orted started but did not call back within 1s`)
}

// TestNodeDiesDuringPhase1: node003 dies (every process killed) right
// after its daemon starts, while the tree is still being spawned below
// it; the job ends naming it, and nothing is left anywhere.
func TestNodeDiesDuringPhase1(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 15, SSHLatency: 50 * time.Millisecond,
		Faults: map[string]testbed.Fault{"node003": {KillAfter: time.Millisecond}}})
	res := mpirun(t, c, "--spawn-degree", "2", "sleep", "60")
	if res.status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: node003: (orted exited before calling back|orted exited unexpectedly|lost the link to its orted): .*`)
}

// TestOrtedKilled: an orted killed with SIGKILL while its ranks run ends
// the job with one line naming its node; its ranks, and what they started,
// do not survive it.
func TestOrtedKilled(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 7, Slots: 2})
	cmd, stderr, _ := started(t, c, 14, "--spawn-degree", "2", "-np", "14", "sh", "-c",
		`touch "$MARKS/$PRSH_RANK"; sleep 1000; echo never`)
	victim := ortedOf(t, c, "node003")
	syscall.Kill(victim, syscall.SIGKILL)
	if status := waitExit(t, cmd); status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", status, stderr)
	}
	checkOneLine(t, stderr.String(), `^mpirun: node003: (orted exited unexpectedly: signal KILL|lost the link to its orted: .*)$`)
	if left := c.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
		t.Fatalf("left running after an orted was killed: %+v", left)
	}
}

// ortedOf finds the pid of the orted running on a node.
func ortedOf(t *testing.T, c *testbed.Cluster, node string) int {
	t.Helper()
	for _, p := range c.Leftovers() {
		if p.Node == node && strings.HasPrefix(p.Cmdline, filepath.Join(bin, "orted")+" --parent") {
			return p.PID
		}
	}
	t.Fatalf("no orted on %s", node)
	return 0
}

// TestLinkCut: node003's connections are cut while its ranks run (its
// processes live on). The job ends naming node003, within the keep-alive
// bounds, and nothing is left anywhere.
func TestLinkCut(t *testing.T) {
	if _, err := exec.LookPath("ss"); err != nil {
		t.Skip("needs ss from iproute2")
	}
	c := cluster(t, testbed.Config{Nodes: 7, Faults: map[string]testbed.Fault{"node003": {DropLinksAfter: 2 * time.Second}}})
	res := mpirun(t, c, "--spawn-degree", "2", "sleep", "60")
	if res.status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: node003: lost the link to its orted: .*`)
}
