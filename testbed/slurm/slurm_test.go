package slurm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// patience turns a hang into a failure; it is not a performance bound.
const patience = 60 * time.Second

func TestMain(m *testing.M) {
	MaybeRunHelper()
	os.Exit(m.Run())
}

// startCluster starts a cluster for the test (in the test's temporary
// directory unless cfg says otherwise), or skips the test when this
// machine cannot run one; Close runs, and must succeed, at the end.
func startCluster(t *testing.T, cfg Config) *Cluster {
	t.Helper()
	c := mustStart(t, cfg)
	t.Cleanup(func() {
		begin := time.Now()
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		t.Logf("closed in %v", time.Since(begin).Round(time.Millisecond))
	})
	return c
}

func mustStart(t *testing.T, cfg Config) *Cluster {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("%v", err)
	}
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	begin := time.Now()
	c, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("%d nodes idle after %v", cfg.Nodes, time.Since(begin).Round(time.Millisecond))
	return c
}

// run runs argv in the cluster and returns its standard output, failing
// the test if it fails.
func run(t *testing.T, c *Cluster, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	cmd := c.Command(ctx, argv...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%q: %v\n%s%s", argv, err, out, stderr.String())
	}
	return string(out)
}

func sortedLines(s string) []string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	slices.Sort(lines)
	return lines
}

func TestSallocSrunHostname(t *testing.T) {
	c := startCluster(t, Config{Nodes: 4, CPUs: 2})
	got := sortedLines(run(t, c, "salloc", "-N", "4", "srun", "hostname"))
	want := []string{"node1", "node2", "node3", "node4"}
	if !slices.Equal(got, want) {
		t.Errorf("salloc -N 4 srun hostname printed %q, want %q", got, want)
	}
	if got := strings.TrimSpace(run(t, c, "hostname")); got != controllerName {
		t.Errorf("Command's hostname is %q, want %q", got, controllerName)
	}
}

// Each task reports its rank and node and leaves a file in its /tmp: the
// file must be in the /tmp of the node the task reported, and nowhere
// else. The script lies in a shared directory under /tmp, which every node
// must see although its /tmp is private.
func TestSrunTasksSeeTheirNode(t *testing.T) {
	shared := t.TempDir()
	c := startCluster(t, Config{Nodes: 4, CPUs: 2, Shared: []string{shared}})
	mark := "slurm-test-" + filepath.Base(c.Dir())
	script := writeScript(t, shared, "task.sh",
		`echo "$SLURM_PROCID $(hostname)"; touch /tmp/`+mark+`-$SLURM_PROCID`)

	out := run(t, c, "srun", "-N2", "-n4", script)
	perNode := map[string]int{}
	var ranks []string
	for _, line := range sortedLines(out) {
		rank, node, ok := strings.Cut(line, " ")
		if !ok || !slices.Contains(c.Nodes(), node) {
			t.Fatalf("task printed %q, want RANK NODE", line)
		}
		ranks = append(ranks, rank)
		perNode[node]++
		for _, other := range c.Nodes() {
			_, err := os.Stat(filepath.Join(c.NodeTmp(other), mark+"-"+rank))
			if found := err == nil; found != (other == node) {
				t.Errorf("rank %s on %s: its /tmp file found in %s's /tmp: %v", rank, node, other, found)
			}
		}
		if _, err := os.Stat(filepath.Join("/tmp", mark+"-"+rank)); err == nil {
			t.Errorf("rank %s wrote into the host's /tmp", rank)
		}
	}
	if want := []string{"0", "1", "2", "3"}; !slices.Equal(ranks, want) {
		t.Errorf("SLURM_PROCIDs %q, want %q", ranks, want)
	}
	if len(perNode) != 2 {
		t.Errorf("tasks per node %v, want 4 tasks on 2 nodes", perNode)
	}
}

func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSbatchWait(t *testing.T) {
	shared := t.TempDir()
	c := startCluster(t, Config{Nodes: 4, CPUs: 2, Shared: []string{shared}})
	script := writeScript(t, shared, "job.sh", "srun hostname")
	output := filepath.Join(shared, "job.out")
	jobID := strings.TrimSpace(run(t, c, "sbatch", "--parsable", "-N", "3", "--output="+output, script))
	// Not sbatch --wait: it polls every few seconds.
	var state string
	err := waitFor(func() bool {
		state = jobState(t, c, jobID)
		return state != "PENDING" && state != "RUNNING" && state != "CONFIGURING" && state != "COMPLETING"
	})
	if err != nil || state != "COMPLETED" {
		t.Fatalf("batch job %s: state %s, want COMPLETED", jobID, state)
	}
	data, err := os.ReadFile(output)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sortedLines(string(data)), []string{"node1", "node2", "node3"}; !slices.Equal(got, want) {
		t.Errorf("the batch job's srun hostname printed %q, want %q", got, want)
	}
}

