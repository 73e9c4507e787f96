package e2e

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"prsh/testbed"
)

// Jobs at once in one DVM (DVM.md, steps 2 and 3): each client gets its
// own job's output, failure line and status, whatever the others do.
// The ranks of the jobs in a test meet through files in one directory
// ($MARKS), so that the jobs are known to overlap.

// dvmClient starts a client of the DVM in the background, its ranks
// given $MARKS; its stdout goes to stdout (nil: a buffer it returns).
func dvmClient(t *testing.T, c *testbed.Cluster, marks string, stdout io.Writer, args ...string) (*exec.Cmd, *lockedBuffer, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "mpirun"), append([]string{"-x", "MARKS"}, args...)...)
	cmd.Env = append(os.Environ(), append(c.Env(), "MARKS="+marks)...)
	out, stderr := &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, stderr
	if stdout != nil {
		cmd.Stdout = stdout
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, out, stderr
}

// awaitMarks waits until the ranks left every one of the marks named.
func awaitMarks(t *testing.T, marks string, names ...string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		missing := ""
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(marks, n)); err != nil {
				missing = n
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no mark %s from the ranks", missing)
		}
	}
}

// meet is a rank's script: leave mark NAME$PRSH_RANK, wait until the
// marks others all exist, then run then.
func meet(name string, others []string, then string) string {
	wait := "true"
	for _, o := range others {
		wait += ` && [ -e "$MARKS/` + o + `" ]`
	}
	return `touch "$MARKS/` + name + `$PRSH_RANK"; until ` + wait + `; do sleep 0.01; done; ` + then
}

// TestDVMJobsAtOnce: two jobs at once on the same nodes, each rank of
// each waiting until every rank of the other runs: each client gets its
// own job's lines, all of them and no other's, and its own status (the
// second job's rank 1 exits 3: its line and 3 are its client's alone;
// it waits for its own job's ranks too, or its failure could kill a rank
// of its job before that rank ran, leaving the first job waiting).
func TestDVMJobsAtOnce(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 3})
	dvm, dvmErr, uri := dvmUp(t, c)
	marks := marksDir(t)
	numbered := func(job string) string { return `seq 500 | sed "s/^/` + job + ` $PRSH_RANK /"` }
	a, aOut, aErr := dvmClient(t, c, marks, nil, "--dvm", uri, "-np", "3", "sh", "-c",
		meet("a", []string{"b0", "b1", "b2"}, numbered("a")))
	b, bOut, bErr := dvmClient(t, c, marks, nil, "--dvm", uri, "-np", "3", "sh", "-c",
		meet("b", []string{"a0", "a1", "a2", "b0", "b1", "b2"}, numbered("b")+`; [ "$PRSH_RANK" = 1 ] && exit 3; exit 0`))
	if st := waitExit(t, a); st != 0 || aErr.String() != "" {
		t.Errorf("job a: status %d, stderr %q", st, aErr)
	}
	var want []string
	for r := range 3 {
		for i := 1; i <= 500; i++ {
			want = append(want, fmt.Sprintf("a %d %d", r, i))
		}
	}
	wantSet(t, aOut.String(), want...)
	if st := waitExit(t, b); st != 3 {
		t.Errorf("job b: status %d, want 3", st)
	}
	checkOneLine(t, bErr.String(), `^mpirun: node002: rank 1 exited with status 3$`)
	for _, l := range lines(bOut.String()) {
		if !strings.HasPrefix(l, "b ") {
			t.Errorf("job b's stdout holds %q", l)
		}
	}
	dvmStop(t, c, dvm, dvmErr, uri)
}

