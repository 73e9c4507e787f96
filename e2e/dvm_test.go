package e2e

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"prsh/errmgr"
	"prsh/ranks/guard"
	"prsh/testbed"
)

// The DVM (mpirun --dvm-start, --dvm, --dvm-stop; daemon/protocol/DVM.md):
// daemons started once, jobs submitted one after another or at once, each
// as a plain mpirun shows it, and nothing left running once the DVM is
// stopped. The jobs at once are in dvmjobs_test.go.

// dvmUp starts a DVM on c's nodes and returns its process and the file
// that holds its URI, once written (the DVM is up).
func dvmUp(t *testing.T, c *testbed.Cluster, args ...string) (*exec.Cmd, *lockedBuffer, string) {
	t.Helper()
	uriFile := filepath.Join(t.TempDir(), "dvm.uri")
	cmd, stdout, stderr := startMpirun(t, c, append([]string{"--dvm-start", "--dvm-uri", uriFile}, args...)...)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(uriFile); err == nil {
			uri := strings.TrimSpace(string(b))
			// The printed line comes through a pipe the test reads: it
			// may come a little after the file.
			for end := time.Now().Add(10 * time.Second); !strings.Contains(stdout.String(), "\n") && time.Now().Before(end); {
				time.Sleep(10 * time.Millisecond)
			}
			if got := strings.TrimSpace(stdout.String()); got != uri {
				t.Errorf("the DVM printed %q, its URI file holds %q", got, uri)
			}
			return cmd, stderr, uriFile
		}
		if time.Now().After(deadline) {
			t.Fatalf("the DVM did not come up; stderr:\n%s", stderr)
		}
	}
}

// dvmRun runs mpirun as a client of the DVM.
func dvmRun(t *testing.T, c *testbed.Cluster, uriFile string, args ...string) result {
	t.Helper()
	return runMpirun(t, filepath.Join(bin, "mpirun"), append(os.Environ(), c.Env()...), append([]string{"--dvm", uriFile}, args...)...)
}

// dvmStop stops the DVM and checks that it ended well and left nothing.
func dvmStop(t *testing.T, c *testbed.Cluster, dvm *exec.Cmd, stderr *lockedBuffer, uriFile string) {
	t.Helper()
	res := runMpirun(t, filepath.Join(bin, "mpirun"), append(os.Environ(), c.Env()...), "--dvm-stop", uriFile)
	if res.status != 0 {
		t.Errorf("mpirun --dvm-stop: status %d, stderr:\n%s", res.status, res.stderr)
	}
	if st := waitExit(t, dvm); st != 0 {
		t.Errorf("the DVM exited %d; stderr:\n%s", st, stderr)
	}
	if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
		c.KillLeftovers()
		t.Errorf("the DVM left processes running: %+v", left)
	}
	if _, err := os.Stat(uriFile); err == nil {
		t.Errorf("the DVM left its URI file %s", uriFile)
	}
}

// TestDVMJobsInARow: jobs one after another in one DVM, each with its
// output, its failure line and its status as a plain mpirun gives them,
// on daemons spawned once; stopping the DVM leaves nothing running.
func TestDVMJobsInARow(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	failing := []string{"-np", "3", "sh", "-c", `[ "$PRSH_RANK" = 1 ] && exit 3; exec sleep 60`}
	missing := []string{"-np", "1", "/no/such/program"} // one rank: the first failure is always its
	plain, plainMissing := mpirun(t, c, failing...), mpirun(t, c, missing...)
	dvm, dvmErr, uri := dvmUp(t, c)
	orted := ortedOf(t, c, "node002")

	res := dvmRun(t, c, uri, "-np", "3", "sh", "-c", `echo "out $PRSH_RANK $PRSH_NODE"; echo "err $PRSH_RANK" >&2`)
	if res.status != 0 {
		t.Fatalf("status %d; stderr:\n%s", res.status, res.stderr)
	}
	wantSet(t, res.stdout, "out 0 node001", "out 1 node002", "out 2 node003")
	wantSet(t, res.stderr, "err 0", "err 1", "err 2")

	if res := dvmRun(t, c, uri, "/bin/true"); res.status != 0 || res.stdout+res.stderr != "" {
		t.Errorf("/bin/true: status %d, stdout %q, stderr %q", res.status, res.stdout, res.stderr)
	}
	res = dvmRun(t, c, uri, failing...)
	if res.status != 3 || res.stderr != plain.stderr {
		t.Errorf("a failing job: status %d, stderr %q; a plain mpirun's: status %d, stderr %q", res.status, res.stderr, plain.status, plain.stderr)
	}
	res = dvmRun(t, c, uri, missing...) // no rank starts: no output at all
	if res.status != 127 || res.stderr != plainMissing.stderr {
		t.Errorf("a missing program: status %d, stderr %q; a plain mpirun's: status %d, stderr %q", res.status, res.stderr, plainMissing.status, plainMissing.stderr)
	}
	for i := range 3 { // the DVM goes on after a failure, on the same daemons
		if res := dvmRun(t, c, uri, "-np", "3", "/bin/true"); res.status != 0 {
			t.Fatalf("job %d after the failure: status %d; stderr:\n%s", i, res.status, res.stderr)
		}
	}
	if again := ortedOf(t, c, "node002"); again != orted {
		t.Errorf("node002's orted was %d, is %d: the DVM spawned it again", orted, again)
	}
	dvmStop(t, c, dvm, dvmErr, uri)
}

