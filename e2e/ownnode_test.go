package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"prsh/internal/timeouts"
	"prsh/modex/pmix"
	"prsh/ranks/guard"
	"prsh/testbed"
)

// ownNode are the flags of a job on this host alone whose ranks mpirun
// runs itself: the ranks are shell scripts, which --pmix auto counts as
// maybe PMIx (and would fork an orted-pmix for), so --pmix off.
var ownNode = []string{"-H", "localhost:4", "--pmix", "off"}

// ownNodeSays is how --display-allocation says mpirun runs this host's
// ranks with no orted.
const ownNodeSays = "mpirun: daemons start through none: mpirun runs the ranks of this host\n"

// TestMpirunRunsItsNode: a job on this host alone is mpirun, one guard
// and the ranks: each rank's parent is the guard, whose parent is
// mpirun, and mpirun has no other child (no orted). A program that needs
// no PMIx (sleep) runs so by default.
func TestMpirunRunsItsNode(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 1})
	// ppid of pid: the 4th field of /proc/pid/stat (comm has no blank here).
	script := `ppid() { cut -d' ' -f4 /proc/$1/stat; }; g=$(ppid $PPID)
echo "$PRSH_RANK $(cat /proc/$PPID/comm) $(cat /proc/$g/comm)"
[ "$PRSH_RANK" = 0 ] || exit 0
for s in /proc/[0-9]*/stat; do [ "$(cut -d' ' -f4 $s 2>/dev/null)" = "$g" ] && echo "child $(cut -d' ' -f2 $s)"; done; true`
	res := mpirun(t, c, append(ownNode, "-np", "4", "sh", "-c", script)...)
	if res.status != 0 {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	want := fmt.Sprintf("%s mpirun", guard.GuardBinary)
	wantSet(t, res.stdout, "0 "+want, "1 "+want, "2 "+want, "3 "+want, "child ("+guard.GuardBinary+")")
	res = mpirun(t, c, "-H", "localhost:4", "--display-allocation", "-np", "4", "sleep", "0")
	if res.status != 0 || !strings.HasSuffix(res.stderr, ownNodeSays) {
		t.Errorf("exit %d; stderr:\n%s\nwant it to end with %q", res.status, res.stderr, ownNodeSays)
	}
}

// TestOwnNodeGuardAtInit: a job on this host alone gets the guard that
// mpirun started in its first init (ranks/guard/early), beside its own
// start; one with another bound on a stopped daemon gets a guard with
// that bound; and a job whose ranks mpirun does not run (a PMIx job,
// whose ranks the forked orted-pmix starts) leaves no guard of mpirun's
// running beside that orted.
func TestOwnNodeGuardAtInit(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 1})
	guardArgv := `tr '\0' ' ' < /proc/$PPID/cmdline; echo`
	res := mpirun(t, c, append(ownNode, "-v", "-np", "2", "sh", "-c", guardArgv)...)
	if res.status != 0 || !strings.Contains(res.stderr, "the node's guard runs: pid=") ||
		!strings.Contains(res.stderr, "started at init=true") {
		t.Errorf("exit %d; want the guard started at mpirun's init; stderr:\n%s", res.status, res.stderr)
	}
	want := fmt.Sprintf(" %s %d ", guard.GuardArg, timeouts.Default().GuardStoppedMS)
	if got := lines(res.stdout); len(got) != 2 || !strings.Contains(got[0]+" ", want) {
		t.Errorf("the ranks' guard: %q, want two of ...%s", got, want)
	}

	res = mpirun(t, c, append(ownNode, "-v", "--timeouts", "guard-stopped=40s", "-np", "2", "sh", "-c", guardArgv)...)
	want = fmt.Sprintf(" %s 40000 ", guard.GuardArg)
	if got := lines(res.stdout); res.status != 0 || len(got) != 2 || !strings.Contains(got[0]+" ", want) ||
		!strings.Contains(res.stderr, "started at init=false") {
		t.Errorf("exit %d; the ranks' guard: %q, want two of ...%s, started by the daemon; stderr:\n%s", res.status, got, want, res.stderr)
	}

	if !pmix.Available {
		return
	}
	// The rank's parent is orted-pmix's guard, its parent orted-pmix,
	// whose parent is mpirun: mpirun's children are listed by name.
	children := `ppid() { cut -d' ' -f4 /proc/$1/stat; }; m=$(ppid $(ppid $PPID))
for s in /proc/[0-9]*/stat; do [ "$(cut -d' ' -f4 $s 2>/dev/null)" = "$m" ] && echo "$(cut -d' ' -f2 $s)"; done; true`
	res = mpirun(t, c, "-H", "localhost:1", "--pmix", "on", "-np", "1", "sh", "-c", children)
	if got := lines(res.stdout); res.status != 0 || len(got) != 1 || got[0] != "(orted-pmix)" {
		t.Errorf("exit %d; mpirun's children: %q, want only (orted-pmix); stderr:\n%s", res.status, got, res.stderr)
	}
}