// TestDVMJobEndsAlone: while a long job runs, other jobs on the same
// nodes fail (a rank's exit 3), pass their --timeout, are interrupted
// (Ctrl-C of the client) and lose their client (killed): each ends alone
// with a plain mpirun's line and status at its own client, and the long
// job runs on to its end, whole, with 0.
func TestDVMJobEndsAlone(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	dvm, dvmErr, uri := dvmUp(t, c)
	marks := marksDir(t)
	long, longOut, longErr := dvmClient(t, c, marks, nil, "--dvm", uri, "-np", "2", "sh", "-c",
		meet("long", []string{"go"}, `echo "long $PRSH_RANK done"`))
	awaitMarks(t, marks, "long0", "long1")

	res := dvmRun(t, c, uri, "-np", "2", "sh", "-c", `[ "$PRSH_RANK" = 1 ] && exit 3; exec sleep 60`)
	if res.status != 3 {
		t.Errorf("the failing job: status %d, want 3", res.status)
	}
	checkOneLine(t, res.stderr, `^mpirun: node002: rank 1 exited with status 3$`)
	res = dvmRun(t, c, uri, "--timeout", "1", "-np", "2", "sleep", "60")
	if res.status != 124 {
		t.Errorf("--timeout: status %d, want 124", res.status)
	}
	checkOneLine(t, res.stderr, `^mpirun: the job ran past --timeout 1s, terminating it$`)
	for _, how := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		client, _, stderr := dvmClient(t, c, marks, nil, "--dvm", uri, "-np", "2", "sh", "-c", meet(how.String()[:3], nil, "exec sleep 60"))
		awaitMarks(t, marks, how.String()[:3]+"0", how.String()[:3]+"1")
		client.Process.Signal(how)
		st := waitExit(t, client)
		if how == syscall.SIGINT {
			if st != 130 {
				t.Errorf("Ctrl-C: the client exited %d, want 130", st)
			}
			checkOneLine(t, stderr.String(), `^mpirun: caught SIGINT, terminating the job$`)
		}
	}
	if err := os.WriteFile(filepath.Join(marks, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, long); st != 0 || longErr.String() != "" {
		t.Errorf("the long job: status %d, stderr %q", st, longErr)
	}
	wantSet(t, longOut.String(), "long 0 done", "long 1 done")
	dvmStop(t, c, dvm, dvmErr, uri)
}

// TestDVMMPICHAtOnce: MPICH programs of four jobs at once on the same
// nodes, each rank starting MPI only once every rank of every job runs:
// each job's fences are its own (its PMI key-value space, its own
// collectives through the tree), and each sums its own world; the fourth
// calls MPI_Abort, which ends it alone with its status and line.
func TestDVMMPICHAtOnce(t *testing.T) {
	hello, abort := mpich(t, "hello"), mpich(t, "abort")
	c := cluster(t, testbed.Config{Nodes: 4, Slots: 2})
	dvm, dvmErr, uri := dvmUp(t, c)
	sizes := map[string]int{"x": 8, "y": 3, "z": 5, "abort": 4}
	clients := jobsAtOnce(t, c, uri, sizes, func(job string) string {
		if job == "abort" {
			return abort
		}
		return hello
	})
	for job, cl := range clients {
		if job == "abort" {
			if st := waitExit(t, cl.cmd); st != 7 {
				t.Errorf("MPI_Abort(7) beside the others: exit %d, want 7", st)
			}
			checkMpirunLine(t, cl.stderr.String(), `^mpirun: node003: rank 2 called MPI_Abort with status 7`)
			continue
		}
		cl.checkHello(t, job, sizes[job])
	}
	dvmStop(t, c, dvm, dvmErr, uri)
}

// atOnce is a client of a job of jobsAtOnce.
type atOnce struct {
	cmd            *exec.Cmd
	stdout, stderr *lockedBuffer
}

// jobsAtOnce starts a client per job of sizes (its -np), mapped by node,
// whose ranks wait until every rank of every job runs, then exec the
// job's program: the jobs are known to run at once.
func jobsAtOnce(t *testing.T, c *testbed.Cluster, uri string, sizes map[string]int, program func(job string) string) map[string]atOnce {
	t.Helper()
	marks := marksDir(t)
	var all []string
	for job, np := range sizes {
		for r := range np {
			all = append(all, job+itoa(r))
		}
	}
	clients := map[string]atOnce{}
	for job, np := range sizes {
		cmd, out, stderr := dvmClient(t, c, marks, nil, "--dvm", uri, "-np", itoa(np), "--map-by", "node",
			"sh", "-c", meet(job, all, "exec "+program(job)))
		clients[job] = atOnce{cmd, out, stderr}
	}
	return clients
}

