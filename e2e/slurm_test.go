package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"prsh/testbed/slurm"
)

// slurmPatience turns a hang inside the Slurm cluster into a failure; it
// is not a performance bound.
const slurmPatience = 60 * time.Second

// TestSlurm runs mpirun inside allocations of a real Slurm (4 nodes of 2
// CPUs, testbed/slurm) as its users do, with no flag: the daemons start
// as job steps through srun, never ssh (the nodes run no sshd), and
// slurmOurs counts the job's processes on every node (ours) and the
// allocation's steps (steps), in a script run inside it.
const slurmOurs = `ours() { ps -eo comm= | grep -cxE 'orted|orted-pmix|sleep|srun|prsh-guard'; }
steps() { squeue -h -s -j $SLURM_JOB_ID | wc -l; }`

// slurmGone waits for the job's processes and steps to be gone, and says
// what is left: slurmctld learns of a step's end a little after its
// processes ended, later on a loaded machine.
const slurmGone = `for i in $(seq 200); do [ $(ours) = 0 ] && [ $(steps) = 0 ] && break; sleep 0.1; done
echo left=$(ours) steps=$(steps)`

// nothing is left running after any of it.
func TestSlurm(t *testing.T) {
	c := slurmCluster(t)
	mpirun := filepath.Join(bin, "mpirun")
	salloc := []string{"salloc", "-Q", "-N", "4", "--ntasks-per-node=2"}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"salloc mpirun hostname", func(t *testing.T) {
			res := inSlurm(t, c, append(salloc, mpirun, "hostname")...)
			wantSuccess(t, res)
			checkLines(t, res.stdout, []string{"node1", "node1", "node2", "node2", "node3", "node3", "node4", "node4"})
		}},
		{"display-allocation says srun", func(t *testing.T) {
			res := inSlurm(t, c, append(salloc, mpirun, "--display-allocation", "true")...)
			if res.status != 0 || !strings.Contains(res.stderr, "mpirun: daemons start through srun, one job step for all daemons in Slurm job ") {
				t.Errorf("exit %d, stderr:\n%s\nwant it to say the daemons start through srun in one step", res.status, res.stderr)
			}
			res = inSlurm(t, c, append(salloc, mpirun, "--display-allocation", "--spawn-degree", "2", "true")...)
			if res.status != 0 || !strings.Contains(res.stderr, "mpirun: daemons start through srun, a job step per daemon in Slurm job ") {
				t.Errorf("exit %d, stderr:\n%s\nwant it to say the daemons start through srun, a step each", res.status, res.stderr)
			}
		}},
		{"one job step for all daemons", func(t *testing.T) {
			// While the ranks run, the allocation's one step is the
			// daemons' (named orted, on all 4 nodes). The ranks wait for a
			// file in the cluster's directory, which every node sees.
			script := `echo started; until [ -e $STOP ]; do sleep 0.1; done`
			check := fmt.Sprintf(`export STOP=%s; out=$(mktemp)
%s sh -c '%s' >$out & pid=$!
until [ "$(grep -c started $out)" = 8 ]; do sleep 0.1; done
squeue -h -s -j $SLURM_JOB_ID -o '%%j %%N' | sort; touch $STOP; wait $pid; echo mpirun=$?; rm $out $STOP`, filepath.Join(c.Dir(), "stop"), mpirun, script)
			res := inSlurm(t, c, append(salloc, "sh", "-c", check)...)
			checkLines(t, res.stdout, []string{"orted node[1-4]", "mpirun=0"})
		}},
		{"sbatch mpirun hostname", func(t *testing.T) {
			// mpirun runs on node1 and runs its ranks there itself; srun starts node2's orted.
			out := filepath.Join(c.Dir(), "sbatch.out")
			res := inSlurm(t, c, "sbatch", "-Q", "--wait", "-N", "2", "--ntasks-per-node=2", "-o", out, "--wrap", mpirun+" hostname")
			wantSuccess(t, res)
			text, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			checkLines(t, string(text), []string{"node1", "node1", "node2", "node2"})
		}},
		{"MPICH program", func(t *testing.T) {
			hello := mpich(t, "hello")
			res := inSlurm(t, c, append(salloc, mpirun, hello)...)
			wantSuccess(t, res)
			var want []string
			for r := range 8 {
				want = append(want, fmt.Sprintf("rank %d of 8 sum 28", r))
			}
			checkLines(t, res.stdout, want)
		}},
		{"Open MPI program", func(t *testing.T) {
			where := openMPI(t, "where")
			res := inSlurm(t, c, append(salloc, mpirun, where)...)
			wantSuccess(t, res)
			var want []string
			for r := range 8 {
				want = append(want, fmt.Sprintf("rank %d of 8 on node%d", r, r/2+1))
			}
			checkLines(t, res.stdout, want)
		}},
		{"Slurm variables per rank", func(t *testing.T) {
			// In one step for all daemons, and along a chain of daemons
			// (each orted starts the next through srun).
			script := `echo $(hostname) $SLURM_PROCID $SLURM_NTASKS $SLURM_LOCALID $SLURM_NODEID $SLURM_NNODES ` +
				`step=$SLURM_STEP_ID$SLURM_STEPID$SLURM_STEP_NODELIST$SLURM_TASKS_PER_NODE$SLURM_CPU_BIND`
			var want []string
			for r := range 8 {
				want = append(want, fmt.Sprintf("node%d %d 8 %d %d 4 step=", r/2+1, r, r%2, r/2))
			}
			for _, tree := range [][]string{nil, {"--spawn-degree", "1"}} {
				args := append(append(append(slices.Clone(salloc), mpirun), tree...), "sh", "-c", script)
				res := inSlurm(t, c, args...)
				wantSuccess(t, res)
				checkLines(t, res.stdout, want)
			}
		}},
		{"other steps run meanwhile", func(t *testing.T) {
			// While a job runs, a plain srun and a second mpirun in the same
			// allocation start and end: the daemons' steps overlap. (-n 2:
			// srun would take salloc's SLURM_NTASKS=8 for its own.)
			script := fmt.Sprintf(`M=%s; out=$(mktemp)
$M sh -c 'echo started; exec sleep 300' >$out & pid=$!
until [ "$(grep -c started $out)" = 8 ]; do sleep 0.1; done
timeout 20 srun -N 2 -n 2 hostname; echo srun=$?
timeout 20 $M -np 2 echo second; echo mpirun=$?
kill -INT $pid; wait $pid; rm $out`, mpirun)
			res := inSlurm(t, c, append(salloc, "sh", "-c", script)...)
			checkLines(t, res.stdout, []string{"node1", "node2", "srun=0", "second", "second", "mpirun=0"})
		}},
		{"scancel", func(t *testing.T) { testScancel(t, c, append(salloc, mpirun)) }},
		{"mpirun interrupted or killed", func(t *testing.T) {
			// Inside the allocation, before salloc's end would clean up:
			// no daemon, rank, guard or srun is left on any node, nor a
			// step, after mpirun's Ctrl-C and after its SIGKILL (srun's
			// stdin, every orted's lifeline, closes with it).
			for _, sig := range []struct{ name, status string }{{"INT", "130"}, {"KILL", "137"}} {
				script := fmt.Sprintf(`out=$(mktemp)
%s sh -c 'echo started; exec sleep 300' >$out & pid=$!
until [ "$(grep -c started $out)" = 8 ]; do sleep 0.1; done
`+slurmOurs+`
echo before=$(ours | grep -vx 0 | wc -l)
kill -%s $pid; wait $pid; echo status=$?
`+slurmGone+`; rm $out`, mpirun, sig.name)
				res := inSlurm(t, c, append(salloc, "sh", "-c", script)...)
				checkLines(t, res.stdout, []string{"before=1", "status=" + sig.status, "left=0 steps=0"})
			}
		}},
		{"srun killed", func(t *testing.T) {
			// Slurm ends the step's tasks on every node; mpirun names a
			// node and what ended it.
			script := fmt.Sprintf(`out=$(mktemp)
%s sh -c 'echo started; exec sleep 300' >$out 2>$out.err & pid=$!
until [ "$(grep -c started $out)" = 8 ]; do sleep 0.1; done
pkill -KILL -x srun; wait $pid; echo status=$? >&2; cat $out.err >&2
`+slurmOurs+`
`+slurmGone+`; rm $out $out.err`, mpirun)
			res := inSlurm(t, c, append(salloc, "sh", "-c", script)...)
			checkLines(t, res.stdout, []string{"left=0 steps=0"})
			status, line, _ := strings.Cut(res.stderr, "\n")
			if status != "status=255" {
				t.Errorf("mpirun's %s, want 255", status)
			}
			checkOneLine(t, line, `^mpirun: node\d: orted exited unexpectedly: signal KILL: it went to srun, which runs the daemons' job step$`)
		}},
		{"srun missing", func(t *testing.T) {
			res := inSlurm(t, c, append(salloc, "env", "PATH=/nonexistent", mpirun, "hostname")...)
			if res.status == 0 {
				t.Errorf("exit 0 without srun")
			}
			checkOneLine(t, res.stderr, `^mpirun: inside Slurm job \d+ the daemons start through srun: .*executable file not found in \$PATH; --launcher ssh starts them with ssh \(see mpirun --help\)$`)
		}},
		{"a node lost mid-run", func(t *testing.T) {
			// node3's orted killed outright while the ranks run: mpirun
			// names node3 in one line, the job ends, and the step's other
			// tasks and every rank end with it.
			script := fmt.Sprintf(`out=$(mktemp)
%s sh -c 'echo started; exec sleep 300' >$out 2>$out.err & pid=$!
until [ "$(grep -c started $out)" = 8 ]; do sleep 0.1; done
for p in $(pgrep -x 'orted|orted-pmix'); do tr '\0' '\n' </proc/$p/environ | grep -qx SLURMD_NODENAME=node3 && kill -KILL $p && killed=$p; done
[ -n "$killed" ] || { echo "no orted found on node3" >&2; kill -INT $pid; }
wait $pid; echo status=$? >&2; cat $out.err >&2
`+slurmOurs+`
`+slurmGone+`; rm $out $out.err`, mpirun)
			res := inSlurm(t, c, append(salloc, "sh", "-c", script)...)
			checkLines(t, res.stdout, []string{"left=0 steps=0"})
			status, line, _ := strings.Cut(res.stderr, "\n")
			if status != "status=255" {
				t.Errorf("mpirun's %s, want 255", status)
			}
			checkOneLine(t, line, `^mpirun: node3: (lost the link to its orted: EOF|orted exited unexpectedly: signal KILL)$`)
		}},
		{"a node whose orted cannot start", func(t *testing.T) {
			// orted is at /tmp/prsh/orted on every node but node3 (each
			// node has a /tmp of its own).
			for _, node := range []string{"node1", "node2", "node4"} {
				dir := filepath.Join(c.NodeTmp(node), "prsh")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(bin, "orted"), filepath.Join(dir, "orted")); err != nil {
					t.Fatal(err)
				}
			}
			res := inSlurm(t, c, append(salloc, mpirun, "--orted", "/tmp/prsh/orted", "true")...)
			if res.status == 0 {
				t.Errorf("exit 0 without node3's orted")
			}
			checkOneLine(t, res.stderr, `^mpirun: node3: orted exited before calling back: exit status \d+: execve\(\): /tmp/prsh/orted: No such file or directory$`)
			// With --on-unreachable skip the job runs on the three others,
			// and succeeds.
			res = inSlurm(t, c, append(salloc, mpirun, "--orted", "/tmp/prsh/orted", "--on-unreachable", "skip", "hostname")...)
			if res.status != 0 {
				t.Errorf("--on-unreachable skip: exit %d", res.status)
			}
			checkOneLine(t, res.stderr, `^mpirun: warning: node3: orted exited before calling back: exit status \d+: execve\(\): /tmp/prsh/orted: No such file or directory \(left out: --on-unreachable skip\)$`)
			checkLines(t, res.stdout, []string{"node1", "node1", "node2", "node2", "node4", "node4"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t)
			if left := c.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
				t.Errorf("left running: %v", left)
			}
		})
	}
}

