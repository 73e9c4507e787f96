package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"prsh/testbed"
)

// Child jobs: a rank starts a new job while it runs (PMIx_Spawn,
// MPI_Comm_spawn). The PMIx tests use e2e/testdata/pmix/childjob.c, a
// parent and its children without MPI.

// childLines are the lines the np children of a job on nodes print, their
// parent being rank 0 of namespace ns (by slot, 2 a node).
func childLines(np int, nodes []string, parent string) []string {
	var want []string
	for r := range np {
		want = append(want, fmt.Sprintf("child %d of %d on %s (parent %s rank 0)", r, np, nodes[r/2], parent))
	}
	return want
}

// parentOf is the parent's namespace the children of out name.
func parentOf(t *testing.T, out string) string {
	t.Helper()
	ns := regexp.MustCompile(`\(parent (\S+) rank 0\)`).FindStringSubmatch(out)
	if ns == nil {
		t.Fatalf("no child names its parent:\n%s", out)
	}
	return ns[1]
}

// TestPMIxChildJob: rank 0 of 2 (on node001, whose two slots they take)
// starts 4 children with PMIx_Spawn; they run on node002 and node003
// (with PMIX_HOST node003, 2 of them there),
// see PMIX_SPAWNED and their parent (PMIX_PARENT_ID), and print after
// their parent has exited: mpirun waits for every job, and their output
// reaches its stdout, tagged with their job (2, as Open MPI numbers a
// first child job) with --tag-output, and under DIR/2 with
// --output-filename DIR.
func TestPMIxChildJob(t *testing.T) {
	prog := openMPI(t, "childjob")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2, UTS: true})
	res := mpirun(t, c, "-np", "2", prog, "4", "sleep=1")
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
	}
	want := append(childLines(4, []string{"node002", "node003"}, parentOf(t, res.stdout)), "rank 0 started a child job of 4 ranks")
	checkLines(t, res.stdout, want)

	res = mpirun(t, c, "-np", "2", prog, "2", "host=node003")
	if res.status != 0 {
		t.Fatalf("host=node003: exit %d, stderr:\n%s", res.status, res.stderr)
	}
	checkLines(t, res.stdout, append(childLines(2, []string{"node003"}, parentOf(t, res.stdout)), "rank 0 started a child job of 2 ranks"))

	res = mpirun(t, c, "-np", "2", "--tag-output", prog, "4")
	if res.status != 0 {
		t.Fatalf("--tag-output: exit %d, stderr:\n%s", res.status, res.stderr)
	}
	tagged := []string{"[1,0]<stdout>:rank 0 started a child job of 4 ranks"}
	for i, l := range childLines(4, []string{"node002", "node003"}, parentOf(t, res.stdout)) {
		tagged = append(tagged, fmt.Sprintf("[2,%d]<stdout>:%s", i, l))
	}
	checkLines(t, res.stdout, tagged)

	dir := t.TempDir()
	res = mpirun(t, c, "-np", "2", "--output-filename", dir, prog, "2")
	if res.status != 0 {
		t.Fatalf("--output-filename: exit %d, stderr:\n%s", res.status, res.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "2", "rank.1", "stdout"))
	if err != nil || !strings.HasPrefix(string(b), "child 1 of 2 on node002") {
		t.Errorf("--output-filename: child 1's stdout %q, %v", b, err)
	}
}