// TestMpirunKilledOwnNode: mpirun killed outright while it runs its
// node's ranks, one of which has an escapee: its guard sees the end of
// mpirun's socket and takes everything down, leaving nothing.
func TestMpirunKilledOwnNode(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 1})
	marks := t.TempDir()
	cmd, _, _ := started(t, c, 4, append(ownNode, "-np", "4", "-x", "M="+marks, "sh", "-c",
		escapees[0].start+waitMark+`touch "$MARKS/$PRSH_RANK"; exec sleep 1000`)...)
	cmd.Process.Kill()
	cmd.Wait()
	if left := c.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
		t.Fatalf("left running after mpirun was killed: %+v", left)
	}
}

// TestOwnNodeJobControl: what the forked orted gave a one-node job holds
// with mpirun running the ranks: a rank's exit status and its one line,
// Ctrl-C, Ctrl-Z and fg, --timeout, and stdin to rank 0.
func TestOwnNodeJobControl(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 1})
	t.Run("exit status", func(t *testing.T) {
		res := mpirun(t, c, append(ownNode, "-np", "3", "sh", "-c", `[ "$PRSH_RANK" = 1 ] && exit 3; exec sleep 60`)...)
		if res.status != 3 {
			t.Errorf("exit %d, want 3; stderr:\n%s", res.status, res.stderr)
		}
		checkOneLine(t, res.stderr, `^mpirun: localhost: rank 1 exited with status 3$`)
	})
	t.Run("Ctrl-C", func(t *testing.T) {
		cmd, stderr, _ := started(t, c, 4, append(ownNode, "-np", "4", "sh", "-c", `touch "$MARKS/$PRSH_RANK"; exec sleep 1000`)...)
		interrupted(t, c, cmd, stderr)
	})
	t.Run("Ctrl-Z", func(t *testing.T) { ownNodeStop(t, c) })
	t.Run("timeout", func(t *testing.T) {
		res := mpirun(t, c, "-H", "localhost:2", "--timeout", "2", "sleep", "100")
		if res.status != 124 {
			t.Errorf("exit %d, want 124", res.status)
		}
		checkOneLine(t, res.stderr, `^mpirun: the job ran past --timeout 2s, terminating it$`)
	})
	t.Run("stdin", func(t *testing.T) {
		cmd := exec.Command(filepath.Join(bin, "mpirun"), append(ownNode, "-np", "2", "sh", "-c", `echo "$PRSH_RANK $(wc -l)"`)...)
		cmd.Env = append(os.Environ(), c.Env()...)
		cmd.Stdin = strings.NewReader("a\nb\nc\n")
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		wantSet(t, out.String(), "0 3", "1 0")
	})
}

// ownNodeStop: Ctrl-Z stops every rank and then mpirun; SIGCONT resumes
// them. The guard, which kills a daemon stopped for guard-stopped, leaves
// mpirun stopped so for longer: its ranks are stopped too.
func ownNodeStop(t *testing.T, c *testbed.Cluster) {
	const guardStopped = 2 * time.Second
	bounds := fmt.Sprintf("keep-alive=500ms,silence=1s,guard-stopped=%v", guardStopped)
	cmd, stderr, marks := started(t, c, 4, append(ownNode, "--timeouts", bounds, "-np", "4", "--stdin", "none", "sh", "-c",
		`echo $$ > "$MARKS/$PRSH_RANK.tmp"; mv "$MARKS/$PRSH_RANK.tmp" "$MARKS/$PRSH_RANK"; while :; do sleep 0.1; done`)...)
	ranks := markedPids(t, marks, 4)
	cmd.Process.Signal(syscall.SIGTSTP)
	waitState(t, ranks, "T")
	waitState(t, []int{cmd.Process.Pid}, "T")
	// Past the bound and the guard's next look (it polls every second).
	time.Sleep(guardStopped + 2*time.Second)
	waitState(t, append(ranks, cmd.Process.Pid), "T")
	cmd.Process.Signal(syscall.SIGCONT)
	waitState(t, ranks, "SR")
	waitState(t, []int{cmd.Process.Pid}, "SR")
	cmd.Process.Signal(syscall.SIGINT)
	if status := waitExit(t, cmd); status != 130 {
		t.Fatalf("exit %d, want 130; stderr:\n%s", status, stderr)
	}
}

