package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"prsh/job/binding"
	"prsh/testbed"
	"prsh/testbed/slurm"
)

// TestBindWithinAffinityMask: mpirun started under taskset binds its
// local ranks only to the CPUs the mask leaves it, for every unit, and
// leaves unbound ranks inside the mask; more ranks than the mask's cores
// is one line naming the CPUs it had, as on a node whose batch system
// gave the job fewer CPUs than the machine has. (The Slurm of
// testbed/slurm cannot confine CPUs: see TestSlurmJob.)
func TestBindWithinAffinityMask(t *testing.T) {
	cores, _ := machineCores(t)
	if cores < 2 {
		t.Skip("one core: a mask cannot leave fewer")
	}
	c := cluster(t, testbed.Config{Nodes: 1})
	last := lastCPU(t)
	masked := func(args ...string) result {
		t.Helper()
		argv := append([]string{"-c", last, filepath.Join(bin, "mpirun"), "-H", "localhost:2"}, args...)
		res := runMpirun(t, "taskset", append(os.Environ(), c.Env()...), argv...)
		if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
			c.KillLeftovers()
			t.Fatalf("mpirun %v left processes running: %+v", args, left)
		}
		return res
	}
	for _, args := range [][]string{
		{"-np", "1", "--bind-to", "core"},
		{"-np", "1", "--bind-to", "hwthread"},
		{"-np", "1", "--bind-to", "socket", "--map-by", "socket"},
		{"-np", "2", "--bind-to", "core:overload-allowed"},
		{"-np", "2", "--bind-to", "none"},
	} {
		res := masked(append(args, "sh", "-c", showAffinity)...)
		if res.status != 0 || res.stderr != "" {
			t.Fatalf("%v: exit %d; stderr:\n%s", args, res.status, res.stderr)
		}
		var want []string
		for r := range len(lines(res.stdout)) {
			want = append(want, fmt.Sprintf("%d %s", r, last))
		}
		if len(want) != 1 && len(want) != 2 {
			t.Fatalf("%v: stdout:\n%s", args, res.stdout)
		}
		wantSet(t, res.stdout, want...)
	}
	res := masked("-np", "2", "--bind-to", "core", "true")
	if res.status != 255 {
		t.Errorf("two ranks on one allowed core: exit %d, want 255", res.status)
	}
	checkOneLine(t, res.stderr, `^mpirun: localhost: rank \d: cannot bind: 2 ranks but 1 cores to bind them to \(--bind-to core\); .*; the job may use cpus `+last+` here$`)
}

// lastCPU is the highest CPU this test may run on, as taskset names it.
func lastCPU(t *testing.T) string {
	t.Helper()
	_, all := machineCores(t)
	ids, err := binding.ParseList(all)
	if err != nil || len(ids) == 0 {
		t.Fatalf("cpus %q: %v", all, err)
	}
	return fmt.Sprint(ids[len(ids)-1])
}