// TestDVMStaleURI: a URI whose DVM is gone says so in one line, 255.
func TestDVMStaleURI(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 1})
	uri := filepath.Join(t.TempDir(), "dvm.uri")
	gone := "unix:" + filepath.Join(t.TempDir(), "dvm.sock")
	if err := os.WriteFile(uri, []byte(gone+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := dvmRun(t, c, uri, "/bin/true")
	if res.status != 255 {
		t.Errorf("status %d, want 255", res.status)
	}
	checkOneLine(t, res.stderr, `^mpirun: --dvm `+gone+`: no DVM answers there .*: connect: no such file or directory$`)
}

// TestDVMClientInterrupted: Ctrl-C of a client ends its job alone, as a
// plain mpirun's Ctrl-C ends its job; the next job runs.
func TestDVMClientInterrupted(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	dvm, dvmErr, uri := dvmUp(t, c)
	client, stderr, _ := started(t, c, 2, "--dvm", uri, "-np", "2", "sh", "-c", `touch "$MARKS/$PRSH_RANK"; exec sleep 60`)
	client.Process.Signal(syscall.SIGINT)
	if st := waitExit(t, client); st != 130 {
		t.Errorf("the client exited %d, want 130; stderr:\n%s", st, stderr)
	}
	checkOneLine(t, stderr.String(), `^mpirun: caught SIGINT, terminating the job$`)
	if res := dvmRun(t, c, uri, "-np", "2", "/bin/true"); res.status != 0 {
		t.Errorf("the next job: status %d; stderr:\n%s", res.status, res.stderr)
	}
	dvmStop(t, c, dvm, dvmErr, uri)
}

// TestDVMMPICH: MPICH programs run in a DVM one after another, each in a
// PMI key-value space of its own, with the fences of its own job.
func TestDVMMPICH(t *testing.T) {
	hello := mpich(t, "hello")
	c := cluster(t, testbed.Config{Nodes: 4, Slots: 2})
	dvm, dvmErr, uri := dvmUp(t, c)
	for _, np := range []int{8, 3, 8} {
		res := dvmRun(t, c, uri, "-np", itoa(np), "--map-by", "node", hello)
		if res.status != 0 || res.stderr != "" {
			t.Fatalf("-np %d: exit %d, stderr:\n%s", np, res.status, res.stderr)
		}
		checkLines(t, res.stdout, helloLines(np))
	}
	spaces := map[string]bool{}
	for range 2 {
		res := dvmRun(t, c, uri, "-np", "1", "sh", "-c", `echo "$PMI_JOBID"`)
		spaces[strings.TrimSpace(res.stdout)] = true
	}
	if len(spaces) != 2 {
		t.Errorf("two jobs' PMI_JOBID: %v, want two different names", spaces)
	}
	dvmStop(t, c, dvm, dvmErr, uri)
}

// TestDVMNoLeak: jobs in a row, and jobs three at once, leave the
// daemons as they were: mpirun's and each orted's open descriptors and
// the processes on the nodes (no guard or rank left from a job) after
// the 80th job are those after the 10th, with clients that went away
// without a job between.
func TestDVMNoLeak(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2, Slots: 2})
	dvm, dvmErr, uri := dvmUp(t, c)
	jobs := func(n int) {
		for i := range n {
			if res := dvmRun(t, c, uri, "-np", "4", "sh", "-c", "echo $PRSH_RANK"); res.status != 0 {
				t.Fatalf("job %d: status %d; stderr:\n%s", i, res.status, res.stderr)
			}
		}
	}
	jobs(10)
	fds, procs := dvmFootprint(t, c, dvm.Process.Pid)
	jobs(30)
	for range 10 { // a usage error after it reached the DVM
		if res := dvmRun(t, c, uri, "-H", "node009", "/bin/true"); res.status != 2 {
			t.Fatalf("a host outside the DVM: status %d", res.status)
		}
	}
	for range 10 {
		var clients []*exec.Cmd
		for range 3 {
			cmd, _, _ := startMpirun(t, c, "--dvm", uri, "-np", "4", "sh", "-c", "echo $PRSH_RANK")
			clients = append(clients, cmd)
		}
		for _, cmd := range clients {
			if st := waitExit(t, cmd); st != 0 {
				t.Fatalf("jobs at once: status %d", st)
			}
		}
	}
	jobs(10)
	if fds2, procs2 := dvmFootprint(t, c, dvm.Process.Pid); fds2 != fds || !slices.Equal(procs2, procs) {
		t.Errorf("after 10 jobs: %s, processes %v; after 80: %s, processes %v", fds, procs, fds2, procs2)
	}
	dvmStop(t, c, dvm, dvmErr, uri)
}

