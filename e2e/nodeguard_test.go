package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"prsh/ranks/guard"
	"prsh/testbed"
)

// rankLoads are the sizes the node-guard tests run at: many ranks on
// one node, and many on each of many nodes. victim is the node whose
// orted is killed or stopped: with 16 nodes, one that relays for others.
var rankLoads = []struct {
	name           string
	nodes, perNode int
	victim         string
}{
	{"64 on one node", 1, 64, "node001"},
	{"256 on one node", 1, 256, "node001"},
	{"16 nodes of 16", 16, 16, "node003"},
}

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

// forEachLoad runs test at each of rankLoads on a cluster of its size.
func forEachLoad(t *testing.T, test func(t *testing.T, c *testbed.Cluster, ranks, perNode int, victim string)) {
	for _, l := range rankLoads {
		t.Run(l.name, func(t *testing.T) {
			c := cluster(t, testbed.Config{Nodes: l.nodes, Slots: l.perNode})
			test(t, c, l.nodes*l.perNode, l.perNode, l.victim)
		})
	}
}

// startManyRanks starts ranks of escapeAndSleep filling the cluster, and
// checks that every escapee ran and that one guard runs on each node for
// all of its ranks.
func startManyRanks(t *testing.T, c *testbed.Cluster, ranks, perNode int, args ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	marks := t.TempDir()
	cmd, stderr, _ := started(t, c, ranks, append(args, "-np", itoa(ranks), "--stdin", "none",
		"-x", "M="+marks, "sh", "-c", escapeAndSleep)...)
	if n := countMarks(marks); n != ranks {
		t.Errorf("%d of %d escapees ran", n, ranks)
	}
	for _, node := range c.Nodes() {
		if n := guardsOn(c, node.Name); n != 1 {
			t.Errorf("%d guards on %s for %d ranks, want one", n, node.Name, perNode)
		}
	}
	return cmd, stderr
}

// TestManyRanksOneGuard: 64 and 256 ranks on one node, and 16 on each of
// 16 nodes, run under one guard per node; each rank's output and exit
// status are its own, and a rank's failure ends the job with its status
// while the others' escapees run, with nothing left.
func TestManyRanksOneGuard(t *testing.T) {
	forEachLoad(t, func(t *testing.T, c *testbed.Cluster, ranks, perNode int, _ string) {
		res := mpirun(t, c, "-np", itoa(ranks), "sh", "-c",
			`echo "rank $PRSH_RANK of $PRSH_SIZE"; echo "err $PRSH_RANK" >&2`)
		if res.status != 0 {
			t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
		}
		var want, wantErrs []string
		for r := range ranks {
			want = append(want, fmt.Sprintf("rank %d of %d", r, ranks))
			wantErrs = append(wantErrs, fmt.Sprintf("err %d", r))
		}
		wantSet(t, res.stdout, want...)
		wantSet(t, res.stderr, wantErrs...)
		marks := t.TempDir()
		res = mpirun(t, c, "-np", itoa(ranks), "-x", "M="+marks, "sh", "-c",
			escapees[1].start+waitMark+`[ "$PRSH_RANK" = 37 ] && exit 3; exec sleep 300`)
		if res.status != 3 {
			t.Errorf("exit %d, want 3; stderr:\n%s", res.status, res.stderr)
		}
		checkOneLine(t, res.stderr, fmt.Sprintf(`^mpirun: node%03d: rank 37 exited with status 3$`, 37/perNode+1))
	})
}

// TestGuardOnlyWhereRanks: an orted starts its node's guard as it joins
// the job, ahead of the ranks, but only where the job places ranks: a
// job of one rank on three nodes with an orted on each (--every-host)
// runs one guard, on the rank's node.
func TestGuardOnlyWhereRanks(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 1})
	cmd, stdout, stderr := startMpirun(t, c, "--every-host", "-np", "1", "--stdin", "none", "sh", "-c", "echo up; exec sleep 300")
	stdout.waitFor(t, "up")
	for node, want := range map[string]int{"node001": 1, "node002": 0, "node003": 0} {
		if n := guardsOn(c, node); n != want {
			t.Errorf("%d guards on %s, want %d", n, node, want)
		}
	}
	interrupted(t, c, cmd, stderr)
}