// TestOrtedSIGTERM: an orted that gets SIGTERM (what Slurm sends its
// steps; here by hand, on the testbed's ssh nodes) passes it to its ranks,
// which trap it, and mpirun ends the job with one line naming the node,
// exit 143, nothing left running.
func TestOrtedSIGTERM(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	trap := `trap 'trap "" TERM; kill $! 2>/dev/null; echo "TERM $PRSH_RANK"; exit 0' TERM; echo started; while :; do sleep 1 & wait $!; done`
	cmd, stdout, stderr := startMpirun(t, c, "sh", "-c", trap)
	stdout.waitFor(t, "started\nstarted\n")
	if err := syscall.Kill(ortedOf(t, c, "node002"), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if status := waitExit(t, cmd); status != 143 {
		t.Errorf("exit %d, want 143", status)
	}
	checkLines(t, stdout.String(), []string{"started", "started", "TERM 0", "TERM 1"})
	checkMpirunLine(t, stderr.String(), `^mpirun: node002: orted got SIGTERM, terminating the job$`)
	if left := c.WaitNoLeftovers(5 * time.Second); len(left) > 0 {
		c.KillLeftovers()
		t.Fatalf("left running: %+v", left)
	}
}

// trapTERM is a rank that says when it starts and, trapping SIGTERM, says
// once that it got it and on which node, then ends. Slurm signals every
// process of the step, the ranks too, besides their orted: a rank may get
// SIGTERM twice, as under Open MPI's orted.
const trapTERM = `h=$(hostname); trap 'trap "" TERM; kill $! 2>/dev/null; echo "TERM on $h"; exit 0' TERM; echo started; while :; do sleep 1 & wait $!; done`

// TestSlurmJob runs jobs inside a real Slurm (testbed/slurm) as an
// ordinary user, and up to their limits. The time limit (salloc -t 1,
// sbatch -t 1: Slurm's shortest, one minute, ended within Slurm's 30 s
// check): every rank gets SIGTERM first and can say so, mpirun says in
// one line why the job ended, and nothing is left on any node.
//
// CPUs: the cluster binds tasks (task/affinity), so a job of one task per
// node has one CPU on each, the daemons' steps included; task/cgroup,
// which confines through a cpuset, would put every cluster running at once
// in the host's one cgroup hierarchy under the same names
// (slurm_node1/uid_0/job_1), so it is left out. TestBindWithinAffinityMask
// covers the same without Slurm, with taskset.
func TestSlurmJob(t *testing.T) {
	c := slurmClusterForUsers(t)
	mpirun := filepath.Join(bin, "mpirun")
	t.Run("ordinary user", func(t *testing.T) { testAsUser(t, c, mpirun) })
	t.Run("binding inside the job's CPUs", func(t *testing.T) { testSlurmBinding(t, c, mpirun) })
	t.Run("time limit", func(t *testing.T) {
		t.Run("salloc", func(t *testing.T) {
			t.Parallel()
			res := inSlurmFor(t, c, 3*time.Minute, "salloc", "-Q", "-t", "1", "-N", "2", "--ntasks-per-node=1", mpirun, "sh", "-c", trapTERM)
			checkTimeLimit(t, res.status, res.stdout, res.stderr, ortedTERM)
		})
		t.Run("sbatch", func(t *testing.T) {
			t.Parallel()
			out, errs := filepath.Join(c.Dir(), "timelimit.out"), filepath.Join(c.Dir(), "timelimit.err")
			res := inSlurmFor(t, c, 3*time.Minute, "sbatch", "-Q", "--wait", "-t", "1", "-N", "2", "--ntasks-per-node=1", "-o", out, "-e", errs,
				"--wrap", mpirun+" sh -c '"+strings.ReplaceAll(trapTERM, "'", `'\''`)+"'")
			stdout, err1 := os.ReadFile(out)
			stderr, err2 := os.ReadFile(errs)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			// mpirun, in the batch step, gets the SIGTERM too.
			checkTimeLimit(t, res.status, string(stdout), string(stderr),
				ortedTERM+`|^mpirun: caught SIGTERM, terminating the job$`)
		})
	})
	if left := c.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
		t.Errorf("left running: %v", left)
	}
}

// ortedTERM is mpirun's line when an orted got Slurm's SIGTERM.
const ortedTERM = `^mpirun: node\d+: orted got SIGTERM from Slurm \(job \d+'s time limit or scancel\), terminating the job$`

// checkTimeLimit: both ranks started and got SIGTERM, each on its node
// (Slurm picks them), and mpirun wrote one line, matching line, on why the
// job ended.
func checkTimeLimit(t *testing.T, status int, stdout, stderr, line string) {
	t.Helper()
	got := lines(stdout)
	slices.Sort(got)
	termed := regexp.MustCompile(`^TERM on node\d+$`)
	if len(got) != 4 || got[0] == got[1] || !termed.MatchString(got[0]) || !termed.MatchString(got[1]) ||
		got[2] != "started" || got[3] != "started" { // "TERM" sorts first
		t.Errorf("stdout:\n%s\nwant two ranks started, then each saying TERM on its node; stderr:\n%s", stdout, stderr)
	}
	if status == 0 {
		t.Errorf("exit 0 at the time limit")
	}
	checkMpirunLine(t, stderr, line)
}