// TestPMIxChildJobAddHost: a child job on hosts the job does not have
// (PMIX_ADD_HOST, MPI_Comm_spawn's add-host; PMIX_ADD_HOSTFILE): mpirun
// starts an orted on each first, and the children run there. More ranks than the added
// host's slots is refused; a host that cannot be reached ends the job
// with a line naming it.
func TestPMIxChildJobAddHost(t *testing.T) {
	prog := openMPI(t, "childjob")
	c := cluster(t, testbed.Config{Nodes: 4, Slots: 2, UTS: true})
	res := mpirun(t, c, "-H", "node001:2,node002:2", "-np", "2", prog, "4", "addhost=node003:2,node004:2")
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	want := append(childLines(4, []string{"node003", "node004"}, parentOf(t, res.stdout)), "rank 0 started a child job of 4 ranks")
	checkLines(t, res.stdout, want)

	// Both kinds of node: host names the job's, add-host one it lacks.
	res = mpirun(t, c, "-H", "node001:2,node002:2", "-np", "2", prog, "4", "host=node002", "addhost=node003:2")
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("host and add-host: exit %d, stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	want = append(childLines(4, []string{"node002", "node003"}, parentOf(t, res.stdout)), "rank 0 started a child job of 4 ranks")
	checkLines(t, res.stdout, want)

	hostfile := filepath.Join(t.TempDir(), "added")
	if err := os.WriteFile(hostfile, []byte("node004 slots=2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res = mpirun(t, c, "-H", "node001:2", "-np", "2", prog, "2", "addhostfile="+hostfile)
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("add-hostfile: exit %d, stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	checkLines(t, res.stdout, append(childLines(2, []string{"node004"}, parentOf(t, res.stdout)), "rank 0 started a child job of 2 ranks"))

	res = mpirun(t, c, "-H", "node001:2", "-np", "2", prog, "2", "addhost=node004")
	if res.status != 3 {
		t.Errorf("2 children on an added host of 1 slot: exit %d, want 3; stderr:\n%s", res.status, res.stderr)
	}
	checkMpirunLines(t, res.stderr,
		`^mpirun: rank 0 asked for a child job: a child job of 2 ranks, but only 1 slot free \(node004: 1\); use --oversubscribe to allow it$`,
		`^mpirun: node001: rank 0 exited with status 3$`)

	res = mpirun(t, c, "-H", "node001:2", "-np", "2", prog, "2", "addhost=node009:2")
	if res.status == 0 {
		t.Errorf("an added host that cannot be reached: exit 0; stdout:\n%s", res.stdout)
	}
	if !strings.Contains(res.stderr, "mpirun: node009: ") {
		t.Errorf("an added host that cannot be reached: no line names it:\n%s", res.stderr)
	}
}

// TestPMIxChildJobFailures: a child job that cannot run. More ranks than
// free slots is refused (without --oversubscribe, Open MPI's rule): the
// parent's PMIx_Spawn fails and mpirun says why in one line; the parent
// goes on (here it exits with 3, which ends the job as any rank's
// status does); so is a PMIX_HOST that is not one of the job's nodes. A program missing, or a child exiting non-zero, ends
// everything with the child's status and a line naming the child job,
// its parent, the node and the rank.
func TestPMIxChildJobFailures(t *testing.T) {
	prog := openMPI(t, "childjob")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2, UTS: true})

	res := mpirun(t, c, "-np", "2", prog, "5")
	if res.status != 3 {
		t.Errorf("too many children: exit %d, want 3; stderr:\n%s", res.status, res.stderr)
	}
	checkLines(t, res.stdout, []string{"rank 0: PMIx_Spawn failed: ERROR"})
	checkMpirunLines(t, res.stderr,
		`^mpirun: rank 0 asked for a child job: a child job of 5 ranks, but only 4 slots free \(node001: 0, node002: 2, node003: 2\); use --oversubscribe to allow it$`,
		`^mpirun: node001: rank 0 exited with status 3$`)

	res = mpirun(t, c, "-np", "2", "--oversubscribe", prog, "5")
	if res.status != 0 || !strings.Contains(res.stdout, "rank 0 started a child job of 5 ranks") {
		t.Errorf("--oversubscribe: exit %d, stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}

	res = mpirun(t, c, "-np", "2", prog, "2", "host=elsewhere")
	if res.status != 3 {
		t.Errorf("a host not in the job: exit %d, want 3; stderr:\n%s", res.status, res.stderr)
	}
	checkMpirunLines(t, res.stderr,
		`^mpirun: rank 0 asked for a child job: host elsewhere is not one of the job's nodes \(add-host adds a node\)$`,
		`^mpirun: node001: rank 0 exited with status 3$`)

	res = mpirun(t, c, "-np", "2", prog, "4", "missing")
	if res.status != 127 {
		t.Errorf("missing program: exit %d, want 127; stderr:\n%s", res.status, res.stderr)
	}
	checkMpirunLines(t, res.stderr, `^mpirun: child job 1 \(spawned by rank 0\): node00[23]: rank [0-3]: .*/nonexistent/childjob.*$`)

	res = mpirun(t, c, "-np", "2", prog, "4", "fail=2:5")
	if res.status != 5 {
		t.Errorf("a child exits with 5: exit %d, want 5; stderr:\n%s", res.status, res.stderr)
	}
	checkMpirunLines(t, res.stderr, `^mpirun: child job 1 \(spawned by rank 0\): node003: rank 2 exited with status 5$`)
}

// TestPMIxChildJobInterrupt: Ctrl-C while a child job runs (its parent
// gone already), on the job's nodes or on nodes it added, ends every
// job: mpirun exits 130 and nothing is left on any node.
func TestPMIxChildJobInterrupt(t *testing.T) {
	prog := openMPI(t, "childjob")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2, UTS: true})
	cmd, stdout, stderr := startMpirun(t, c, "-np", "2", prog, "4", "sleep=1000")
	stdout.waitFor(t, "rank 0 started a child job of 4 ranks")
	interrupted(t, c, cmd, stderr)

	// The same on hosts the job added.
	cmd, stdout, stderr = startMpirun(t, c, "-H", "node001:2", "-np", "2", prog, "4", "sleep=1000", "addhost=node002:2,node003:2")
	stdout.waitFor(t, "rank 0 started a child job of 4 ranks")
	interrupted(t, c, cmd, stderr)
}

// TestPMIxChildJobAddedNodeLost: the orted of a node the job added,
// killed outright while its child job runs, ends every job with a line
// naming that node (status 255, as any orted lost), and nothing is left.
func TestPMIxChildJobAddedNodeLost(t *testing.T) {
	prog := openMPI(t, "childjob")
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2, UTS: true})
	cmd, stdout, stderr := startMpirun(t, c, "-H", "node001:2", "-np", "2", prog, "2", "sleep=1000", "addhost=node002:2")
	stdout.waitFor(t, "rank 0 started a child job of 2 ranks")
	syscall.Kill(ortedOf(t, c, "node002"), syscall.SIGKILL)
	if status := waitExit(t, cmd); status != 255 {
		t.Errorf("exit %d, want 255; stderr:\n%s", status, stderr)
	}
	if left := c.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
		t.Fatalf("left running after an added node's orted was killed: %+v", left)
	}
	if !regexp.MustCompile(`(?m)^mpirun: node002: `).MatchString(stderr.String()) {
		t.Errorf("no line names node002:\n%s", stderr)
	}
}

