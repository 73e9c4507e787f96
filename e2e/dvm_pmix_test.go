package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"prsh/modex/pmix"
	"prsh/testbed"
)

// Open MPI programs in a DVM (DVM.md, step 5): each job a PMIx namespace
// of its own in each node's server, let go of at the job's end.

// TestDVMOpenMPI: Open MPI programs run in one DVM job after job, each
// seeing its own world; a rank's MPI_Abort ends its job alone with a
// plain mpirun's line and status, and the jobs after it run; three jobs
// at once each see their own world.
func TestDVMOpenMPI(t *testing.T) {
	hello, abort := openMPI(t, "hello"), openMPI(t, "abort")
	c := cluster(t, testbed.Config{Nodes: 3, Slots: 2, UTS: true})
	plain := mpirun(t, c, "--map-by", "node", "-np", "4", abort)
	dvm, dvmErr, uri := dvmUp(t, c)
	helloJob := func(np int) {
		t.Helper()
		res := dvmRun(t, c, uri, "-np", itoa(np), "--map-by", "node", hello)
		if res.status != 0 || res.stderr != "" {
			t.Fatalf("-np %d: exit %d, stderr:\n%s", np, res.status, res.stderr)
		}
		checkLines(t, res.stdout, helloLines(np))
	}
	for _, np := range []int{6, 1, 4} {
		helloJob(np)
	}
	res := dvmRun(t, c, uri, "--map-by", "node", "-np", "4", abort)
	if res.status != 7 || res.status != plain.status {
		t.Errorf("MPI_Abort(7): exit %d, a plain mpirun's %d; stderr:\n%s", res.status, plain.status, res.stderr)
	}
	checkMpirunLine(t, res.stderr, `^mpirun: node003: rank 2 called MPI_Abort with status 7$`)
	checkMpirunLine(t, plain.stderr, `^mpirun: node003: rank 2 called MPI_Abort with status 7$`)
	helloJob(6)
	sizes := map[string]int{"a": 3, "b": 2, "c": 1} // the 6 slots
	for job, cl := range jobsAtOnce(t, c, uri, sizes, func(string) string { return hello }) {
		cl.checkHello(t, job, sizes[job])
	}
	dvmStop(t, c, dvm, dvmErr, uri)
}

// TestDVMOpenMPINoLeak: Open MPI jobs in a row leave each node's PMIx
// server as it was: a job's namespace is gone from the servers once it
// ended (a later job's rank asks its server for it), and after the 40th
// job each orted's descriptors, memory mappings (PMIx 4.2's shared-memory
// store kept one a namespace) and its server's directory are those after
// the 10th.
func TestDVMOpenMPINoLeak(t *testing.T) {
	hello, peek := openMPI(t, "hello"), openMPI(t, "peek")
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2, UTS: true})
	dvm, dvmErr, uri := dvmUp(t, c)
	jobs := func(n int) {
		for i := range n {
			if res := dvmRun(t, c, uri, "-np", "4", hello); res.status != 0 {
				t.Fatalf("job %d: status %d; stderr:\n%s", i, res.status, res.stderr)
			}
		}
	}
	first := dvmRun(t, c, uri, "-np", "1", peek)
	ns, ok := strings.CutPrefix(strings.TrimSpace(first.stdout), "namespace ")
	if first.status != 0 || !ok {
		t.Fatalf("peek: status %d, stdout %q, stderr %q", first.status, first.stdout, first.stderr)
	}
	jobs(10)
	before := pmixFootprint(t, c)
	jobs(30)
	after := pmixFootprint(t, c)
	t.Logf("after 10 jobs: %+v; after 40: %+v", before, after)
	for node, b := range before {
		a := after[node]
		if a.fds != b.fds || a.files != b.files || a.maps > b.maps+8 {
			t.Errorf("%s's orted after 10 jobs: %+v; after 40: %+v", node, b, a)
		}
	}
	res := dvmRun(t, c, uri, "-np", "2", "--map-by", "node", peek, ns, ".")
	if res.status != 0 {
		t.Fatalf("peek %s: status %d; stderr:\n%s", ns, res.status, res.stderr)
	}
	if gone, held := strings.Count(res.stdout, ns+": gone\n"), strings.Count(res.stdout, ".: held, size 2\n"); gone != 2 || held != 2 {
		t.Errorf("the first job's namespace %s, and the job's own, asked on both nodes after 41 jobs:\n%s", ns, res.stdout)
	}
	dvmStop(t, c, dvm, dvmErr, uri)
}

// pmixHeld is what an orted holds: descriptors, memory mappings, and
// the files in its PMIx server's directory.
type pmixHeld struct {
	fds, maps int
	files     string
}

