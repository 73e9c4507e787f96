package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"prsh/testbed"
)

// heldCluster is a cluster of 4 nodes whose node003 starts no command
// until the returned function is called (at most once; cleanup calls it
// too). With --spawn-degree 2, node003 is node001's child: mpirun learns
// of it through node001's Pending.
func heldCluster(t *testing.T, faults map[string]testbed.Fault) (*testbed.Cluster, func()) {
	t.Helper()
	hold := make(chan struct{})
	if faults == nil {
		faults = map[string]testbed.Fault{}
	}
	faults["node003"] = testbed.Fault{Hold: hold}
	released := false
	release := func() {
		if !released {
			released = true
			close(hold)
		}
	}
	c := cluster(t, testbed.Config{Nodes: 4, Faults: faults})
	t.Cleanup(release) // before the cluster's Close, which runs first otherwise
	return c, release
}

var waitingLine = regexp.MustCompile(`(?m)^mpirun: \d+ of 4 daemons called back.*$`)

// A launch slowed by one node: with -v and stderr not a terminal, mpirun
// says on stderr, as plain lines, how many daemons called back and that
// it waits for node003; stdout carries the ranks' output only.
func TestProgressNamesSlowNode(t *testing.T) {
	c, release := heldCluster(t, nil)
	cmd, stdout, stderr := startMpirun(t, c, "-v", "--spawn-degree", "2", "/bin/echo", "rank-output")
	stderr.waitFor(t, "mpirun: 3 of 4 daemons called back; waiting for node003\n")
	release()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("mpirun: %v; stderr:\n%s", err, stderr)
	}
	if got := stdout.String(); got != strings.Repeat("rank-output\n", 4) {
		t.Errorf("stdout = %q, want the 4 ranks' lines only", got)
	}
	for _, line := range waitingLine.FindAllString(stderr.String(), -1) {
		if line != "mpirun: 3 of 4 daemons called back; waiting for node003" &&
			line != "mpirun: 2 of 4 daemons called back; waiting for 2" { // node001 up, its Pending not yet in
			t.Errorf("unexpected progress line %q", line)
		}
	}
	if strings.ContainsAny(stderr.String(), "\r\x1b") {
		t.Errorf("stderr, not a terminal, holds control characters:\n%q", stderr)
	}
}

// --hold-launch: the line shows while no rank has started, and the ranks
// run once node003 calls back.
func TestProgressHoldLaunch(t *testing.T) {
	c, release := heldCluster(t, nil)
	cmd, stdout, stderr := startMpirun(t, c, "-v", "--hold-launch", "--spawn-degree", "2", "/bin/echo", "rank-output")
	stderr.waitFor(t, "waiting for node003\n")
	if got := stdout.String(); got != "" {
		t.Errorf("ranks wrote %q before every daemon called back, with --hold-launch", got)
	}
	release()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("mpirun: %v; stderr:\n%s", err, stderr)
	}
	if got := stdout.String(); got != strings.Repeat("rank-output\n", 4) {
		t.Errorf("stdout = %q, want the 4 ranks' lines", got)
	}
}

// --on-unreachable skip: a skipped node is counted as skipped, not named
// as missing.
func TestProgressSkippedNode(t *testing.T) {
	c, release := heldCluster(t, map[string]testbed.Fault{"node002": {Refuse: true}})
	cmd, _, stderr := startMpirun(t, c, "-v", "--on-unreachable", "skip", "--spawn-degree", "2", "/bin/true")
	stderr.waitFor(t, "mpirun: 2 of 4 daemons called back (1 skipped); waiting for node003\n")
	release()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("mpirun: %v; stderr:\n%s", err, stderr)
	}
	for _, line := range waitingLine.FindAllString(stderr.String(), -1) {
		if strings.Contains(line, "node002") {
			t.Errorf("progress line %q names the skipped node", line)
		}
	}
}

// Without -v and without a terminal, nothing is said, however long the
// launch takes: here node003 never starts, so the launch ends after at
// least the 5 s callback timeout, with the failure's line only.
func TestProgressQuietWithoutVerbose(t *testing.T) {
	c, _ := heldCluster(t, nil)
	res := mpirun(t, c, "--spawn-degree", "2", "--callback-timeout", "5s", "/bin/true")
	if res.status != 255 || !strings.Contains(res.stderr, "mpirun: node003: orted gave no sign of life within 5s") {
		t.Fatalf("status %d, want 255 and node003's failure; stderr:\n%s", res.status, res.stderr)
	}
	if waitingLine.MatchString(res.stderr) {
		t.Errorf("a progress line without -v, not on a terminal:\n%s", res.stderr)
	}
}