// dvmFootprint is mpirun's, each orted's and each node's guard's open
// descriptors (the guard named by its pid: it lives as long as the DVM)
// and the command lines running on the nodes, once the last job is let
// go of everywhere (a client has its status before the orteds release
// its job, and a rank's pipes close just after their last byte went
// up): the same three times in a row.
func dvmFootprint(t *testing.T, c *testbed.Cluster, root int) (string, []string) {
	t.Helper()
	pids := map[string]int{"mpirun": root}
	for _, node := range []string{"node001", "node002"} {
		pids[node] = ortedOf(t, c, node)
		guard := guardOf(t, c, node)
		pids[fmt.Sprintf("%s's guard %d", node, guard)] = guard
	}
	last, same := "", 0
	for deadline := time.Now().Add(30 * time.Second); same < 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the daemons did not settle: %s", last)
		}
		now := footprint(t, c, pids)
		if now == last {
			same++
		} else {
			last, same = now, 1
		}
	}
	fds, procs, _ := strings.Cut(last, "\n")
	return fds, strings.Split(procs, "\n")
}

// footprint is one look at the descriptors of pids and the processes on
// the nodes, as lines.
func footprint(t *testing.T, c *testbed.Cluster, pids map[string]int) string {
	var fds, procs []string
	for _, who := range slices.Sorted(maps.Keys(pids)) {
		entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pids[who]))
		if err != nil {
			t.Fatal(err)
		}
		fds = append(fds, fmt.Sprintf("%s: %d descriptors", who, len(entries)))
	}
	for _, p := range c.Leftovers() {
		procs = append(procs, p.Node+": "+p.Cmdline)
	}
	slices.Sort(procs)
	return strings.Join(fds, ", ") + "\n" + strings.Join(procs, "\n")
}

