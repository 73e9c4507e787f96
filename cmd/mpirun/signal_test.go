package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"prsh/testbed"
)

// started runs mpirun in the background and waits until every rank has
// written a line to a marker file.
func started(t *testing.T, c *testbed.Cluster, ranks int, args ...string) (*exec.Cmd, *bytes.Buffer, string) {
	t.Helper()
	marks := filepath.Join(t.TempDir(), "marks")
	if err := os.Mkdir(marks, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "mpirun"), append([]string{"-x", "MARKS"}, args...)...)
	cmd.Env = append(os.Environ(), append(c.Env(), "MARKS="+marks)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	deadline := time.Now().Add(time.Minute)
	for {
		entries, _ := os.ReadDir(marks)
		if len(entries) == ranks {
			return cmd, &stderr, marks
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d ranks started; stderr:\n%s", len(entries), ranks, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitExit waits for mpirun to end and returns its exit status.
func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
		return cmd.ProcessState.ExitCode()
	case <-time.After(time.Minute):
		t.Fatal("mpirun did not exit")
		return -1
	}
}

// TestInterrupt: Ctrl-C during a run stops every rank and every orted, and
// mpirun exits 130 saying why.
func TestInterrupt(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 16, Slots: 2})
	cmd, stderr, _ := started(t, c, 32, "--spawn-degree", "4", "-np", "32",
		"sh", "-c", `touch "$MARKS/$PRSH_RANK"; exec sleep 1000`)
	cmd.Process.Signal(syscall.SIGINT)
	if status := waitExit(t, cmd); status != 130 {
		t.Errorf("exit %d, want 130; stderr:\n%s", status, stderr)
	}
	checkOneLine(t, stderr.String(), `^mpirun: caught SIGINT, terminating the job$`)
	if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
		t.Fatalf("left running after Ctrl-C: %+v", left)
	}
}

// TestRanksIgnoringSIGTERM are killed after the grace period.
func TestRanksIgnoringSIGTERM(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	cmd, stderr, _ := started(t, c, 3, "sh", "-c", `trap "" TERM; touch "$MARKS/$PRSH_RANK"; while :; do sleep 1; done`)
	cmd.Process.Signal(syscall.SIGTERM)
	if status := waitExit(t, cmd); status != 128+15 {
		t.Errorf("exit %d, want 143; stderr:\n%s", status, stderr)
	}
	if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
		t.Fatalf("left running: %+v", left)
	}
}

// TestMpirunKilled: when mpirun dies outright, every orted and rank follows
// within seconds (their lifelines break).
func TestMpirunKilled(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 7})
	cmd, _, _ := started(t, c, 7, "--spawn-degree", "2", "sh", "-c", `touch "$MARKS/$PRSH_RANK"; exec sleep 1000`)
	cmd.Process.Kill()
	cmd.Wait()
	if left := c.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
		var names []string
		for _, p := range left {
			names = append(names, p.Node+": "+p.Cmdline)
		}
		t.Fatalf("left running after mpirun was killed:\n%s", strings.Join(names, "\n"))
	}
}
