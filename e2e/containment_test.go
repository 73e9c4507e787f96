package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"prsh/modex/pmix"
	"prsh/ranks/guard"
	"prsh/testbed"
)

// escapees start, from every rank, a process that leaves the rank's
// process group (and, but for nohup, its session), wait until it runs,
// and exit. $M is a directory for the escapee's mark.
var escapees = []struct{ name, start string }{
	// Keeps the rank's stdout and stderr open.
	{"setsid", `setsid sh -c 'touch "$M/$PRSH_RANK"; exec sleep 777' &`},
	// Fork, new session, fork again: the classic daemon, whose parent is gone.
	{"double fork", `( setsid sh -c '( touch "$M/$PRSH_RANK"; exec sleep 778 ) &' & ) >/dev/null 2>&1; `},
	{"nohup", `nohup sh -c 'touch "$M/$PRSH_RANK"; exec sleep 779' >/dev/null 2>&1 &`},
}

// waitMark is the part of a rank's script that waits for its escapee.
const waitMark = `while [ ! -e "$M/$PRSH_RANK" ]; do sleep 0.05; done; `

// TestNoEscape: whatever a rank starts dies with the job, even a process
// that left the rank's process group or session: the job ends as its
// ranks did, with nothing left on any node (mpirun checks the leftovers).
func TestNoEscape(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 4, Slots: 2})
	for _, e := range escapees {
		t.Run(e.name, func(t *testing.T) {
			marks := t.TempDir()
			res := mpirun(t, c, "-np", "8", "-x", "M="+marks, "sh", "-c", e.start+waitMark+"exit 0")
			if res.status != 0 {
				t.Errorf("exit %d, want 0; stderr:\n%s", res.status, res.stderr)
			}
			checkOneLine(t, res.stderr, "")
			if n := countMarks(marks); n != 8 {
				t.Errorf("%d of 8 escapees ran", n)
			}
		})
	}
}

// TestNoEscapeOnFailure: a rank fails while the others' escapees run; the
// job ends with the failed rank's status and one line, nothing left.
func TestNoEscapeOnFailure(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	for _, e := range escapees {
		t.Run(e.name, func(t *testing.T) {
			marks := t.TempDir()
			res := mpirun(t, c, "-x", "M="+marks, "sh", "-c",
				e.start+waitMark+`[ "$PRSH_RANK" = 1 ] && exit 3; exec sleep 60`)
			if res.status != 3 {
				t.Errorf("exit %d, want 3; stderr:\n%s", res.status, res.stderr)
			}
			checkOneLine(t, res.stderr, `^mpirun: node002: rank 1 exited with status 3$`)
		})
	}
}

// TestNoEscapeOrtedKilled: an orted killed outright while escapees of its
// ranks run takes them down too, with nothing left.
func TestNoEscapeOrtedKilled(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	marks := t.TempDir()
	cmd, stderr, _ := started(t, c, 3, "-x", "M="+marks, "sh", "-c",
		escapees[1].start+waitMark+`touch "$MARKS/$PRSH_RANK"; exec sleep 60`)
	syscall.Kill(ortedOf(t, c, "node002"), syscall.SIGKILL)
	if status := waitExit(t, cmd); status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", status, stderr)
	}
	if left := c.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
		t.Fatalf("left running after an orted was killed: %+v", left)
	}
	if _, err := os.Stat(filepath.Join(marks, "1")); err != nil {
		t.Errorf("rank 1's escapee never ran: %v", err)
	}
}

// TestJobCgroup: where cgroup v2 is delegated (here, as root), each
// orted runs its ranks in a cgroup of the job's own, and removes it when
// the job ends.
func TestJobCgroup(t *testing.T) {
	probe, err := guard.NewCgroup()
	if err != nil {
		t.Skipf("no job cgroup here: %v", err)
	}
	base := filepath.Dir(probe.Dir()) // the orteds run in our cgroup
	probe.Remove(time.Second)
	c := cluster(t, testbed.Config{Nodes: 2})
	res := mpirun(t, c, "sh", "-c", `sed -n 's/^0:://p' /proc/self/cgroup`)
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	got := lines(res.stdout)
	if len(got) != 2 || got[0] == got[1] {
		t.Fatalf("want two ranks in two cgroups, got %q", got)
	}
	for _, path := range got {
		if !strings.HasPrefix(filepath.Base(path), "prsh-job-") {
			t.Errorf("rank in cgroup %s, want a prsh-job-* one", path)
		}
		if _, err := os.Stat(filepath.Join(base, filepath.Base(path))); !os.IsNotExist(err) {
			t.Errorf("cgroup %s left behind: %v", path, err)
		}
	}
}

// TestGuardOfItsOwn: each rank runs under the guard binary beside orted
// (prsh-guard, which starts in less CPU than orted), not under orted.
func TestGuardOfItsOwn(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	res := mpirun(t, c, "sh", "-c", `cat /proc/$PPID/comm`)
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	if got := lines(res.stdout); len(got) != 2 || got[0] != guard.GuardBinary || got[1] != guard.GuardBinary {
		t.Errorf("the ranks' parents are %q, want two %s", got, guard.GuardBinary)
	}
}

// TestKilledOrtedScratchSwept: an orted killed outright leaves its PMIx
// server's directory in its node's TMPDIR (nobody is left to remove
// it); the next orted that makes one on that node removes it, and keeps
// those of live orteds.
func TestKilledOrtedScratchSwept(t *testing.T) {
	if !pmix.Available {
		t.Skip("an mpirun without PMIx makes no PMIx directory")
	}
	c := cluster(t, testbed.Config{Nodes: 2, NodeTmp: true})
	cmd, stderr, _ := started(t, c, 2, "--pmix", "on", "sh", "-c", `touch "$MARKS/$PRSH_RANK"; exec sleep 60`)
	syscall.Kill(ortedOf(t, c, "node002"), syscall.SIGKILL)
	if status := waitExit(t, cmd); status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", status, stderr)
	}
	if left := c.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
		t.Fatalf("left running after an orted was killed: %+v", left)
	}
	if left := c.NodeTmpFiles("prsh-pmix-"); len(left) != 1 || !strings.HasPrefix(left[0], "node002/") {
		t.Fatalf("after the kill, PMIx directories %v, want the killed orted's on node002", left)
	}
	live, stderr, _ := started(t, c, 2, "--pmix", "on", "sh", "-c", `touch "$MARKS/$PRSH_RANK"; exec sleep 60`)
	left := c.NodeTmpFiles("prsh-pmix-")
	if len(left) != 2 || !strings.HasPrefix(left[0], "node001/") || !strings.HasPrefix(left[1], "node002/") {
		t.Errorf("while the next job runs, PMIx directories %v, want one of its own on each node", left)
	}
	live.Process.Signal(syscall.SIGINT)
	if status := waitExit(t, live); status != 130 {
		t.Errorf("exit %d, want 130; stderr:\n%s", status, stderr)
	}
	if left := c.NodeTmpFiles("prsh-pmix-"); len(left) > 0 {
		t.Errorf("after the next job, PMIx directories %v are left", left)
	}
}