func jobState(t *testing.T, c *Cluster, jobID string) string {
	out := run(t, c, "scontrol", "--oneliner", "show", "job", jobID)
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "JobState="); ok {
			return v
		}
	}
	t.Fatalf("no JobState in %q", out)
	return ""
}

// A step's tasks are leftovers while they run, on their nodes; scancel
// ends them and their slurmstepd.
func TestScancelLeavesNothing(t *testing.T) {
	c := startCluster(t, Config{Nodes: 2, CPUs: 1})
	srun := startSleepStep(t, c)
	if err := waitFor(func() bool { return len(sleepNodes(c)) == 2 }); err != nil {
		t.Fatalf("the step's sleeps: %v (leftovers: %v)", err, c.Leftovers())
	}
	if got := sleepNodes(c); !slices.Equal(got, []string{"node1", "node2"}) {
		t.Errorf("sleeps on %q, want node1 and node2", got)
	}
	jobID := strings.TrimSpace(run(t, c, "squeue", "--noheader", "--format=%i"))
	run(t, c, "scancel", jobID)
	if err := srun.Wait(); err == nil {
		t.Errorf("srun of a cancelled step succeeded")
	}
	if left := c.WaitNoLeftovers(patience); len(left) > 0 {
		t.Errorf("left running after scancel: %v", left)
	}
}

// startSleepStep starts a two-node step of long sleeps in the background.
func startSleepStep(t *testing.T, c *Cluster) interface{ Wait() error } {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	t.Cleanup(cancel)
	srun := c.Command(ctx, "srun", "-N2", "-n2", "sleep", "300")
	if err := srun.Start(); err != nil {
		t.Fatal(err)
	}
	return srun
}

// sleepNodes are the nodes the leftover sleeps run on, sorted.
func sleepNodes(c *Cluster) []string {
	var nodes []string
	for _, p := range c.Leftovers() {
		// A process between fork and exec, or ending, has no command line.
		if argv := strings.Fields(p.Cmdline); len(argv) > 0 && filepath.Base(argv[0]) == "sleep" {
			nodes = append(nodes, p.Node)
		}
	}
	slices.Sort(nodes)
	return nodes
}

func waitFor(cond func() bool) error {
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", patience)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// Close with a step still running reports and kills it, and afterwards no
// process on the host carries the cluster's SLURM_CONF (daemons, munged,
// slurmstepd and tasks all do) or runs in its PID namespace.
func TestCloseLeavesNothingOnTheHost(t *testing.T) {
	c := mustStart(t, Config{Nodes: 2, CPUs: 1})
	srun := startSleepStep(t, c)
	if err := waitFor(func() bool { return len(sleepNodes(c)) == 2 }); err != nil {
		t.Fatalf("the step's sleeps: %v", err)
	}
	marker := []byte(c.Env()[0] + "\x00")
	if hostProcsWith(marker) == 0 {
		t.Fatalf("no process carries %q while the cluster runs: the check below would prove nothing", marker)
	}
	err := c.Close()
	if err == nil || !strings.Contains(err.Error(), "sleep 300") {
		t.Errorf("Close with a running step: %v, want it to report sleep 300 as left running", err)
	}
	srun.Wait()
	if n := hostProcsWith(marker); n > 0 {
		t.Errorf("%d processes with %q still running after Close", n, marker)
	}
	if left := c.inNamespace(); len(left) > 0 {
		t.Errorf("still in the cluster's PID namespace after Close: %v", left)
	}
}

// hostProcsWith counts the live processes whose environment holds kv.
func hostProcsWith(kv []byte) int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(append([]byte{0}, env...), append([]byte{0}, kv...)) {
			if state, _, ok := parseStatFile(e.Name()); ok && state != 'Z' {
				n++
			}
		}
	}
	return n
}

func parseStatFile(pid string) (byte, int, bool) {
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return 0, 0, false
	}
	return parseStat(stat)
}

// A daemon that dies stops the cluster, and Close says so.
func TestCloseReportsADeadDaemon(t *testing.T) {
	c := mustStart(t, Config{Nodes: 1})
	for _, p := range c.inNamespace() {
		if p.exe == c.bins.slurmctld && p.ppid == c.InitPID() {
			if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
	}
	select {
	case <-c.exited:
	case <-time.After(patience):
		t.Fatal("the cluster still runs after slurmctld was killed")
	}
	if err := c.Close(); err == nil || !strings.Contains(err.Error(), "slurmctld") {
		t.Errorf("Close after slurmctld died: %v, want an error naming it", err)
	}
}