// TestDVMChildJob: in a DVM a child job belongs to the client of the
// job that started it: its output reaches that client (tagged as its job
// 2), the client's status waits for it, and its failure is that
// client's, whose job ends with the child's status and line, as when the
// client's SIGUSR1 kills the child's ranks; the DVM goes on, and an Open
// MPI client's MPI_Comm_spawn works as in a plain mpirun.
func TestDVMChildJob(t *testing.T) {
	prog := openMPI(t, "childjob")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2, UTS: true})
	dvm, dvmErr, uri := dvmUp(t, c)
	res := dvmRun(t, c, uri, "-np", "2", "--tag-output", prog, "4", "sleep=1")
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
	}
	tagged := []string{"[1,0]<stdout>:rank 0 started a child job of 4 ranks"}
	for i, l := range childLines(4, []string{"node002", "node003"}, parentOf(t, res.stdout)) {
		tagged = append(tagged, fmt.Sprintf("[2,%d]<stdout>:%s", i, l))
	}
	checkLines(t, res.stdout, tagged)

	res = dvmRun(t, c, uri, "-np", "2", prog, "4", "fail=2:5")
	if res.status != 5 {
		t.Errorf("a child exits with 5: exit %d, want 5; stderr:\n%s", res.status, res.stderr)
	}
	checkMpirunLines(t, res.stderr, `^mpirun: child job [0-9]+ \(spawned by rank 0\): node003: rank 2 exited with status 5$`)

	res = dvmRun(t, c, uri, "-np", "2", prog, "5")
	if res.status != 3 {
		t.Errorf("too many children: exit %d, want 3; stderr:\n%s", res.status, res.stderr)
	}
	checkMpirunLines(t, res.stderr,
		`^mpirun: rank 0 asked for a child job: a child job of 5 ranks, but only 4 slots free \(node001: 0, node002: 2, node003: 2\); use --oversubscribe to allow it$`,
		`^mpirun: node001: rank 0 exited with status 3$`)

	res = dvmRun(t, c, uri, "-np", "2", prog, "2", "addhost=node009")
	if res.status != 3 {
		t.Errorf("add-host in a DVM: exit %d, want 3; stderr:\n%s", res.status, res.stderr)
	}
	checkMpirunLines(t, res.stderr,
		`^mpirun: rank 0 asked for a child job: host node009 is not one of the DVM's nodes \(a DVM starts no daemon for a job\)$`,
		`^mpirun: node001: rank 0 exited with status 3$`)

	res = dvmRun(t, c, uri, "-np", "2", prog, "4")
	if res.status != 0 || !strings.Contains(res.stdout, "rank 0 started a child job of 4 ranks") {
		t.Errorf("after a failed child job: exit %d, stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}

	cl, clOut, clErr := startMpirun(t, c, "--dvm", uri, "-np", "2", prog, "4", "sleep=1000")
	clOut.waitFor(t, "rank 0 started a child job of 4 ranks")
	waitParentsExited(t, c, prog)
	cl.Process.Signal(syscall.SIGUSR1) // reaches the child job's ranks too
	if st := waitExit(t, cl); st != 128+10 {
		t.Errorf("SIGUSR1 to the client: exit %d, want 138; stderr:\n%s", st, clErr)
	}
	checkMpirunLines(t, clErr.String(), `^mpirun: child job 1 \(spawned by rank 0\): node00[23]: rank [0-3] .*SIGUSR1.*$`)

	res = dvmRun(t, c, uri, "-np", "2", openMPI(t, "spawn"), "4")
	if res.status != 0 {
		t.Fatalf("MPI_Comm_spawn: exit %d, stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	checkLines(t, res.stdout, spawnLines(4))
	dvmStop(t, c, dvm, dvmErr, uri)
}

// TestPMIxChildJobSignal: a signal mpirun passes on (SIGUSR1) reaches
// the child jobs' ranks too: the children, whose parents have exited,
// die of it, and mpirun says so with their status.
func TestPMIxChildJobSignal(t *testing.T) {
	prog := openMPI(t, "childjob")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2, UTS: true})
	cmd, stdout, stderr := startMpirun(t, c, "-np", "2", prog, "4", "sleep=1000")
	stdout.waitFor(t, "rank 0 started a child job of 4 ranks")
	waitParentsExited(t, c, prog)
	cmd.Process.Signal(syscall.SIGUSR1)
	if status := waitExit(t, cmd); status != 128+10 {
		t.Errorf("exit %d, want 138; stderr:\n%s", status, stderr)
	}
	checkMpirunLines(t, stderr.String(), `^mpirun: child job 1 \(spawned by rank 0\): node00[23]: rank [0-3] .*SIGUSR1.*$`)
	if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
		t.Fatalf("left running: %+v", left)
	}
}