// checkHello: the client of job's hello (the MPI test program) of np
// ranks exits 0 with each rank's sum of its world and nothing on stderr.
func (cl atOnce) checkHello(t *testing.T, job string, np int) {
	t.Helper()
	if st := waitExit(t, cl.cmd); st != 0 || cl.stderr.String() != "" {
		t.Errorf("job %s (-np %d): status %d, stderr:\n%s", job, np, st, cl.stderr)
		return
	}
	checkLines(t, cl.stdout.String(), helloLines(np))
}

// helloLines is what hello (the MPI test program) prints in a world of np.
func helloLines(np int) []string {
	var want []string
	for r := range np {
		want = append(want, fmt.Sprintf("rank %d of %d sum %d", r, np, np*(np-1)/2))
	}
	return want
}

// TestDVMSlowClient: a client that does not read its output holds up its
// own job only: its ranks wait (the DVM keeps a bounded backlog for it),
// while another job on the same nodes runs to its end; once read, the
// slow job's output is whole, and its status 0. A held job's Ctrl-C ends
// it at once, not after the DVM's kill grace (10 minutes here): its
// ranks get SIGCONT after their SIGTERM.
func TestDVMSlowClient(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	dvm, dvmErr, uri := dvmUp(t, c, "--kill-grace", "10m")
	marks := marksDir(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	const size = 24 << 20 // three times the DVM's backlog bound per job, a MiB at a time
	slow, _, slowErr := dvmClient(t, c, marks, pw, "--dvm", uri, "-np", "1", "-H", "node001", "sh", "-c",
		meet("slow", nil, "for i in $(seq 24); do head -c 1048576 /dev/zero; sleep 0.02; done"))
	pw.Close()
	awaitMarks(t, marks, "slow0")
	awaitStopped(t, c, "seq 24") // held: its client is behind by the bound
	res := dvmRun(t, c, uri, "-np", "2", "sh", "-c", `echo "quick $PRSH_RANK"`)
	if res.status != 0 {
		t.Errorf("the job beside the slow client: status %d; stderr:\n%s", res.status, res.stderr)
	}
	wantSet(t, res.stdout, "quick 0", "quick 1")
	n, err := io.Copy(io.Discard, pr)
	if err != nil || n != size {
		t.Errorf("the slow client's output: %d bytes (%v), want %d", n, err, size)
	}
	if st := waitExit(t, slow); st != 0 {
		t.Errorf("the slow client: status %d; stderr:\n%s", st, slowErr)
	}

	pr, pw, err = os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	held, _, heldErr := dvmClient(t, c, marks, pw, "--dvm", uri, "-np", "1", "-H", "node002", "sh", "-c",
		meet("held", nil, "for i in $(seq 25); do head -c 1048576 /dev/zero; sleep 0.02; done"))
	pw.Close()
	awaitMarks(t, marks, "held0")
	awaitStopped(t, c, "seq 25")
	held.Process.Signal(syscall.SIGINT)
	awaitGone(t, c, "seq 25") // its client still reads nothing
	go io.Copy(io.Discard, pr)
	if st := waitExit(t, held); st != 130 {
		t.Errorf("Ctrl-C of a held job's client: status %d, want 130; stderr:\n%s", st, heldErr)
	}
	checkOneLine(t, heldErr.String(), `^mpirun: caught SIGINT, terminating the job$`)
	dvmStop(t, c, dvm, dvmErr, uri)
}

// awaitStopped waits until a process on the nodes whose command line
// holds cmdline is stopped (state T).
func awaitStopped(t *testing.T, c *testbed.Cluster, cmdline string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		for _, p := range c.Leftovers() {
			stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID))
			if _, after, ok := strings.Cut(string(stat), ") "); ok && strings.Contains(p.Cmdline, cmdline) && strings.HasPrefix(after, "T") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stopped process %q on the nodes: %+v", cmdline, c.Leftovers())
		}
	}
}