// TestOrtedsOnlyWhereRanks: a host that gets no rank gets no orted, as
// Hydra starts no proxy there: two ranks by node on four hosts run
// orteds on node001 and node002 alone; --display-allocation still lists
// the four, and --display-map says which two get no orted. (A child job
// placed on such a host starts its orted then: TestPMIxChildJob,
// TestPMI2Spawn.)
func TestOrtedsOnlyWhereRanks(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 4, Slots: 2})
	cmd, stdout, stderr := startMpirun(t, c, "--map-by", "node", "-np", "2", "--stdin", "none", "sh", "-c", `echo "up $PRSH_RANK"; exec sleep 300`)
	stdout.waitFor(t, "up 0")
	stdout.waitFor(t, "up 1")
	for node, want := range map[string]int{"node001": 1, "node002": 1, "node003": 0, "node004": 0} {
		if n := ortedsOn(c, node); n != want {
			t.Errorf("%d orteds on %s, want %d", n, node, want)
		}
	}
	interrupted(t, c, cmd, stderr)

	res := mpirun(t, c, "--display-allocation", "--display-map", "--map-by", "node", "-np", "2", "true")
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	for _, node := range []string{"node001", "node002", "node003", "node004"} {
		if !regexp.MustCompile(`(?m)^ +` + node + ` +slots=2$`).MatchString(res.stderr) {
			t.Errorf("--display-allocation does not list %s:\n%s", node, res.stderr)
		}
	}
	for _, node := range []string{"node003", "node004"} {
		if !regexp.MustCompile(`(?m)^ +` + node + ` +no rank: no orted \(--every-host starts one\)$`).MatchString(res.stderr) {
			t.Errorf("--display-map does not say %s gets no orted:\n%s", node, res.stderr)
		}
	}
}

// ortedsOn counts the orteds running on node.
func ortedsOn(c *testbed.Cluster, node string) int {
	n := 0
	for _, p := range c.Leftovers() {
		if p.Node == node && isOrted(strings.Fields(p.Cmdline)) {
			n++
		}
	}
	return n
}

// TestManyRanksOrtedKilled: an orted of many ranks, each with an escapee
// in a session of its own, killed outright: its guard kills them all,
// escapees included, and the other nodes' guards theirs.
func TestManyRanksOrtedKilled(t *testing.T) {
	forEachLoad(t, func(t *testing.T, c *testbed.Cluster, ranks, perNode int, victim string) {
		cmd, stderr := startManyRanks(t, c, ranks, perNode)
		syscall.Kill(ortedOf(t, c, victim), syscall.SIGKILL)
		if status := waitExit(t, cmd); status != 255 {
			t.Errorf("exit %d, want 255; stderr:\n%s", status, stderr)
		}
		if left := c.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
			c.KillLeftovers()
			t.Fatalf("left running after the orted of %s was killed: %+v", victim, left)
		}
	})
}

// TestManyRanksOrtedStopped: an orted of many ranks stopped: mpirun
// names it once it is silent, and its guard kills it, the ranks and
// their escapees before mpirun exits.
func TestManyRanksOrtedStopped(t *testing.T) {
	forEachLoad(t, func(t *testing.T, c *testbed.Cluster, ranks, perNode int, victim string) {
		t.Parallel() // most of each case is the idle wait for the silence bound
		cmd, stderr := startManyRanks(t, c, ranks, perNode, stoppedBounds...)
		syscall.Kill(ortedOf(t, c, victim), syscall.SIGSTOP)
		if status := waitExit(t, cmd); status != 255 {
			t.Errorf("exit %d, want 255; stderr:\n%s", status, stderr)
		}
		checkOneLine(t, stderr.String(), `^mpirun: `+victim+`: orted stopped answering \(nothing heard from it for 10s\)$`)
		if left := c.WaitNoLeftovers(reapGrace); len(left) > 0 {
			c.KillLeftovers()
			t.Fatalf("left running once mpirun exited, after the orted of %s was stopped: %+v", victim, left)
		}
	})
}

// TestManyRanksInterrupted: Ctrl-C to a job of many ranks with escapees
// ends them all.
func TestManyRanksInterrupted(t *testing.T) {
	forEachLoad(t, func(t *testing.T, c *testbed.Cluster, ranks, perNode int, _ string) {
		cmd, stderr := startManyRanks(t, c, ranks, perNode)
		cmd.Process.Signal(syscall.SIGINT)
		if status := waitExit(t, cmd); status != 130 {
			t.Errorf("exit %d, want 130; stderr:\n%s", status, stderr)
		}
		if left := c.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
			c.KillLeftovers()
			t.Fatalf("left running after Ctrl-C to %d ranks: %+v", ranks, left)
		}
	})
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