// waitParentsExited waits until no parent rank of the childjob program
// is left: rank 0 says it started the children before it finalises and
// exits, and a signal sent in between would kill it, not the children.
func waitParentsExited(t *testing.T, c *testbed.Cluster, prog string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		parents := 0
		for _, p := range c.Leftovers() {
			if strings.HasPrefix(p.Cmdline, prog+" ") && !strings.HasPrefix(p.Cmdline, prog+" child ") {
				parents++
			}
		}
		if parents == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d parent ranks still running a minute after rank 0 started its child job", parents)
		}
	}
}

// checkMpirunLines checks that mpirun's own lines on stderr are those
// patterns, in order.
func checkMpirunLines(t *testing.T, stderr string, patterns ...string) {
	t.Helper()
	var ours []string
	for _, l := range lines(stderr) {
		if strings.HasPrefix(l, "mpirun:") {
			ours = append(ours, l)
		}
	}
	if len(ours) != len(patterns) {
		t.Fatalf("mpirun's lines:\n%s\nwant %d matching %q", strings.Join(ours, "\n"), len(patterns), patterns)
	}
	for i, p := range patterns {
		if !regexp.MustCompile(p).MatchString(ours[i]) {
			t.Fatalf("mpirun's line %q does not match %q", ours[i], p)
		}
	}
}

