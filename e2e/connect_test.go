package e2e

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"prsh/testbed"
)

// Connect/accept between jobs of one DVM (issue 33): Open MPI's
// MPI_Comm_accept and MPI_Comm_connect over our PMIx servers, their
// ports found through the name service at mpirun.

// connectLines is what the connect program's ranks print once the two
// sides, of na accepting and nc connecting ranks, talked.
func connectLines(na, nc int) (accept, connect []string) {
	for r := range na {
		accept = append(accept, fmt.Sprintf("accept rank %d: remote size %d sum %d", r, nc, nc*(nc+1)/2),
			fmt.Sprintf("accept rank %d: merged rank %d of %d sum %d", r, r, na+nc, (na+nc)*(na+nc-1)/2))
	}
	for r := range nc {
		connect = append(connect, fmt.Sprintf("connect rank %d: remote size %d sum %d", r, na, na*(na+1)/2),
			fmt.Sprintf("connect rank %d: merged rank %d of %d sum %d", r, na+r, na+nc, (na+nc)*(na+nc-1)/2))
	}
	accept = append(accept, "published svc-1", `accept rank 0: got "hello from connect rank 0"`)
	connect = append(connect, `connect rank 0: got "hello from accept rank 0"`)
	return accept, connect
}

// TestDVMConnectAccept: two Open MPI jobs submitted at once to a DVM of
// three nodes, mapped by node so that both span every node: one opens a
// port, publishes it and accepts, the other looks it up and connects;
// they exchange messages over the intercommunicator and the merged
// communicator, disconnect, and both end with 0.
func TestDVMConnectAccept(t *testing.T) {
	prog := openMPI(t, "connect")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 4, UTS: true})
	dvm, dvmErr, uri := dvmUp(t, c, dvmLog()...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the DVM's stderr:\n%s", dvmErr)
		}
	})
	marks := marksDir(t)
	acc, accOut, accErr := dvmClient(t, c, marks, nil, "--dvm", uri, "-np", "3", "--map-by", "node", prog, "accept", "svc-1")
	con, conOut, conErr := dvmClient(t, c, marks, nil, "--dvm", uri, "-np", "2", "--map-by", "node", prog, "connect", "svc-1")
	wantAcc, wantCon := connectLines(3, 2)
	if st := waitExit(t, acc); st != 0 || accErr.String() != "" {
		t.Errorf("accepting job: exit %d, stderr:\n%s", st, accErr)
	}
	if st := waitExit(t, con); st != 0 || conErr.String() != "" {
		t.Errorf("connecting job: exit %d, stderr:\n%s", st, conErr)
	}
	checkLines(t, accOut.String(), wantAcc)
	checkLines(t, conOut.String(), wantCon)
	dvmStop(t, c, dvm, dvmErr, uri)
}

// dvmLog is the DVM's --log-level for a test run with PRSH_TEST_LOG set.
func dvmLog() []string {
	if l := os.Getenv("PRSH_TEST_LOG"); l != "" {
		return []string{"--log-level", l}
	}
	return nil
}

// TestDVMFenceAcrossJobs: two PMIx jobs of a DVM find each other's
// namespace through the name service (a lookup that waits) and connect;
// each rank gets what the other job's last rank put before (a direct
// modex across jobs, asked by daemons too that hold no rank of the
// other job: node003 holds none of b's), then they fence over both
// namespaces collecting data, every rank gets every value of the other
// job right (by direct modex: such a fence hands the library no data),
// and they disconnect. Then the same with each job listing its own
// namespace first (the nodes' lists then differ).
func TestDVMFenceAcrossJobs(t *testing.T) {
	fenceAcross(t, "", "mixed")
}

// TestDVMFenceAcrossUnconnected: two PMIx jobs of a DVM that never
// connect fence over both namespaces collecting data, each rank listing
// them in the same order, then (in two more jobs) its own first. node003
// holds ranks of job a only, so its PMIx server learns job b's namespace
// as its rank enters the fence. Every rank gets every other rank's value
// of both jobs right (by direct modex), then all do it once more with
// another key, every server knowing both namespaces by then.
func TestDVMFenceAcrossUnconnected(t *testing.T) {
	fenceAcross(t, "fence", "fence-mixed")
}