// A launch that completes quickly shows no line, even with -v. Whether it
// was quick is read from --report-launch-times: on a machine so loaded
// that phase 2 took over 3 s, the line may rightly show.
func TestProgressNotShownWhenFast(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	res := mpirun(t, c, "-v", "--report-launch-times", "/bin/true")
	if res.status != 0 {
		t.Fatalf("status %d; stderr:\n%s", res.status, res.stderr)
	}
	var took float64
	m := regexp.MustCompile(`phase 2 \(addresses exchanged\) ([0-9.]+)s`).FindStringSubmatch(res.stderr)
	if m == nil {
		t.Fatalf("no launch times in:\n%s", res.stderr)
	}
	fmt.Sscan(m[1], &took)
	if took >= 3 {
		t.Skipf("phase 2 took %.3fs on this loaded machine; the line may rightly show", took)
	}
	if line := regexp.MustCompile(`(?m)^mpirun: .*called back.*$`).FindString(res.stderr); line != "" {
		t.Errorf("a launch done in %.3fs showed %q", took, line)
	}
}

// openPTY opens a pseudo-terminal: the test reads what mpirun writes to
// the returned slave from master.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, s
}

// startOnTerminal starts mpirun with its stderr on a pseudo-terminal,
// its stdout on a pipe; the terminal's bytes arrive in the buffer
// returned, which is complete once done is closed.
func startOnTerminal(t *testing.T, c *testbed.Cluster, args ...string) (cmd *exec.Cmd, stdout, tty *lockedBuffer, done chan struct{}) {
	t.Helper()
	master, slave := openPTY(t)
	cmd = exec.Command(filepath.Join(bin, "mpirun"), args...)
	cmd.Env = append(os.Environ(), c.Env()...)
	stdout, tty = &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close() // mpirun holds it now; the master reads EIO once it exits
	t.Cleanup(func() { cmd.Process.Kill() })
	done = make(chan struct{})
	go func() {
		io.Copy(tty, master)
		close(done)
	}()
	return cmd, stdout, tty, done
}

const eraseLine = "\r\x1b[K"

// On a terminal the line is written in place (ended by clear to the end
// of the line, no newline), and taken away when the launch completes:
// nothing is drawn after the last erase.
func TestProgressInPlaceOnTerminal(t *testing.T) {
	c, release := heldCluster(t, nil)
	cmd, stdout, tty, done := startOnTerminal(t, c, "--spawn-degree", "2", "/bin/echo", "rank-output")
	const line = "mpirun: 3 of 4 daemons called back; waiting for node003\x1b[K"
	tty.waitFor(t, line)
	release()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("mpirun: %v; terminal:\n%q", err, tty)
	}
	<-done
	got := tty.String()
	if !strings.HasSuffix(got, line+eraseLine) {
		t.Errorf("the terminal does not end with the line taken away:\n%q", got)
	}
	if strings.Contains(got, "\n") {
		t.Errorf("the line was not rewritten in place:\n%q", got)
	}
	if got := stdout.String(); got != strings.Repeat("rank-output\n", 4) {
		t.Errorf("stdout = %q, want the 4 ranks' lines only", got)
	}
}

// On a terminal, a node that fails takes the line's place: it is taken
// away, then the failure's line is written, and it is not drawn again.
func TestProgressFailureOnTerminal(t *testing.T) {
	c, _ := heldCluster(t, nil)
	cmd, _, tty, done := startOnTerminal(t, c, "--spawn-degree", "2", "--callback-timeout", "10s", "/bin/true")
	tty.waitFor(t, "waiting for node003\x1b[K")
	cmd.Wait()
	<-done
	got := tty.String()
	failure := "mpirun: node003: orted gave no sign of life within 10s"
	at := strings.Index(got, failure)
	if at < 0 {
		t.Fatalf("no failure line for node003 on the terminal:\n%q", got)
	}
	if !strings.HasSuffix(got[:at], "\x1b[K"+eraseLine) {
		t.Errorf("the line was not taken away before the failure's:\n%q", got)
	}
	if strings.Contains(got[at:], "called back") {
		t.Errorf("the line came back after the failure's:\n%q", got)
	}
	if cmd.ProcessState.ExitCode() != 255 {
		t.Errorf("status %d, want 255", cmd.ProcessState.ExitCode())
	}
}