// testScancel cancels the allocation while mpirun's ranks run: salloc
// ends and nothing is left on any node.
func testScancel(t *testing.T, c *slurm.Cluster, mpirun []string) {
	ctx, cancel := context.WithTimeout(context.Background(), slurmPatience)
	defer cancel()
	cmd := c.Command(ctx, append(mpirun, "sh", "-c", "echo started; exec sleep 300")...)
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdout.waitFor(t, strings.Repeat("started\n", 8))
	job := strings.TrimSpace(inSlurm(t, c, "squeue", "-h", "-o", "%i").stdout)
	if res := inSlurm(t, c, "scancel", job); res.status != 0 {
		t.Fatalf("scancel %s: exit %d: %s", job, res.status, res.stderr)
	}
	cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("salloc still running after scancel; stderr:\n%s", stderr.String())
	}
}

// slurmCluster starts a Slurm cluster of 4 nodes with 2 CPUs each for
// the test, mpirun and orted at the same path on every node (bin is
// shared), or skips the test when this machine cannot run one.
func slurmCluster(t *testing.T) *slurm.Cluster {
	t.Helper()
	skipWithoutSlurm(t)
	return startSlurm(t, slurm.Config{Nodes: 4, CPUs: 2, Dir: t.TempDir(), Shared: []string{bin}})
}