// fenceAcross runs across.c in each mode as two jobs of one DVM of three
// nodes, a of 3 ranks and b of 2, mapped by node (node003 holds only a's
// rank 2), and checks every rank's lines.
func fenceAcross(t *testing.T, modes ...string) {
	prog := openMPI(t, "across")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 4, UTS: true})
	dvm, dvmErr, uri := dvmUp(t, c, dvmLog()...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the DVM's stderr:\n%s", dvmErr)
		}
	})
	sizes := map[string]int{"a": 3, "b": 2}
	for _, mode := range modes {
		clients := map[string]atOnce{}
		for self, other := range map[string]string{"a": "b", "b": "a"} {
			args := []string{"--dvm", uri, "-np", itoa(sizes[self]), "--map-by", "node", prog, self, other}
			if mode != "" {
				args = slices.Insert(args, len(args)-2, mode)
			}
			cmd, out, stderr := dvmClient(t, c, marksDir(t), nil, args...)
			clients[self] = atOnce{cmd, out, stderr}
		}
		for self, other := range map[string]string{"a": "b", "b": "a"} {
			cl := clients[self]
			if st := waitExit(t, cl.cmd); st != 0 || cl.stderr.String() != "" {
				t.Errorf("job %s (%q): exit %d, stderr:\n%s", self, mode, st, cl.stderr)
			}
			checkLines(t, cl.stdout.String(), acrossLines(mode, self, other, sizes))
		}
	}
	dvmStop(t, c, dvm, dvmErr, uri)
}

// acrossLines is what each rank of job self prints in a mode of
// across.c.
func acrossLines(mode, self, other string, sizes map[string]int) []string {
	if strings.HasPrefix(mode, "fence") {
		return unconnectedLines(self, other, sizes)
	}
	var want []string
	for r := range sizes[self] {
		want = append(want, fmt.Sprintf("%s rank %d: fence over both jobs: SUCCESS", self, r))
		for o := range sizes[other] {
			want = append(want, fmt.Sprintf("%s rank %d got \"%s rank %d\"", self, r, other, o))
		}
		want = append(want, fmt.Sprintf("%s rank %d got \"%s early %d\"", self, r, other, sizes[other]-1))
	}
	return want
}

// unconnectedLines is what each rank of job self prints in the fence
// modes of across.c: two fences, each followed by every other rank's
// value of both jobs.
func unconnectedLines(self, other string, sizes map[string]int) []string {
	var want []string
	for r := range sizes[self] {
		for _, word := range []string{"rank", "again"} {
			want = append(want, fmt.Sprintf("%s rank %d: fence over both jobs for %s: SUCCESS", self, r, word))
			for o := range sizes[self] {
				if o != r {
					want = append(want, fmt.Sprintf("%s rank %d got \"%s %s %d\"", self, r, self, word, o))
				}
			}
			for o := range sizes[other] {
				want = append(want, fmt.Sprintf("%s rank %d got \"%s %s %d\"", self, r, other, word, o))
			}
		}
	}
	return want
}