// testSlurmBinding: in an allocation of one CPU per node, mpirun's ranks,
// bound to a core or not, run on the CPUs Slurm gives its own tasks there
// (srun), never on the node's others; two ranks on a node of one CPU
// cannot each have a core, which one line says, naming the CPUs.
func testSlurmBinding(t *testing.T, c *slurm.Cluster, mpirun string) {
	cores, _ := machineCores(t)
	if cores < 2 {
		t.Skip("one core: an allocation cannot have fewer")
	}
	script := fmt.Sprintf(`show='echo $(hostname) $(grep Cpus_allowed_list /proc/self/status | cut -f2)'
srun sh -c "$show"; echo ---
%[1]s --bind-to core sh -c "$show"; echo ---
%[1]s sh -c "$show"; echo ---
%[1]s -np 4 --oversubscribe --bind-to core true; echo status=$?`, mpirun)
	res := inSlurm(t, c, "salloc", "-Q", "-N", "2", "--ntasks-per-node=1", "sh", "-c", script)
	blocks := strings.Split(res.stdout, "---\n")
	if len(blocks) != 4 || len(lines(blocks[0])) != 2 || strings.Contains(blocks[0], ",") || strings.Contains(blocks[0], "-") {
		t.Fatalf("srun's tasks should each have one CPU; stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
	}
	slurmCPUs := lines(blocks[0])
	checkLines(t, blocks[1], slices.Clone(slurmCPUs))
	checkLines(t, blocks[2], slices.Clone(slurmCPUs))
	if blocks[3] != "status=255\n" {
		t.Errorf("two ranks on one CPU: %q, want status=255", blocks[3])
	}
	checkMpirunLine(t, res.stderr, `^mpirun: node\d+: rank \d: cannot bind: 2 ranks but 1 cores to bind them to \(--bind-to core\); .*; the job may use cpus \d+ here$`)
}

// asUser runs a command as nobody (uid and gid 65534, no other group),
// an account every Linux has: an ordinary user without a home.
var asUser = []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}

// testAsUser runs TestSlurm's main cases through salloc as an ordinary
// user: the daemons and ranks run as that user, and nothing is left.
func testAsUser(t *testing.T, c *slurm.Cluster, mpirun string) {
	salloc := append(slices.Clone(asUser), "salloc", "-Q", "-N", "4", "--ntasks-per-node=2", mpirun)
	for _, tc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"hostname", func(t *testing.T) {
			res := inSlurm(t, c, append(salloc, "sh", "-c", "echo $(hostname) $(id -u)")...)
			wantSuccess(t, res)
			var want []string
			for r := range 8 {
				want = append(want, fmt.Sprintf("node%d 65534", r/2+1))
			}
			checkLines(t, res.stdout, want)
		}},
		{"MPICH program", func(t *testing.T) {
			hello := mpich(t, "hello")
			res := inSlurm(t, c, append(salloc, hello)...)
			wantSuccess(t, res)
			var want []string
			for r := range 8 {
				want = append(want, fmt.Sprintf("rank %d of 8 sum 28", r))
			}
			checkLines(t, res.stdout, want)
		}},
		{"scancel", func(t *testing.T) { testScancel(t, c, salloc) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t)
			if left := c.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
				t.Errorf("left running: %v", left)
			}
		})
	}
}

// slurmClusterForUsers is slurmCluster in a directory any user may read
// (slurm.conf), with the daemons' directory readable too, so that an
// ordinary user can run salloc, mpirun and orted. The directory is kept
// for its logs when the test fails.
func slurmClusterForUsers(t *testing.T) *slurm.Cluster {
	t.Helper()
	skipWithoutSlurm(t)
	dir, err := os.MkdirTemp("", "prsh-slurm-job-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(dir)
		}
	})
	// bin's race reports come from the daemons of every user.
	for path, mode := range map[string]os.FileMode{dir: 0o755, bin: 0o755, raceLogs: 0o1777} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	return startSlurm(t, slurm.Config{Nodes: 4, CPUs: 2, Dir: dir, Shared: []string{bin}, BindTasks: true})
}