// pmixFootprint is each orted's pmixHeld once the last job is let go of
// everywhere (a client has its status before the orteds release its
// job): the same three times in a row.
func pmixFootprint(t *testing.T, c *testbed.Cluster) map[string]pmixHeld {
	t.Helper()
	last, same := map[string]pmixHeld{}, 0
	for deadline := time.Now().Add(30 * time.Second); same < 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the daemons did not settle: %+v", last)
		}
		now := map[string]pmixHeld{}
		for _, node := range []string{"node001", "node002"} {
			now[node] = ortedHolds(t, ortedOf(t, c, node))
		}
		if fmt.Sprint(now) == fmt.Sprint(last) && !ranksRun(c) {
			same++
		} else {
			last, same = now, 1
		}
	}
	return last
}

// ranksRun says whether a rank of a job runs on the cluster: a process
// that is none of the DVM's (mpirun, the orteds, the nodes' guards).
func ranksRun(c *testbed.Cluster) bool {
	for _, p := range c.Leftovers() {
		if !strings.Contains(p.Cmdline, "orted") && !strings.Contains(p.Cmdline, "__rank-guard") &&
			!strings.Contains(p.Cmdline, "--dvm-start") {
			return true
		}
	}
	return false
}

// ortedHolds reads pid's pmixHeld in /proc and its server's directory,
// prsh-pmix-PID-* in the node's temporary directory.
func ortedHolds(t *testing.T, pid int) pmixHeld {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	dirs, _ := filepath.Glob(filepath.Join(procTempDir(pid), fmt.Sprintf("prsh-pmix-%d-*", pid)))
	if len(dirs) != 1 {
		t.Fatalf("orted %d: PMIx server directories %v, want one", pid, dirs)
	}
	var files []string
	filepath.Walk(dirs[0], func(path string, _ os.FileInfo, _ error) error {
		files = append(files, strings.TrimPrefix(path, dirs[0]))
		return nil
	})
	return pmixHeld{fds: len(fds), maps: strings.Count(string(maps), "\n"), files: strings.Join(files, " ")}
}

// procTempDir is the temporary directory of process pid: its TMPDIR, else /tmp.
func procTempDir(pid int) string {
	env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	for _, kv := range strings.Split(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok && v != "" {
			return v
		}
	}
	return "/tmp"
}

// TestDVMPMIxOnlyWhenNeeded: a DVM job gets a PMIx namespace only when
// its client's --pmix says it may need one (auto: as a plain mpirun
// decides to boot the server); without one its ranks get the
// tripwire's address, and an Open MPI program that auto cannot see
// (run by env with a PATH of its own) fails saying to pass --pmix on,
// with which it runs.
func TestDVMPMIxOnlyWhenNeeded(t *testing.T) {
	if !pmix.Available {
		t.Skip("built without PMIx: no server to register in")
	}
	hello := openMPI(t, "hello")
	c := cluster(t, testbed.Config{Nodes: 2, UTS: true})
	dvm, dvmErr, uri := dvmUp(t, c)
	echo := []string{"sh", "-c", `echo "$PMIX_SERVER_URI41"`}
	checkServers(t, dvmRun(t, c, uri, append([]string{"-np", "2"}, echo...)...), 2, false)
	checkServers(t, dvmRun(t, c, uri, append([]string{"-np", "2", "--pmix", "on"}, echo...)...), 2, true)
	res := dvmRun(t, c, uri, "-np", "2", hello)
	if res.status != 0 || strings.Count(res.stdout, " of 2 sum 1\n") != 2 {
		t.Errorf("Open MPI with --pmix auto: exit %d; stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	hidden := []string{"env", "PATH=" + filepath.Dir(hello), filepath.Base(hello)}
	res = dvmRun(t, c, uri, append([]string{"-np", "2"}, hidden...)...)
	if res.status != 255 {
		t.Errorf("Open MPI unseen by --pmix auto: exit %d, want 255; stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	checkMpirunLine(t, res.stderr, `^mpirun: node00[12]: rank [01] cannot start: it speaks PMIx \(Open MPI\), but its job has no PMIx namespace \(--pmix off, or --pmix auto found no MPI library in the program\): submit it with --pmix on$`)
	res = dvmRun(t, c, uri, append([]string{"-np", "2", "--pmix", "on"}, hidden...)...)
	if res.status != 0 || strings.Count(res.stdout, " of 2 sum 1\n") != 2 {
		t.Errorf("Open MPI unseen, --pmix on: exit %d; stdout:\n%s\nstderr:\n%s", res.status, res.stdout, res.stderr)
	}
	res = dvmRun(t, c, uri, "--pmix", "maybe", "/bin/true")
	if res.status != 2 {
		t.Errorf("--pmix maybe: exit %d, want 2", res.status)
	}
	checkOneLine(t, res.stderr, `^mpirun: --pmix must be auto, on or off, not "maybe" \(see mpirun --help\)$`)
	dvmStop(t, c, dvm, dvmErr, uri)
}
