package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"prsh/testbed"
	tbnodes "prsh/testbed/nodes"
)

// TestMaxStartupsRetried: every node's sshd is at its MaxStartups when a
// flat launch connects to all of them at once; they drop mpirun's
// connections until their startups end, and mpirun's retries then
// launch the job. The same through OpenSSH's client (--launch-agent),
// which exits 255 with kex_exchange_identification on each drop.
func TestMaxStartupsRetried(t *testing.T) {
	for _, agent := range []string{"native", "openssh"} {
		t.Run(agent, func(t *testing.T) {
			const n = 8
			faults := map[string]testbed.Fault{}
			for i := 1; i <= n; i++ {
				faults[tbnodes.Name(i, n)] = testbed.Fault{MaxStartups: 1}
			}
			c := cluster(t, testbed.Config{Nodes: n, Faults: faults})
			args := []string{"--spawn-degree", itoa(n)}
			if agent == "openssh" {
				args = append(args, "--launch-agent", "ssh -F "+c.SSHConfigPath()+" %h")
			}
			holders := holdStartups(t, c)
			cmd, stdout, stderr := startMpirun(t, c, append(args, "sh", "-c", `echo "$PRSH_TESTBED_NODE"`)...)
			for _, node := range c.Nodes() {
				waitDropped(t, c, node.Name, stderr)
			}
			for _, h := range holders {
				h.Close()
			}
			if status := waitExit(t, cmd); status != 0 {
				t.Fatalf("exit %d; stderr:\n%s", status, stderr)
			}
			checkOneLine(t, stderr.String(), "") // the tries are no failure
			var want []string
			for _, node := range c.Nodes() {
				want = append(want, node.Name)
			}
			wantSet(t, stdout.String(), want...)
			if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
				t.Fatalf("left running: %+v", left)
			}
		})
	}
}

// TestMaxStartupsNeverClears: node005 stays at its MaxStartups; its parent
// orted gives up after its tries, and the job ends naming node005 and the
// likely cause, with nothing left running.
func TestMaxStartupsNeverClears(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 7, Faults: map[string]testbed.Fault{"node005": {MaxStartups: 1}}})
	h, err := c.HoldStartup("node005")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	res := mpirun(t, c, "--spawn-degree", "2", "sleep", "60")
	if res.status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: node005: ssh: connection dropped during the handshake 5 times \(the node's sshd may be limiting concurrent logins: MaxStartups\)`)
	if got := c.Dropped("node005"); got != 5 {
		t.Errorf("node005 dropped %d connections, want 5", got)
	}
}

// holdStartups takes every node's startups (MaxStartups 1).
func holdStartups(t *testing.T, c *testbed.Cluster) []io.Closer {
	t.Helper()
	var out []io.Closer
	for _, node := range c.Nodes() {
		h, err := c.HoldStartup(node.Name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		out = append(out, h)
	}
	return out
}

// waitDropped waits until the node has dropped a connection.
func waitDropped(t *testing.T, c *testbed.Cluster, node string, stderr *lockedBuffer) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); c.Dropped(node) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s dropped no connection; mpirun's stderr:\n%s", node, stderr)
		}
	}
}

// startMpirun starts mpirun against the cluster without waiting.
func startMpirun(t *testing.T, c *testbed.Cluster, args ...string) (*exec.Cmd, *lockedBuffer, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "mpirun"), args...)
	cmd.Env = append(os.Environ(), c.Env()...)
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, stdout, stderr
}