// TestOpenMPISpawn: an Open MPI parent of 2 ranks (node001) does
// MPI_Comm_spawn of 4 children (node002, node003): rank 0 exchanges a
// message with each child over the intercommunicator, then both sides
// merge it (MPI_Intercomm_merge) and reduce over the 6 ranks.
func TestOpenMPISpawn(t *testing.T) {
	prog := openMPI(t, "spawn")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2, UTS: true})
	res := mpirun(t, c, "-np", "2", prog, "4")
	if res.status != 0 {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	checkLines(t, res.stdout, spawnLines(4))
}

// TestOpenMPISpawnAddHost: the parents (2 ranks, node001, whose slots
// they take) spawn 4 children with the add-host info key on two nodes
// the job does not have: mpirun starts their orteds, and the children
// connect to their parents, talk and merge as in TestOpenMPISpawn; then
// on a node of the job (host) and an added one.
func TestOpenMPISpawnAddHost(t *testing.T) {
	prog := openMPI(t, "spawn")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2, UTS: true})
	res := mpirun(t, c, "-H", "node001:2", "-np", "2", prog, "4", "child", "add-host=node002:2,node003:2")
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	checkLines(t, res.stdout, spawnLines(4))

	// Half on a node of the job, half on one it adds: their MPI_Init's
	// fence spans both kinds of daemon.
	res = mpirun(t, c, "-H", "node001:2,node002:2", "-np", "2", prog, "4", "child", "host=node002", "add-host=node003:2")
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("host and add-host: exit %d, stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	checkLines(t, res.stdout, spawnLines(4))
}

// TestOpenMPISpawnChildDies: children that exit with 4 before their
// MPI_Init, while their parents wait to connect to them in
// MPI_Comm_spawn, end everything with their status and one line: no
// hang, nothing left.
func TestOpenMPISpawnChildDies(t *testing.T) {
	prog := openMPI(t, "spawn")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2, UTS: true})
	res := mpirun(t, c, "-np", "2", prog, "4", "die")
	if res.status != 4 {
		t.Fatalf("exit %d, want 4; stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	checkMpirunLines(t, res.stderr, `^mpirun: child job 1 \(spawned by rank 0\): node00[23]: rank [0-3] exited with status 4$`)
}

// spawnLines are the lines of testdata/mpi/spawn.c's 2 parents and n
// children.
func spawnLines(n int) []string {
	size := n + 2
	want := []string{fmt.Sprintf("parent 0: merged %d ranks, sum %d (want %d)", size, size*(size-1)/2, size*(size-1)/2)}
	for r := range n {
		want = append(want, fmt.Sprintf("parent 0: child %d answered %d", r, r*10+7),
			fmt.Sprintf("child %d: got %d, merged rank %d", r, r, r+2))
	}
	return want
}

// TestOpenMPISpawnMultiple: MPI_Comm_spawn_multiple of two programs (2
// ranks each) from a parent of 2 ranks: one child job of two apps,
// which talks to its parents as one intercommunicator.
func TestOpenMPISpawnMultiple(t *testing.T) {
	prog := openMPI(t, "spawn")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2, UTS: true})
	res := mpirun(t, c, "-np", "2", prog, "0", "multiple", "2", "2")
	if res.status != 0 {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	want := []string{"parent 0: merged 6 ranks, sum 15 (want 15)"}
	for r := range 4 {
		kind := []string{"multiple-a", "multiple-b"}[r/2]
		want = append(want, fmt.Sprintf("parent 0: child %d answered %d", r, r*10+7),
			fmt.Sprintf("%s %d: got %d, merged rank %d", kind, r, r, r+2))
	}
	checkLines(t, res.stdout, want)
}