// TestDVMStdin: a client's stdin reaches its own job's ranks, as a plain
// mpirun's does (rank 0 by default, every rank with --stdin all, none
// with --stdin none), with two jobs at once on the same nodes whose
// ranks of the same numbers each read their own client's input to its
// end; 5 MB of input come whole.
func TestDVMStdin(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	dvm, dvmErr, uri := dvmUp(t, c)
	marks := marksDir(t)
	read := `cat | sed "s/^/$PRSH_RANK /"`
	type client struct {
		cmd         *exec.Cmd
		out, stderr *lockedBuffer
	}
	jobs := map[string]client{}
	for job, flags := range map[string][]string{"a": nil, "b": {"--stdin", "all"}, "n": {"--stdin", "none"}} {
		stdin := strings.NewReader("hello " + job + "\nagain " + job + "\n")
		args := append([]string{"--dvm", uri, "-np", "2"}, flags...)
		cmd := exec.Command(filepath.Join(bin, "mpirun"), append(append([]string{"-x", "MARKS"}, args...), "sh", "-c",
			meet(job, []string{"a0", "a1", "b0", "b1", "n0", "n1"}, read))...)
		cmd.Env = append(os.Environ(), append(c.Env(), "MARKS="+marks)...)
		out, stderr := &lockedBuffer{}, &lockedBuffer{}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, out, stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		jobs[job] = client{cmd, out, stderr}
	}
	want := map[string][]string{"a": {"0 hello a", "0 again a"}, "b": {"0 hello b", "0 again b", "1 hello b", "1 again b"}, "n": nil}
	for job, cl := range jobs {
		if st := waitExit(t, cl.cmd); st != 0 || cl.stderr.String() != "" {
			t.Errorf("job %s: status %d, stderr %q", job, st, cl.stderr)
		}
		wantSet(t, cl.out.String(), want[job]...)
	}
	const size = 5_000_000
	cmd := exec.Command(filepath.Join(bin, "mpirun"), "--dvm", uri, "-np", "1", "-H", "node002", "wc", "-c")
	cmd.Env = append(os.Environ(), c.Env()...)
	cmd.Stdin = io.LimitReader(zeros{}, size)
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != itoa(size) {
		t.Errorf("5 MB of stdin: %q (%v), want %d bytes counted", out, err, size)
	}
	dvmStop(t, c, dvm, dvmErr, uri)
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// TestDVMOpenMPITripwire: an Open MPI program in a DVM started with
// --pmix off (no PMIx server) fails its own job with a plain mpirun's
// line naming the rank, found through the PMIx namespace of its job,
// while a job beside it runs on to its end; the DVM goes on.
func TestDVMOpenMPITripwire(t *testing.T) {
	hello := testProgram(t, openMPIPrograms, "Open MPI is not installed (apt-get install openmpi-bin libopenmpi-dev)", "hello")
	c := cluster(t, testbed.Config{Nodes: 2})
	dvm, dvmErr, uri := dvmUp(t, c, "--pmix", "off")
	marks := marksDir(t)
	long, longOut, _ := dvmClient(t, c, marks, nil, "--dvm", uri, "-np", "2", "sh", "-c", meet("long", []string{"go"}, `echo "long $PRSH_RANK"`))
	awaitMarks(t, marks, "long0", "long1")
	res := dvmRun(t, c, uri, "-np", "2", hello)
	if res.status != 255 {
		t.Errorf("an Open MPI program: exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkMpirunLine(t, res.stderr, `^mpirun: node00[12]: rank [01] cannot start: it speaks PMIx \(Open MPI\), but its DVM was started with --pmix off$`)
	if err := os.WriteFile(filepath.Join(marks, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, long); st != 0 {
		t.Errorf("the job beside it: status %d", st)
	}
	wantSet(t, longOut.String(), "long 0", "long 1")
	dvmStop(t, c, dvm, dvmErr, uri)
}

// awaitGone waits until no process on the nodes has cmdline in its
// command line.
func awaitGone(t *testing.T, c *testbed.Cluster, cmdline string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		left := false
		for _, p := range c.Leftovers() {
			left = left || p.Node != "" && strings.Contains(p.Cmdline, cmdline)
		}
		if !left {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q still runs on the nodes: %+v", cmdline, c.Leftovers())
		}
	}
}