// TestDVMNamesFail: the name service's failures are the program's
// errors, never a hang. MPI_Lookup_name of a name never published fails
// at once (Open MPI 4.1 does not wait); a PMIx lookup that waits at most
// a second fails with a timeout. A job waiting in MPI_Comm_accept for a
// job that looked its port up and called MPI_Abort (its line and its
// status 3) goes on waiting (MPI_Comm_accept waits for a connect; Open
// MPI gives up after 600 s); interrupted, it ends with Ctrl-C's line and
// 130, and its published name goes with it.
func TestDVMNamesFail(t *testing.T) {
	mpi, pmixProg := openMPI(t, "connect"), openMPI(t, "across")
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2, UTS: true})
	dvm, dvmErr, uri := dvmUp(t, c, dvmLog()...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the DVM's stderr:\n%s", dvmErr)
		}
	})
	lookup := func(prog, key, want string) {
		t.Helper()
		res := dvmRun(t, c, uri, "-np", "1", prog, "lookup", key)
		if res.status != 0 || res.stderr != "" {
			t.Errorf("lookup %s: exit %d, stderr:\n%s", key, res.status, res.stderr)
		}
		checkLines(t, res.stdout, []string{want})
	}
	lookup(mpi, "never", "lookup never: MPI_ERR_NAME: invalid name argument")
	lookup(pmixProg, "never", "lookup never: TIMEOUT")

	marks := marksDir(t)
	acc, accOut, accErr := dvmClient(t, c, marks, nil, "--dvm", uri, "-np", "2", "--map-by", "node", mpi, "wait", "svc-2")
	for deadline := time.Now().Add(time.Minute); !strings.Contains(accOut.String(), "published svc-2"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the accepting job did not publish; stderr:\n%s", accErr)
		}
	}
	res := dvmRun(t, c, uri, "-np", "2", "--map-by", "node", mpi, "abort", "svc-2")
	if res.status != 3 {
		t.Errorf("the job that looked the port up and aborted: exit %d, want 3", res.status)
	}
	checkMpirunLine(t, res.stderr, `^mpirun: node001: rank 0 called MPI_Abort with status 3$`)
	lookup(mpi, "svc-2", "found svc-2")
	acc.Process.Signal(syscall.SIGINT)
	if st := waitExit(t, acc); st != 130 {
		t.Errorf("Ctrl-C on the job in MPI_Comm_accept: exit %d, want 130", st)
	}
	checkOneLine(t, accErr.String(), `^mpirun: caught SIGINT, terminating the job$`)
	lookup(mpi, "svc-2", "lookup svc-2: MPI_ERR_NAME: invalid name argument")
	dvmStop(t, c, dvm, dvmErr, uri)
}

// TestDVMConnectPeerDies: a rank of the connecting job exits (status 1)
// instead of entering the connect, once its job's rank 0 is in it (the
// rank watches for Open MPI's "PORT:connect" name). Its job fails with
// its line and 1; the connect fails for every rank in it, never a hang:
// the accepting job's MPI_Comm_accept returns MPI_ERR_OTHER (Open MPI
// 4.1 adds its own ORTE_ERROR_LOG lines), and it ends with 0.
func TestDVMConnectPeerDies(t *testing.T) {
	prog := openMPI(t, "connect")
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2, UTS: true})
	dvm, dvmErr, uri := dvmUp(t, c, dvmLog()...)
	marks := marksDir(t)
	acc, accOut, accErr := dvmClient(t, c, marks, nil, "--dvm", uri, "-np", "2", "--map-by", "node", prog, "accept", "svc-4")
	con, _, conErr := dvmClient(t, c, marks, nil, "--dvm", uri, "-np", "2", "--map-by", "node", prog, "die", "svc-4")
	if st := waitExit(t, con); st != 1 {
		t.Errorf("the connecting job: exit %d, want 1", st)
	}
	checkMpirunLine(t, conErr.String(), `^mpirun: node002: rank 1 exited with status 1$`)
	if st := waitExit(t, acc); st != 0 || strings.Contains(accErr.String(), "mpirun:") {
		t.Errorf("the accepting job: exit %d, stderr:\n%s", st, accErr)
	}
	checkLines(t, accOut.String(), []string{"published svc-4",
		"accept rank 0: MPI_ERR_OTHER: known error not in list", "accept rank 1: MPI_ERR_OTHER: known error not in list"})
	dvmStop(t, c, dvm, dvmErr, uri)
}

// TestPMIxFenceParentChild: a parent job of 2 ranks (node001) and the
// child job of 4 it starts (node002 and node003) fence over both
// namespaces without connecting, collecting data, each job listing its
// own first. No node holds ranks of both, so every node's PMIx server
// learns the other job's namespace as its ranks enter the fence; every
// rank gets every other rank's value of both jobs right.
func TestPMIxFenceParentChild(t *testing.T) {
	prog := openMPI(t, "spawnfence")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2, UTS: true})
	res := mpirun(t, c, "-np", "2", prog, "4")
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
	}
	sizes := map[string]int{"parent": 2, "child": 4}
	var want []string
	for self := range sizes {
		for r := range sizes[self] {
			want = append(want, fmt.Sprintf("%s rank %d: fence over both jobs: SUCCESS", self, r))
			for job, n := range sizes {
				for o := range n {
					if job != self || o != r {
						want = append(want, fmt.Sprintf("%s rank %d got \"%s rank %d\"", self, r, job, o))
					}
				}
			}
		}
	}
	checkLines(t, res.stdout, want)
}