// TestOpenMPISpawnNested: a child spawns again: the parents (2 ranks)
// start 2 children, whose rank 0 starts a grandchild of its own (a child
// job of a child job, job 2) and talks to it.
func TestOpenMPISpawnNested(t *testing.T) {
	prog := openMPI(t, "spawn")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2, UTS: true})
	res := mpirun(t, c, "-np", "2", "--tag-output", prog, "2", "nested")
	if res.status != 0 {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	checkLines(t, res.stdout, []string{
		"[1,0]<stdout>:parent 0: child 0 answered 7",
		"[1,0]<stdout>:parent 0: child 1 answered 17",
		"[1,0]<stdout>:parent 0: merged 4 ranks, sum 6 (want 6)",
		"[2,0]<stdout>:nested 0: got 0, merged rank 2",
		"[2,1]<stdout>:nested 1: got 1, merged rank 3",
		"[2,0]<stdout>:child 0: child 0 answered 7",
		"[2,0]<stdout>:child 0: merged 2 ranks, sum 1 (want 1)",
		"[3,0]<stdout>:grandchild 0: got 0, merged rank 1",
	})
}

// TestOpenMPISpawnLoop: the master-worker pattern, a master that spawns
// one worker 30 times in turn on the one slot the job has free: every
// answer is right and mpirun ends with 0, nothing left. A worker's slot
// is free again only once mpirun has heard of its job's end, which may
// come after the master's next spawn: that spawn waits for it. With
// workers that stay 2 s after they finalised the wait is seen; with a
// slot-wait bound below that, the second spawn fails with mpirun's line
// and the master goes on.
func TestOpenMPISpawnLoop(t *testing.T) {
	prog := openMPI(t, "spawnloop")
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 1, UTS: true})
	res := mpirun(t, c, "-np", "1", prog, "30")
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	checkLines(t, res.stdout, []string{"master: 30 of 30 workers answered right"})

	res = mpirun(t, c, "-np", "1", prog, "2", "2")
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("workers that stay: exit %d, stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	checkLines(t, res.stdout, []string{"master: worker 0 answered", "master: worker 1 answered", "master: 2 of 2 workers answered right"})

	res = mpirun(t, c, "--timeouts", "slot-wait=500ms", "-np", "1", prog, "2", "5")
	if res.status != 0 {
		t.Fatalf("a wait that runs out: exit %d, stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	checkLines(t, res.stdout, []string{"master: worker 0 answered", "spawn 1 failed", "master: 1 of 1 workers answered right"})
	checkMpirunLines(t, res.stderr,
		`^mpirun: rank 0 asked for a child job: a child job of 1 rank, but only 0 slots free \(node001: 0, node002: 0\); use --oversubscribe to allow it$`)
}

// TestOpenMPISpawnSlotWaitInterrupted: Ctrl-C while a spawn waits for
// the slot a worker still holds ends every job at once (130), not with
// the slot's refusal once slot-wait is over; nothing is left.
func TestOpenMPISpawnSlotWaitInterrupted(t *testing.T) {
	prog := openMPI(t, "spawnloop")
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 1, UTS: true})
	cmd, stdout, stderr := startMpirun(t, c, "-np", "1", prog, "2", "60")
	stdout.waitFor(t, "master: worker 0 answered")
	time.Sleep(300 * time.Millisecond) // most likely waiting by now; any moment must end the same
	interrupted(t, c, cmd, stderr)
}

