package transport

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stallChildEnv makes the test binary run TestLinkSurvivesAStall's child.
const stallChildEnv = "PRSH_TRANSPORT_STALL_CHILD"

// TestLinkSurvivesAStall: a process holding both ends of a link is
// stopped for three silence bounds, as when a machine so loaded that
// nothing runs for seconds starves a daemon and its peer alike, then
// continued. Neither end takes the other for silent: time a watch slept
// through is no evidence against the peer. (A peer that stops while this
// side runs is still found silent: TestSilentPeerEndsLink.)
func TestLinkSurvivesAStall(t *testing.T) {
	if os.Getenv(stallChildEnv) != "" {
		holdLinkThroughStall(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLinkSurvivesAStall$")
	cmd.Env = append(os.Environ(), stallChildEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "linked" {
		t.Fatalf("child: %q, want linked", lines.Text())
	}
	cmd.Process.Signal(syscall.SIGSTOP)
	time.Sleep(3 * stallSilence)
	cmd.Process.Signal(syscall.SIGCONT)
	var said []string
	for lines.Scan() {
		said = append(said, lines.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("child: %v; it said:\n%s", err, strings.Join(said, "\n"))
	}
}

const stallSilence = time.Second

// holdLinkThroughStall links a dialer and a listener, says so, and then
// fails if either end ends within two silence bounds of the stall that
// the parent imposes.
func holdLinkThroughStall(t *testing.T) {
	opt := Options{KeepAlive: 50 * time.Millisecond, Silence: stallSilence}
	d, l := directLink(t, opt, opt)
	time.Sleep(100 * time.Millisecond) // both watches have woken at least once
	os.Stdout.WriteString("linked\n")
	// The parent stops this process for 3 s: wait for that to have
	// happened and ended, then for two bounds more.
	outlives(t, 3*stallSilence+2*stallSilence, d, l)
}