// TestMPICHOwnNodeAndRemote: an MPICH program with ranks run by mpirun
// here and by an orted on another node: their PMI fences meet across
// the two, and every rank sees the whole world; over PMI_PORT too.
// MPI_Abort and an exit without MPI_Finalize of a rank mpirun runs end
// the job as they do elsewhere.
func TestMPICHOwnNodeAndRemote(t *testing.T) {
	hello, abort, nofinalize := mpich(t, "hello"), mpich(t, "abort"), mpich(t, "nofinalize")
	c := cluster(t, testbed.Config{Nodes: 1, Slots: 2})
	res := mpirun(t, c, append([]string{"-H", "localhost:2,node001:2"}, withoutPMIFD(hello)...)...)
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("over PMI_PORT: exit %d, stderr:\n%s", res.status, res.stderr)
	}
	res = mpirun(t, c, "-H", "localhost:4", abort)
	if res.status != 7 {
		t.Errorf("MPI_Abort(7): exit %d, want 7; stderr:\n%s", res.status, res.stderr)
	}
	checkMpirunLine(t, res.stderr, `^mpirun: localhost: rank 2 called MPI_Abort with status 7`)
	res = mpirun(t, c, "-H", "localhost:2", nofinalize)
	if res.status != 255 {
		t.Errorf("exit without finalize: exit %d, want 255; stderr:\n%s", res.status, res.stderr)
	}
	checkMpirunLine(t, res.stderr, `^mpirun: localhost: rank 1 exited with status 0 without finalizing MPI \(PMI\)$`)
	res = mpirun(t, c, "-H", "localhost:2,node001:2", "--display-allocation", hello)
	if res.status != 0 || !strings.HasSuffix(res.stderr, "and mpirun runs the ranks of this host\n") {
		t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
	}
	var want []string
	for r := range 4 {
		want = append(want, fmt.Sprintf("rank %d of 4 sum 6", r))
	}
	checkLines(t, res.stdout, want)
}

// TestSlurmOwnNode: under sbatch mpirun runs on the allocation's first
// node and runs that node's ranks itself (their guard's parent is
// mpirun), the other node's under its orted, a step's task; each rank's
// SLURM_NODEID and SLURM_NNODES count both nodes.
func TestSlurmOwnNode(t *testing.T) {
	c := slurmCluster(t)
	script := filepath.Join(c.Dir(), "ranks.sh")
	text := `g=$(cut -d' ' -f4 /proc/$PPID/stat); echo $(hostname) $SLURM_PROCID $SLURM_NODEID $SLURM_NNODES $(cat /proc/$g/comm)` + "\n"
	if err := os.WriteFile(script, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(c.Dir(), "ownnode.out")
	res := inSlurm(t, c, "sbatch", "-Q", "--wait", "-N", "2", "--ntasks-per-node=2", "-o", out,
		"--wrap", filepath.Join(bin, "mpirun")+" --pmix off sh "+script)
	wantSuccess(t, res)
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	checkLines(t, string(got), []string{"node1 0 0 2 mpirun", "node1 1 0 2 mpirun", "node2 2 1 2 orted", "node2 3 1 2 orted"})
}

// TestOpenMPIOwnHost: an Open MPI program needs the PMIx server, which
// mpirun is built without: on this host it still runs under a forked
// orted-pmix, where mpirun runs the ranks of other jobs.
func TestOpenMPIOwnHost(t *testing.T) {
	where := openMPI(t, "where")
	c := cluster(t, testbed.Config{Nodes: 1})
	self, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	res := mpirun(t, c, "-H", "localhost:2", "--display-allocation", where)
	if res.status != 0 || !strings.HasSuffix(res.stderr, "mpirun: daemons start through a fork on this host\n") {
		t.Fatalf("exit %d; stderr:\n%s", res.status, res.stderr)
	}
	checkLines(t, res.stdout, []string{"rank 0 of 2 on " + self, "rank 1 of 2 on " + self})
}