// TestDVMJobFlags: a job's own flags in a DVM: -H a subset of its hosts,
// --tag-output, and --timeout, which ends that job alone (124).
func TestDVMJobFlags(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	dvm, dvmErr, uri := dvmUp(t, c)
	res := dvmRun(t, c, uri, "-H", "node003", "--tag-output", "sh", "-c", `echo "$PRSH_NODE"`)
	if res.status != 0 || res.stdout != "[1,0]<stdout>:node003\n" {
		t.Errorf("-H node003 --tag-output: status %d, stdout %q, stderr %q", res.status, res.stdout, res.stderr)
	}
	res = dvmRun(t, c, uri, "-H", "node009", "/bin/true")
	if res.status != 2 || !strings.Contains(res.stderr, "node009 is not a node of the DVM") {
		t.Errorf("a host outside the DVM: status %d, stderr %q", res.status, res.stderr)
	}
	res = dvmRun(t, c, uri, "--timeout", "1", "-np", "3", "sleep", "60")
	if res.status != 124 {
		t.Errorf("--timeout: status %d, want 124; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: the job ran past --timeout 1s, terminating it$`)
	if res := dvmRun(t, c, uri, "-np", "3", "/bin/true"); res.status != 0 {
		t.Errorf("the job after the timeout: status %d; stderr:\n%s", res.status, res.stderr)
	}
	dvmStop(t, c, dvm, dvmErr, uri)
}

// TestDVMClientGone: a client killed while its job runs takes its job
// with it (as SIGHUP would), and only its job: the ranks end, the next
// job runs.
func TestDVMClientGone(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	dvm, dvmErr, uri := dvmUp(t, c)
	client, _, marks := started(t, c, 2, "--dvm", uri, "-np", "2", "sh", "-c", `touch "$MARKS/$PRSH_RANK"; exec sleep 600.234`)
	client.Process.Kill()
	waitExit(t, client)
	res := dvmRun(t, c, uri, "-np", "2", "sh", "-c", `pgrep -f "sleep 600[.]234" || echo none`)
	if res.status != 0 || res.stdout != "none\nnone\n" {
		t.Errorf("the job after a client was killed: status %d, stdout %q (the killed client's ranks must be gone), stderr %q", res.status, res.stdout, res.stderr)
	}
	if n := countMarks(marks); n != 2 {
		t.Errorf("%d marks, want 2", n)
	}
	dvmStop(t, c, dvm, dvmErr, uri)
}

// TestDVMJobEscapeesEnd: what a DVM job's ranks started, out of their
// process group or session, ends with that job, while the DVM and each
// node's guard (the same process job after job) go on.
func TestDVMJobEscapeesEnd(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	dvm, dvmErr, uri := dvmUp(t, c)
	if res := dvmRun(t, c, uri, "/bin/true"); res.status != 0 {
		t.Fatalf("the first job: status %d; stderr:\n%s", res.status, res.stderr)
	}
	guards := map[string]int{"node001": guardOf(t, c, "node001"), "node002": guardOf(t, c, "node002")}
	for _, e := range escapees {
		marks := t.TempDir()
		res := dvmRun(t, c, uri, "-x", "M="+marks, "sh", "-c", e.start+waitMark+"exit 0")
		if res.status != 0 || countMarks(marks) != 2 {
			t.Fatalf("%s: status %d, %d of 2 escapees ran; stderr:\n%s", e.name, res.status, countMarks(marks), res.stderr)
		}
		waitEscapeesGone(t, c, e.name)
		for node, pid := range guards {
			if now := guardOf(t, c, node); now != pid {
				t.Errorf("%s: %s's guard is %d, was %d: it must serve the DVM's whole life", e.name, node, now, pid)
			}
		}
	}
	dvmStop(t, c, dvm, dvmErr, uri)
}

// waitEscapeesGone waits until no escapee (a sleep 77x) runs on any node:
// a client has its status before the orteds release its job.
func waitEscapeesGone(t *testing.T, c *testbed.Cluster, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var left []string
		for _, p := range c.Leftovers() {
			if strings.Contains(p.Cmdline, "sleep 77") {
				left = append(left, p.Node+": "+p.Cmdline)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: escapees outlived their job: %q", what, left)
		}
	}
}

// TestDVMJobCgroup: where cgroup v2 is delegated (here, as root), each
// DVM job's ranks run in a cgroup of that job's own, removed at its end;
// the node's guard, which outlives the job, runs outside it.
func TestDVMJobCgroup(t *testing.T) {
	probe, err := guard.NewCgroup()
	if err != nil {
		t.Skipf("no job cgroup here: %v", err)
	}
	base := filepath.Dir(probe.Dir()) // the orteds run in our cgroup
	probe.Remove(time.Second)
	c := cluster(t, testbed.Config{Nodes: 1})
	dvm, dvmErr, uri := dvmUp(t, c)
	seen := map[string]bool{}
	for job := range 2 {
		res := dvmRun(t, c, uri, "sh", "-c", `sed -n 's/^0:://p' /proc/self/cgroup /proc/$PPID/cgroup`)
		got := lines(res.stdout)
		if res.status != 0 || len(got) != 2 {
			t.Fatalf("job %d: status %d, cgroups %q (want the rank's and its guard's); stderr:\n%s", job, res.status, got, res.stderr)
		}
		rank, guardCg := got[0], got[1]
		if !strings.HasPrefix(filepath.Base(rank), "prsh-job-") || seen[rank] || rank == guardCg {
			t.Errorf("job %d: rank in cgroup %s, its guard in %s, earlier jobs' %v: want a prsh-job-* of its own", job, rank, guardCg, seen)
		}
		seen[rank] = true
		dir := filepath.Join(base, filepath.Base(rank))
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(dir); os.IsNotExist(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %d: its cgroup %s is left behind", job, dir)
			}
		}
	}
	dvmStop(t, c, dvm, dvmErr, uri)
}

// TestDVMOrtedKilledEscapees: an orted of a DVM killed outright while a
// job's ranks and their escapees run, its guard having served an earlier
// job: the guard still takes everything down there (nothing else reaches
// that node any more: the DVM goes on without it), and nothing is left
// once the DVM is stopped.
func TestDVMOrtedKilledEscapees(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	dvm, dvmErr, uri := dvmUp(t, c)
	if res := dvmRun(t, c, uri, "/bin/true"); res.status != 0 {
		t.Fatalf("the first job: status %d; stderr:\n%s", res.status, res.stderr)
	}
	marks := t.TempDir()
	client, stderr, _ := started(t, c, 3, "--dvm", uri, "-x", "M="+marks, "sh", "-c",
		escapees[1].start+waitMark+`touch "$MARKS/$PRSH_RANK"; exec sleep 600`)
	syscall.Kill(ortedOf(t, c, "node002"), syscall.SIGKILL)
	if st := waitExit(t, client); st != 255 {
		t.Errorf("the client exited %d, want 255; stderr:\n%s", st, stderr)
	}
	dvmStop(t, c, dvm, dvmErr, uri)
	if n := countMarks(marks); n != 3 {
		t.Errorf("%d of 3 escapees ran", n)
	}
}

// BenchmarkDVMJob: a small job (/bin/true, one rank on each of 16
// nodes, or one rank on one) through a DVM, one after another and eight
// at once, beside a fresh mpirun of the same job on the same nodes
// (issue 31's first ratios; binaries without the race detector).
func BenchmarkDVMJob(b *testing.B) {
	dir, err := plainBin()
	if err != nil {
		b.Fatal(err)
	}
	c, err := testbed.Start(testbed.Config{Nodes: 16})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	mpirun := func(args ...string) error {
		cmd := exec.Command(filepath.Join(dir, "mpirun"), args...)
		cmd.Env = append(os.Environ(), c.Env()...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("mpirun %v: %v: %s", args, err, out)
		}
		return nil
	}
	run := func(b *testing.B, args ...string) {
		if err := mpirun(args...); err != nil {
			b.Fatal(err)
		}
	}
	jobs := map[string][]string{"16 ranks": {"/bin/true"}, "1 rank": {"-np", "1", "/bin/true"}}
	for _, name := range []string{"16 ranks", "1 rank"} {
		b.Run("plain/"+name, func(b *testing.B) {
			for range b.N {
				run(b, jobs[name]...)
			}
		})
	}
	uri := filepath.Join(b.TempDir(), "dvm.uri")
	dvm := exec.Command(filepath.Join(dir, "mpirun"), "--dvm-start", "--dvm-uri", uri)
	dvm.Env = append(os.Environ(), c.Env()...)
	if err := dvm.Start(); err != nil {
		b.Fatal(err)
	}
	defer dvm.Wait()
	for _, err := os.Stat(uri); err != nil; _, err = os.Stat(uri) {
		time.Sleep(10 * time.Millisecond)
	}
	defer run(b, "--dvm-stop", uri)
	for _, name := range []string{"16 ranks", "1 rank"} {
		b.Run("dvm/"+name, func(b *testing.B) {
			for range b.N {
				run(b, append([]string{"--dvm", uri}, jobs[name]...)...)
			}
		})
	}
	for _, name := range []string{"16 ranks", "1 rank"} {
		b.Run("dvm-8-at-once/"+name, func(b *testing.B) { // ns/op: the time a job takes of the whole
			b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := mpirun(append([]string{"--dvm", uri}, jobs[name]...)...); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// TestDVMStoppedUnderAJob: --dvm-stop while a job runs ends the job,
// whose client says why and exits 255, and leaves nothing running.
func TestDVMStoppedUnderAJob(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	dvm, dvmErr, uri := dvmUp(t, c)
	client, stderr, _ := started(t, c, 2, "--dvm", uri, "-np", "2", "sh", "-c", `touch "$MARKS/$PRSH_RANK"; exec sleep 600`)
	dvmStop(t, c, dvm, dvmErr, uri)
	if st := waitExit(t, client); st != 255 {
		t.Errorf("the client exited %d, want 255; stderr:\n%s", st, stderr)
	}
	checkOneLine(t, stderr.String(), `^mpirun: the DVM is stopping \(mpirun --dvm-stop\), terminating the job$`)
}

// TestDVMClientSignals: a client's Ctrl-Z stops its job's ranks and then
// the client, SIGCONT resumes both, and SIGUSR1 reaches the ranks, as
// with a plain mpirun.
func TestDVMClientSignals(t *testing.T) {
	dvmClientSignals(t, testbed.Config{Nodes: 2}, 2, "-np", "2", "sh", "-c",
		`trap 'echo "got $PRSH_RANK"; exit 0' USR1; echo $$ > "$MARKS/$PRSH_RANK.tmp"; mv "$MARKS/$PRSH_RANK.tmp" "$MARKS/$PRSH_RANK"; while :; do sleep 0.1; done`)
}

// dvmClientSignals runs a client of a DVM on cfg's cluster with args,
// whose ranks each leave their pid's mark and exit 0 on SIGUSR1: Ctrl-Z
// stops the ranks and then the client, SIGCONT resumes them, and SIGUSR1
// reaches every rank, so that the client exits 0.
func dvmClientSignals(t *testing.T, cfg testbed.Config, ranks int, args ...string) {
	c := cluster(t, cfg)
	dvm, dvmErr, uri := dvmUp(t, c)
	client, stderr, marks := started(t, c, ranks, append([]string{"--dvm", uri}, args...)...)
	stopAndContinue(t, client, markedPids(t, marks, ranks))
	client.Process.Signal(syscall.SIGUSR1)
	if st := waitExit(t, client); st != 0 {
		t.Errorf("exit %d, want 0 (every rank trapped USR1 and exited 0); stderr:\n%s", st, stderr)
	}
	dvmStop(t, c, dvm, dvmErr, uri)
}

// guardOf is the pid of node's guard, which must run.
func guardOf(t *testing.T, c *testbed.Cluster, node string) int {
	t.Helper()
	for _, p := range c.Leftovers() {
		if p.Node == node && strings.Contains(p.Cmdline, guard.GuardArgPrefix) {
			return p.PID
		}
	}
	t.Fatalf("no guard on %s", node)
	return 0
}

// TestDVMUsage: DVM commands given wrongly are one line and exit 2.
func TestDVMUsage(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 1})
	for _, tc := range []struct {
		args []string
		line string
	}{
		{[]string{"--dvm-start", "/bin/true"}, `--dvm-start takes no command: submit jobs with mpirun --dvm URI`},
		{[]string{"--dvm-start", "--dvm", "x", "/bin/true"}, `--dvm-start and --dvm: give one`},
		{[]string{"--dvm-uri", "f", "/bin/true"}, `--dvm-uri goes with --dvm-start`},
		{[]string{"--dvm-stop", "x", "/bin/true"}, `--dvm-stop takes no command \(/bin/true\)`},
	} {
		res := mpirun(t, c, tc.args...)
		if res.status != 2 {
			t.Errorf("mpirun %v: status %d, want 2", tc.args, res.status)
		}
		checkOneLine(t, res.stderr, `^mpirun: `+tc.line+` \(see mpirun --help\)$`)
	}
}

// TestDVMLostDaemon: a leaf orted killed (SIGKILL) under two jobs: the
// job with a rank there fails with the node's line and 255, the other
// goes on and ends with 0, and the DVM goes on without the node (DVM.md,
// "Failure policy"): a later job that fits the other nodes runs, one
// that needs the lost node's slot or names it is refused with 2 naming
// it, each later client is told of the loss in one line, and --dvm-stop
// leaves nothing anywhere.
func TestDVMLostDaemon(t *testing.T) { checkLostLeaf(t, "node002") }

// TestDVMLostDaemonBinomial: as TestDVMLostDaemon, with --routed
// binomial: node003's orted (daemon 3) is a routing child of node001's,
// which passes each Launch on to it, and is told of the loss by mpirun.
func TestDVMLostDaemonBinomial(t *testing.T) {
	checkLostLeaf(t, "node003", "--routed", "binomial")
}

// TestDVMLostDaemonDirect: as TestDVMLostDaemon, with --routed direct
// and a spawn tree of degree 2 (node003's orted is node001's child): the
// loss of node003 reaches mpirun through node001, and mpirun, which
// sends every daemon its Launch itself, stops sending node003 any.
func TestDVMLostDaemonDirect(t *testing.T) {
	checkLostLeaf(t, "node003", "--routed", "direct", "--spawn-degree", "2")
}

// checkLostLeaf kills node's orted, a leaf of the spawn tree of a DVM of
// three nodes started with dvmArgs, under a job on every node and one on
// node001 (TestDVMLostDaemon).
func checkLostLeaf(t *testing.T, node string, dvmArgs ...string) {
	c := cluster(t, testbed.Config{Nodes: 3})
	dvm, dvmErr, uri := dvmUp(t, c, dvmArgs...)
	client, stderr, _ := started(t, c, 3, "--dvm", uri, "-np", "3", "sh", "-c", `touch "$MARKS/$PRSH_RANK"; exec sleep 600`)
	other, otherErr, marks := started(t, c, 1, "--dvm", uri, "-np", "1", "-H", "node001", "sh", "-c", waitForGo)
	syscall.Kill(ortedOf(t, c, node), syscall.SIGKILL)
	if st := waitExit(t, client); st != 255 {
		t.Errorf("the job with a rank on %s exited %d, want 255; stderr:\n%s", node, st, stderr)
	}
	checkOneLine(t, stderr.String(), `^mpirun: `+node+`: orted exited unexpectedly: `)
	letGo(t, marks)
	if st := waitExit(t, other); st != 0 {
		t.Errorf("the job on node001 exited %d, want 0; stderr:\n%s", st, otherErr)
	}
	checkOneLine(t, otherErr.String(), "")
	lost := `^mpirun: warning: the DVM lost ` + node + `$`
	checkLostLater(t, c, uri, lost, node, "-np", "3")
	if got := lines(dvmErr.String()); len(got) != 2 || !strings.HasPrefix(got[0], "mpirun: "+node+": orted exited unexpectedly: ") ||
		!regexp.MustCompile(lost).MatchString(got[1]) {
		t.Errorf("the DVM's stderr:\n%s\nwant %s's line, then %s", dvmErr, node, lost)
	}
	dvmStop(t, c, dvm, dvmErr, uri)
}

// TestDVMLostInnerDaemon: with --spawn-degree 2, node001's orted
// spawned node003's; killing node001's loses both (node003's orted loses
// its lifeline and ends): the job on node001 and node003 fails with
// node001's line, the job on node002 ends with 0, later clients are told
// of the two, a job on node003 is refused and one on node002 runs.
func TestDVMLostInnerDaemon(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	dvm, dvmErr, uri := dvmUp(t, c, "--spawn-degree", "2")
	client, stderr, _ := started(t, c, 2, "--dvm", uri, "-np", "2", "-H", "node001,node003", "sh", "-c", `touch "$MARKS/$PRSH_RANK"; exec sleep 600`)
	other, otherErr, marks := started(t, c, 1, "--dvm", uri, "-np", "1", "-H", "node002", "sh", "-c", waitForGo)
	syscall.Kill(ortedOf(t, c, "node001"), syscall.SIGKILL)
	if st := waitExit(t, client); st != 255 {
		t.Errorf("the job on node001 and node003 exited %d, want 255; stderr:\n%s", st, stderr)
	}
	checkOneLine(t, stderr.String(), `^mpirun: node001: orted exited unexpectedly: `)
	letGo(t, marks)
	if st := waitExit(t, other); st != 0 {
		t.Errorf("the job on node002 exited %d, want 0; stderr:\n%s", st, otherErr)
	}
	checkLostLater(t, c, uri, `^mpirun: warning: the DVM lost node001 \(and 1 below it\)$`, "node003", "-np", "2")
	dvmStop(t, c, dvm, dvmErr, uri)
}

// TestDVMLostStoppedDaemon: an orted stopped with SIGSTOP under two
// jobs goes silent: the job with a rank there fails with the node's
// "stopped answering" line and 255 once the silence bound has passed,
// the other ends with 0, a later job runs on the nodes left, and the
// stopped orted and its ranks are gone (their guard) by the DVM's stop.
func TestDVMLostStoppedDaemon(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	dvm, dvmErr, uri := dvmUp(t, c, stoppedBounds...)
	client, stderr, _ := started(t, c, 3, "--dvm", uri, "-np", "3", "sh", "-c", `touch "$MARKS/$PRSH_RANK"; exec sleep 600`)
	other, otherErr, marks := started(t, c, 1, "--dvm", uri, "-np", "1", "-H", "node001", "sh", "-c", waitForGo)
	syscall.Kill(ortedOf(t, c, "node002"), syscall.SIGSTOP)
	if st := waitExit(t, client); st != 255 {
		t.Errorf("the job with a rank on node002 exited %d, want 255; stderr:\n%s", st, stderr)
	}
	checkOneLine(t, stderr.String(), `^mpirun: node002: orted stopped answering \(nothing heard from it for 10s\)$`)
	letGo(t, marks)
	if st := waitExit(t, other); st != 0 {
		t.Errorf("the job on node001 exited %d, want 0; stderr:\n%s", st, otherErr)
	}
	res := dvmRun(t, c, uri, "-np", "2", "/bin/true")
	if res.status != 0 {
		t.Errorf("a job on the nodes left: status %d; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: warning: the DVM lost node002$`)
	dvmStop(t, c, dvm, dvmErr, uri)
}

// TestDVMJobsAvoidAStoppedNode: a job without PMIx goes only to the
// daemons that hold its ranks (Launch.Sparse), so a node whose orted is
// stopped (SIGSTOP), with a silence bound far away, holds up no job
// placed elsewhere: /bin/true on node001, an MPICH program over node001
// and node003 and a job killed by its --timeout end as they would on a
// healthy DVM. (Sent everywhere, each would wait for node002's Started.)
// Once the orted runs again a job on every node runs.
func TestDVMJobsAvoidAStoppedNode(t *testing.T) {
	hello := mpich(t, "hello")
	c := cluster(t, testbed.Config{Nodes: 3})
	dvm, dvmErr, uri := dvmUp(t, c, "--timeouts", "silence=10m,guard-stopped=11m")
	orted := ortedOf(t, c, "node002")
	syscall.Kill(orted, syscall.SIGSTOP)
	res := dvmRun(t, c, uri, "--timeout", "60", "-H", "node001", "-np", "1", "/bin/true")
	if res.status != 0 || res.stderr != "" {
		t.Errorf("/bin/true on node001: exit %d, stderr:\n%s", res.status, res.stderr)
	}
	res = dvmRun(t, c, uri, "--timeout", "60", "-H", "node001,node003", "-np", "2", hello)
	if res.status != 0 || res.stderr != "" {
		t.Errorf("MPICH on node001 and node003: exit %d, stderr:\n%s", res.status, res.stderr)
	}
	checkLines(t, res.stdout, helloLines(2))
	res = dvmRun(t, c, uri, "--timeout", "1", "-H", "node003", "-np", "1", "sleep", "60")
	if res.status != errmgr.StatusTimeout {
		t.Errorf("sleep past --timeout 1 on node003: exit %d, want %d; stderr:\n%s", res.status, errmgr.StatusTimeout, res.stderr)
	}
	checkOneLine(t, res.stderr, `^mpirun: the job ran past --timeout 1s, terminating it$`)
	syscall.Kill(orted, syscall.SIGCONT)
	if res := dvmRun(t, c, uri, "-np", "3", "/bin/true"); res.status != 0 || res.stderr != "" {
		t.Errorf("a job on every node once node002 runs again: exit %d, stderr:\n%s", res.status, res.stderr)
	}
	dvmStop(t, c, dvm, dvmErr, uri)
}

// waitForGo is a rank that leaves its mark, then waits for the test's go.
const waitForGo = `touch "$MARKS/$PRSH_RANK"; while [ ! -e "$MARKS/go" ]; do sleep 0.05; done`

func letGo(t *testing.T, marks string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(marks, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkLostLater checks the clients that come after a loss: each says
// it in one line (lost); a job placed on the lost node by -H, or whose
// -np needs its slot (tooMany), is refused with 2 naming it; a job that
// fits the nodes left runs.
func checkLostLater(t *testing.T, c *testbed.Cluster, uri, lost, node string, tooMany ...string) {
	t.Helper()
	res := dvmRun(t, c, uri, "-np", "1", "/bin/true")
	if res.status != 0 {
		t.Errorf("a job on the nodes left: status %d; stderr:\n%s", res.status, res.stderr)
	}
	checkOneLine(t, res.stderr, lost)
	for _, args := range [][]string{{"-H", node, "/bin/true"}, append(tooMany, "/bin/true")} {
		res := dvmRun(t, c, uri, args...)
		got := lines(res.stderr)
		if res.status != 2 || len(got) != 2 || !regexp.MustCompile(lost).MatchString(got[0]) ||
			!strings.Contains(got[1], node) || !strings.Contains(got[1], "which the DVM lost") {
			t.Errorf("a job %v: status %d, stderr:\n%s\nwant 2, the loss, and a line naming %s", args, res.status, res.stderr, node)
		}
	}
}

// TestDVMOwnHost: a DVM whose hosts are mpirun's own runs its jobs' ranks
// itself (no orted there, as a plain mpirun does), job after job, with a
// plain mpirun's output, failure line and status.
func TestDVMOwnHost(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 1})
	failing := append(slices.Clone(ownNode), "-np", "2", "sh", "-c", `[ "$PRSH_RANK" = 1 ] && exit 3; exec sleep 60`)
	plain := mpirun(t, c, failing...)
	dvm, dvmErr, uri := dvmUp(t, c, ownNode...)
	for i := range 3 {
		res := dvmRun(t, c, uri, "-np", "4", "sh", "-c", `echo "job `+itoa(i)+` rank $PRSH_RANK"`)
		if res.status != 0 {
			t.Fatalf("job %d: status %d; stderr:\n%s", i, res.status, res.stderr)
		}
		wantSet(t, res.stdout, "job "+itoa(i)+" rank 0", "job "+itoa(i)+" rank 1", "job "+itoa(i)+" rank 2", "job "+itoa(i)+" rank 3")
	}
	res := dvmRun(t, c, uri, failing[len(ownNode):]...)
	if res.status != 3 || res.stderr != plain.stderr {
		t.Errorf("a failing job: status %d, stderr %q; a plain mpirun's: status %d, stderr %q", res.status, res.stderr, plain.status, plain.stderr)
	}
	if res := dvmRun(t, c, uri, "-np", "4", "/bin/true"); res.status != 0 {
		t.Errorf("a job after the failure: status %d; stderr:\n%s", res.status, res.stderr)
	}
	dvmStop(t, c, dvm, dvmErr, uri)
}

// TestDVMOnUnreachableSkip: --dvm-start --on-unreachable skip with
// node002 refusing ssh: the DVM comes up on the other nodes with a plain
// mpirun's warning, and tells each later client of node002 as of a lost
// node (a job on the nodes left runs, one placed on node002 or needing
// its slot is refused naming it). Where no node can be reached, the DVM
// does not come up: 255 and a line saying so.
func TestDVMOnUnreachableSkip(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3, Faults: map[string]testbed.Fault{"node002": {Refuse: true}}})
	dvm, dvmErr, uri := dvmUp(t, c, "--on-unreachable", "skip")
	warning := `^mpirun: warning: node002: ssh: .*connection refused \(left out: --on-unreachable skip\)$`
	checkOneLine(t, dvmErr.String(), warning)
	checkLostLater(t, c, uri, warning, "node002", "-np", "3")
	dvmStop(t, c, dvm, dvmErr, uri)

	none := cluster(t, testbed.Config{Nodes: 2, Faults: map[string]testbed.Fault{"node001": {Refuse: true}, "node002": {Refuse: true}}})
	res := mpirun(t, none, "--dvm-start", "--on-unreachable", "skip")
	got := lines(res.stderr)
	if res.status != 255 || res.stdout != "" || len(got) != 3 ||
		got[2] != "mpirun: no node of the DVM could be reached (--on-unreachable skip left them all out)" {
		t.Errorf("a DVM whose nodes all refuse: status %d, stdout %q, stderr:\n%s\nwant 255, two warnings and a line saying none came up", res.status, res.stdout, res.stderr)
	}
}