// skipWithoutSlurm skips the test where no Slurm cluster can run.
func skipWithoutSlurm(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a Slurm cluster on the testbed needs root (private namespaces)")
	}
	if err := slurm.Available(); err != nil {
		t.Skipf("no Slurm cluster on this machine: %v", err)
	}
}

// startSlurm starts cfg's cluster for the test, closed at its end.
func startSlurm(t *testing.T, cfg slurm.Config) *slurm.Cluster {
	t.Helper()
	c, err := slurm.Start(cfg)
	if err != nil {
		t.Fatalf("starting Slurm: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("closing Slurm: %v", err)
		}
	})
	return c
}

// slurmResult is how a command in the cluster ended.
type slurmResult struct {
	stdout, stderr string
	status         int
}

// inSlurm runs argv on the cluster's controller, as a user at its login
// node would.
func inSlurm(t *testing.T, c *slurm.Cluster, argv ...string) slurmResult {
	t.Helper()
	return inSlurmFor(t, c, slurmPatience, argv...)
}

// inSlurmFor is inSlurm for a command that may run up to patience.
func inSlurmFor(t *testing.T, c *slurm.Cluster, patience time.Duration, argv ...string) slurmResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	cmd := c.Command(ctx, argv...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := slurmResult{stdout.String(), stderr.String(), 0}
	if ee, ok := err.(*exec.ExitError); ok {
		res.status = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.status = 128 + int(ws.Signal())
		}
	} else if err != nil {
		t.Fatalf("%q: %v", argv, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%q did not end within %v; stderr:\n%s", argv, patience, res.stderr)
	}
	return res
}

// wantSuccess fails the test unless the command exited 0 and wrote
// nothing on stderr.
func wantSuccess(t *testing.T, res slurmResult) {
	t.Helper()
	if res.status != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", res.status, res.stderr)
	}
}
