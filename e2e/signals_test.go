package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"prsh/testbed"
)

// TestInterrupt: Ctrl-C during a run stops every rank and every orted, and
// mpirun exits 130 saying why.
func TestInterrupt(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 16, Slots: 2})
	cmd, stderr, _ := started(t, c, 32, "--spawn-degree", "4", "-np", "32",
		"sh", "-c", `touch "$MARKS/$PRSH_RANK"; exec sleep 1000`)
	interrupted(t, c, cmd, stderr)
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

// TestForwardedSignal: SIGUSR1 to mpirun reaches every rank.
func TestForwardedSignal(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 4, Slots: 2})
	cmd, stderr, _ := started(t, c, 8, "-np", "8", "--stdin", "none", "sh", "-c",
		`trap 'echo "got $PRSH_RANK"; exit 0' USR1; touch "$MARKS/$PRSH_RANK"; while :; do sleep 0.1; done`)
	cmd.Process.Signal(syscall.SIGUSR1)
	if status := waitExit(t, cmd); status != 0 {
		t.Fatalf("exit %d, want 0 (every rank trapped USR1 and exited 0); stderr:\n%s", status, stderr)
	}
}

// stateOf is the state letter of a process in /proc, or "" if it is gone.
func stateOf(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return ""
	}
	return s[i+2 : i+3]
}

// waitState polls until every pid is in one of the states.
func waitState(t *testing.T, pids []int, states string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for !strings.Contains(states, stateOf(pid)) || stateOf(pid) == "" {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d is in state %q, want one of %q", pid, stateOf(pid), states)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestStopAndContinue: Ctrl-Z stops every rank and then mpirun; SIGCONT
// resumes them.
func TestStopAndContinue(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 4})
	cmd, stderr, marks := started(t, c, 4, "--stdin", "none", "sh", "-c",
		`echo $$ > "$MARKS/$PRSH_RANK.tmp"; mv "$MARKS/$PRSH_RANK.tmp" "$MARKS/$PRSH_RANK"; while :; do sleep 0.1; done`)
	ranks := markedPids(t, marks, 4)
	stopAndContinue(t, cmd, ranks)
	cmd.Process.Signal(syscall.SIGINT)
	if status := waitExit(t, cmd); status != 130 {
		t.Fatalf("exit %d, want 130; stderr:\n%s", status, stderr)
	}
}

func TestTimeout(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	res := mpirun(t, c, "--timeout", "2", "sleep", "100")
	if res.status != 124 {
		t.Errorf("exit %d, want 124", res.status)
	}
	checkOneLine(t, res.stderr, `^mpirun: the job ran past --timeout 2s, terminating it$`)
}

// TestBackgroundDoesNotReadStdin: mpirun started in the background of an
// interactive shell on a terminal does not read the terminal (no SIGTTIN
// stop, no stolen typeahead), and the rank reading stdin gets EOF.
func TestBackgroundDoesNotReadStdin(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("needs script(1) from util-linux")
	}
	c := cluster(t, testbed.Config{Nodes: 2})
	job := filepath.Join(t.TempDir(), "job")
	os.WriteFile(job, []byte("#!/bin/sh\nexec "+filepath.Join(bin, "mpirun")+
		` sh -c 'cat >/dev/null; echo "rank $PRSH_RANK saw EOF"'`+"\n"), 0o755)
	cmd := exec.Command("script", "-qec", "bash --norc --noprofile -ic '"+job+" & wait %1; echo done $?'", "/dev/null")
	cmd.Env = append(os.Environ(), c.Env()...)
	done := make(chan struct{})
	var out []byte
	go func() { out, _ = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("mpirun in the background hung (stopped by SIGTTIN, or its rank never got EOF)")
	}
	for _, want := range []string{"rank 0 saw EOF", "rank 1 saw EOF", "done 0"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// TestSecondInterrupt: a second Ctrl-C does not wait for the grace period
// of ranks that ignore SIGTERM. The grace is set far beyond waitExit's
// patience, so only the second interrupt can end the job in time.
func TestSecondInterrupt(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	cmd, stderr, _ := started(t, c, 3, "--stdin", "none", "--kill-grace", "1h", "sh", "-c", `trap "" TERM INT; touch "$MARKS/$PRSH_RANK"; while :; do sleep 1; done`)
	cmd.Process.Signal(syscall.SIGINT)
	stderr.waitFor(t, "caught SIGINT") // not one signal for two
	cmd.Process.Signal(syscall.SIGINT)
	if status := waitExit(t, cmd); status != 130 {
		t.Errorf("exit %d, want 130; stderr:\n%s", status, stderr)
	}
	if left := c.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
		t.Fatalf("left running: %+v", left)
	}
}