// TestDVMChildJobSlotWait: a DVM client's spawn waits for the slot a
// child job frees, as a plain mpirun's does: a worker that stays 1 s
// after it finalised makes the master's next spawn wait for it; one that
// stays 10 s, past the DVM's slot-wait (5 s here), makes it fail with
// the line at its client; the DVM goes on.
func TestDVMChildJobSlotWait(t *testing.T) {
	prog := openMPI(t, "spawnloop")
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 1, UTS: true})
	dvm, dvmErr, uri := dvmUp(t, c, "--timeouts", "slot-wait=5s")
	res := dvmRun(t, c, uri, "-np", "1", prog, "2", "1")
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	checkLines(t, res.stdout, []string{"master: worker 0 answered", "master: worker 1 answered", "master: 2 of 2 workers answered right"})
	res = dvmRun(t, c, uri, "-np", "1", prog, "2", "10")
	if res.status != 0 {
		t.Fatalf("a wait that runs out: exit %d, stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	checkLines(t, res.stdout, []string{"master: worker 0 answered", "spawn 1 failed", "master: 1 of 1 workers answered right"})
	checkMpirunLines(t, res.stderr,
		`^mpirun: rank 0 asked for a child job: a child job of 1 rank, but only 0 slots free \(node001: 0, node002: 0\); use --oversubscribe to allow it$`)
	dvmStop(t, c, dvm, dvmErr, uri)
}

// TestDVMChildJobNeverFits: a spawn of more ranks than its job could
// ever have free is refused at once, while another job holds slots,
// rather than waiting for that job's end and then past slot-wait (an
// hour here: without the check the client would not end in the test's
// time). The waiting job and the DVM go on.
func TestDVMChildJobNeverFits(t *testing.T) {
	prog := openMPI(t, "childjob")
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 1, UTS: true})
	dvm, dvmErr, uri := dvmUp(t, c, "--timeouts", "slot-wait=1h")
	other, otherOut, otherErr := startMpirun(t, c, "--dvm", uri, "-np", "1", "-H", "node002", "sh", "-c", "echo up; exec sleep 600")
	otherOut.waitFor(t, "up")
	res := dvmRun(t, c, uri, "-np", "1", "-H", "node001", prog, "3")
	if res.status != 3 {
		t.Errorf("exit %d, want 3; stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	checkMpirunLines(t, res.stderr,
		`^mpirun: rank 0 asked for a child job: a child job of 3 ranks, but only 0 slots free \(node001: 0, node002: 0\); use --oversubscribe to allow it$`,
		`^mpirun: node001: rank 0 exited with status 3$`)
	other.Process.Signal(syscall.SIGINT)
	if st := waitExit(t, other); st != 130 {
		t.Errorf("the other job: exit %d, want 130; stderr:\n%s", st, otherErr)
	}
	dvmStop(t, c, dvm, dvmErr, uri)
}

// TestOpenMPISpawnRoots: a spawn over MPI_COMM_WORLD whose root is the
// last rank, not 0, and every rank spawning a child of its own at the
// same time (three child jobs at once): each parent's line is right.
func TestOpenMPISpawnRoots(t *testing.T) {
	prog := openMPI(t, "spawnroots")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2, UTS: true})
	res := mpirun(t, c, "-np", "3", "--map-by", "node", prog, "root")
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("root: exit %d, stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	checkLines(t, res.stdout, []string{
		"parent 0: merged 5 ranks, sum 10", "parent 1: merged 5 ranks, sum 10", "parent 2: merged 5 ranks, sum 10",
	})
	res = mpirun(t, c, "-np", "3", "--map-by", "node", prog, "self")
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("self: exit %d, stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	checkLines(t, res.stdout, []string{
		"parent 0: its child answered 100", "parent 1: its child answered 101", "parent 2: its child answered 102",
	})
}

// TestOpenMPISpawnChildAborts: a child's MPI_Abort while its parents
// and the other child wait for it ends every job with its status and a
// line naming the child job, its parent and the rank; nothing is left.
func TestOpenMPISpawnChildAborts(t *testing.T) {
	prog := openMPI(t, "spawnroots")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2, UTS: true})
	res := mpirun(t, c, "-np", "3", "--map-by", "node", prog, "abort")
	if res.status != 7 {
		t.Fatalf("exit %d, want 7; stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	checkMpirunLines(t, res.stderr, `^mpirun: child job 1 \(spawned by rank 2\): node00[1-3]: rank 1 called MPI_Abort with status 7$`)
	if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
		t.Fatalf("left running: %+v", left)
	}
}
