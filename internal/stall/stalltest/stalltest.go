// Package stalltest stops a test's own binary, run again as a child, for a
// while, as a starved machine stops a process: a child that holds a timer
// or both ends of a link shows what they make of time they slept through.
package stalltest

import (
	"bufio"
	"os"
	"os/exec"
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
