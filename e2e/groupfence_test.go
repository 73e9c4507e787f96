package e2e

import (
	"fmt"
	"os/exec"
	"testing"

	"prsh/testbed"
)

// TestPMIxGroupFence: fences over part of the job (PMIx_Fence with a
// list of processes). The two halves of 6 ranks on 3 nodes each fence
// over their own half at once, collecting data, and each rank then gets
// the value the next rank of its half put, as optional: from what the
// fence brought, not fetched from the peer's node (without the data the
// get waits for ever: checked by hand, the test then hangs); every rank
// then fences over the whole job. Mapped by slot, each half spans two of
// the nodes (the third takes no part in its fence); mapped by node, both
// span all three.
func TestPMIxGroupFence(t *testing.T) {
	prog := openMPI(t, "groupfence")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2, UTS: true})
	var want []string
	for r := range 6 {
		lo := r / 3 * 3
		want = append(want, fmt.Sprintf("rank %d of ranks %d-%d got \"value of rank %d\"", r, lo, lo+2, lo+(r-lo+1)%3))
	}
	for _, mapping := range []string{"slot", "node"} {
		res := mpirun(t, c, "-np", "6", "--map-by", mapping, prog, "halves-collected")
		if res.status != 0 || res.stderr != "" {
			t.Fatalf("--map-by %s: exit %d, stderr:\n%s", mapping, res.status, res.stderr)
		}
		checkLines(t, res.stdout, want)
	}
}

// TestPMIxGroupFenceLeft: a rank listed in a fence over part of the job
// finalises and exits instead of entering it. The fence fails for the
// ranks in it (PMIX_ERROR, where a fence refused, as before, said
// NOT-SUPPORTED), which go on and end the job with 0: no hang. Mapped by
// node, the rank that leaves (rank 2) is on node003 with rank 5, which
// is in no group: its daemon hears of the group only when asked for its
// part of the fence. A listed rank that exits without finalising fails
// the job with one line instead.
func TestPMIxGroupFenceLeft(t *testing.T) {
	prog := openMPI(t, "groupfence")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2, UTS: true})
	res := mpirun(t, c, "-np", "6", "--map-by", "node", prog, "leave")
	if res.status != 0 {
		t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
	}
	checkLines(t, res.stdout, []string{"rank 0: fence over ranks 0-2: ERROR", "rank 1: fence over ranks 0-2: ERROR"})

	// Exiting without finalising fails the job, as in a fence over all.
	res = mpirun(t, c, "-np", "6", "--map-by", "node", prog, "exit")
	if res.status != 255 {
		t.Errorf("rank 2 exits without finalising: exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkMpirunLine(t, res.stderr, `^mpirun: node003: rank 2 exited with status 0 without finalizing MPI \(PMI\)$`)
}

// TestDVMGroupFence: two Open MPI jobs in one DVM run their halves'
// fences at the same time (all their ranks meet first): four fences over
// part of a job in flight at once, each job's in its own collectives.
// (A DVM's PMIx servers keep data in the hash store, where the get
// cannot be told to look only at what the fence brought.)
func TestDVMGroupFence(t *testing.T) {
	prog := openMPI(t, "groupfence")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 4, UTS: true})
	dvm, dvmErr, uri := dvmUp(t, c)
	marks := marksDir(t)
	sizes := map[string]int{"a": 6, "b": 4}
	var all []string
	for job, np := range sizes {
		for r := range np {
			all = append(all, job+itoa(r))
		}
	}
	type client struct {
		cmd         *exec.Cmd
		out, stderr *lockedBuffer
	}
	clients := map[string]client{}
	for job, np := range sizes {
		cmd, out, stderr := dvmClient(t, c, marks, nil, "--dvm", uri, "-np", itoa(np), "--map-by", "node",
			"sh", "-c", meet(job, all, "exec "+prog+" halves"))
		clients[job] = client{cmd, out, stderr}
	}
	for job, cl := range clients {
		if st := waitExit(t, cl.cmd); st != 0 || cl.stderr.String() != "" {
			t.Errorf("job %s: exit %d, stderr:\n%s", job, st, cl.stderr)
			continue
		}
		np, half := sizes[job], sizes[job]/2
		var want []string
		for r := range np {
			lo, n := 0, half
			if r >= half {
				lo, n = half, np-half
			}
			want = append(want, fmt.Sprintf("rank %d of ranks %d-%d got \"value of rank %d\"", r, lo, lo+n-1, lo+(r-lo+1)%n))
		}
		checkLines(t, cl.out.String(), want)
	}
	dvmStop(t, c, dvm, dvmErr, uri)
}

// TestPMIxFenceTimeout: a fence whose PMIX_TIMEOUT passes before every
// rank listed entered returns PMIX_ERR_TIMEOUT, and the ranks go on. Over
// part of a job: ranks 0 and 1 of 3 (one a node) fence over ranks 0-2
// within a second, which rank 2 never enters; then all fence over the
// whole job and end with 0. Over two jobs of a DVM: job a's ranks fence
// over both namespaces within a second, which job b's never enter (they
// wait for a's "a-done", published once every rank of a timed out).
func TestPMIxFenceTimeout(t *testing.T) {
	group, across := openMPI(t, "groupfence"), openMPI(t, "across")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2, UTS: true})
	res := mpirun(t, c, "-np", "3", "--map-by", "node", group, "timeout")
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
	}
	checkLines(t, res.stdout, []string{"rank 0: fence over ranks 0-2 within 1 s: TIMEOUT",
		"rank 1: fence over ranks 0-2 within 1 s: TIMEOUT", "rank 0: fence over the job: SUCCESS",
		"rank 1: fence over the job: SUCCESS", "rank 2: fence over the job: SUCCESS"})

	dvm, dvmErr, uri := dvmUp(t, c, dvmLog()...)
	marks := marksDir(t)
	a, aOut, aErr := dvmClient(t, c, marks, nil, "--dvm", uri, "-np", "3", "--map-by", "node", across, "timeout", "a", "b")
	b, bOut, bErr := dvmClient(t, c, marks, nil, "--dvm", uri, "-np", "2", "--map-by", "node", across, "idle", "b", "a")
	if st := waitExit(t, a); st != 0 || aErr.String() != "" {
		t.Errorf("job a: exit %d, stderr:\n%s", st, aErr)
	}
	if st := waitExit(t, b); st != 0 || bErr.String() != "" {
		t.Errorf("job b: exit %d, stderr:\n%s", st, bErr)
	}
	var wantA, wantB []string
	for r := range 3 {
		wantA = append(wantA, fmt.Sprintf("a rank %d: fence over both jobs within 1 s: TIMEOUT", r))
	}
	for r := range 2 {
		wantB = append(wantB, fmt.Sprintf("b rank %d: lookup a-done: SUCCESS", r))
	}
	checkLines(t, aOut.String(), wantA)
	checkLines(t, bOut.String(), wantB)
	dvmStop(t, c, dvm, dvmErr, uri)
}
