package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"prsh/ranks/guard"
	"prsh/testbed"
)

// manyRanks is how many ranks the node-guard tests run on one node.
const manyRanks = 64

// escapeAndSleep is a rank that starts a double-forked escapee in a
// session of its own, leaves its mark once the escapee runs, and sleeps.
var escapeAndSleep = escapees[1].start + waitMark + `touch "$MARKS/$PRSH_RANK"; exec sleep 300`

// guardsOn counts the guards running on node.
func guardsOn(c *testbed.Cluster, node string) int {
	n := 0
	for _, p := range c.Leftovers() {
		if argv := strings.Fields(p.Cmdline); p.Node == node && len(argv) > 1 && argv[1] == guard.GuardArg {
			n++
		}
	}
	return n
}

// startManyRanks starts manyRanks ranks of escapeAndSleep on one node,
// and checks that one guard runs there for all of them.
func startManyRanks(t *testing.T, args ...string) (*testbed.Cluster, *exec.Cmd, *lockedBuffer) {
	t.Helper()
	c := cluster(t, testbed.Config{Nodes: 1, Slots: manyRanks})
	marks := t.TempDir()
	cmd, stderr, _ := started(t, c, manyRanks, append(args, "-np", itoa(manyRanks), "--stdin", "none",
		"-x", "M="+marks, "sh", "-c", escapeAndSleep)...)
	if n := countMarks(marks); n != manyRanks {
		t.Errorf("%d of %d escapees ran", n, manyRanks)
	}
	if n := guardsOn(c, "node001"); n != 1 {
		t.Errorf("%d guards on node001 for %d ranks, want one", n, manyRanks)
	}
	return c, cmd, stderr
}

// TestManyRanksOneGuard: 64 ranks on one node run under one guard; each
// rank's output and exit status are its own, and a rank's failure
// ends the job with its status while the others' escapees run, with
// nothing left.
func TestManyRanksOneGuard(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 1, Slots: manyRanks})
	res := mpirun(t, c, "-np", itoa(manyRanks), "sh", "-c",
		`echo "rank $PRSH_RANK of $PRSH_SIZE"; echo "err $PRSH_RANK" >&2`)
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	out, errs := lines(res.stdout), lines(res.stderr)
	slices.Sort(out)
	slices.Sort(errs)
	if len(out) != manyRanks || len(errs) != manyRanks || !slices.Contains(out, "rank 63 of 64") || !slices.Contains(errs, "err 37") {
		t.Errorf("stdout %q, stderr %q: want a line from each rank on each", out, errs)
	}
	marks := t.TempDir()
	res = mpirun(t, c, "-np", itoa(manyRanks), "-x", "M="+marks, "sh", "-c",
		escapees[1].start+waitMark+`[ "$PRSH_RANK" = 37 ] && exit 3; exec sleep 300`)
	if res.status != 3 {
		t.Errorf("exit %d, want 3; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: node001: rank 37 exited with status 3$`)
}

// TestManyRanksOrtedKilled: the orted of 64 ranks, each with an escapee
// in a session of its own, killed outright: its guard kills them all,
// escapees included.
func TestManyRanksOrtedKilled(t *testing.T) {
	c, cmd, stderr := startManyRanks(t)
	syscall.Kill(ortedOf(t, c, "node001"), syscall.SIGKILL)
	if status := waitExit(t, cmd); status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", status, stderr)
	}
	if left := c.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
		c.KillLeftovers()
		t.Fatalf("left running after the orted of %d ranks was killed: %+v", manyRanks, left)
	}
}

// TestManyRanksOrtedStopped: the orted of 64 ranks stopped: mpirun
// names it once it is silent, and the guard kills it, the ranks and
// their escapees before mpirun exits.
func TestManyRanksOrtedStopped(t *testing.T) {
	c, cmd, stderr := startManyRanks(t, stoppedBounds...)
	syscall.Kill(ortedOf(t, c, "node001"), syscall.SIGSTOP)
	if status := waitExit(t, cmd); status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", status, stderr)
	}
	checkOneLine(t, stderr.String(), `^mpirun: node001: orted stopped answering \(nothing heard from it for 10s\)$`)
	if left := c.WaitNoLeftovers(reapGrace); len(left) > 0 {
		c.KillLeftovers()
		t.Fatalf("left running once mpirun exited, after the orted of %d ranks was stopped: %+v", manyRanks, left)
	}
}

// TestManyRanksInterrupted: Ctrl-C to a job of 64 ranks with escapees
// ends them all.
func TestManyRanksInterrupted(t *testing.T) {
	c, cmd, stderr := startManyRanks(t)
	cmd.Process.Signal(syscall.SIGINT)
	if status := waitExit(t, cmd); status != 130 {
		t.Errorf("exit %d, want 130; stderr:\n%s", status, stderr)
	}
	if left := c.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
		c.KillLeftovers()
		t.Fatalf("left running after Ctrl-C to %d ranks: %+v", manyRanks, left)
	}
}

// TestGuardThatRefuses: a guard beside orted that will not serve it (here
// one saying it is of another prsh, as one is) ends the job with one line
// naming the node, the rank and what the guard said.
func TestGuardThatRefuses(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 1, Slots: 2})
	dir := t.TempDir()
	orted, err := os.ReadFile(filepath.Join(bin, "orted"))
	if err != nil {
		t.Fatal(err)
	}
	refuses := "#!/bin/sh\necho \"prsh-guard: $0 is of another prsh than the orted that started it: install the same prsh on every node\" >&2\nexit 255\n"
	if err := os.WriteFile(filepath.Join(dir, "orted"), orted, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, guard.GuardBinary), []byte(refuses), 0o755); err != nil {
		t.Fatal(err)
	}
	res := mpirun(t, c, "--orted", filepath.Join(dir, "orted"), "-np", "2", "/bin/true")
	if res.status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: node001: rank [01]: the ranks' guard exited with status 255: prsh-guard: \S+/prsh-guard is of another prsh than the orted that started it: install the same prsh on every node$`)
}
